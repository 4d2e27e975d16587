"""GRPO training against an arl-envs id: SFT warm start, group rollouts, clipped update, evaluation, logs, plot.

Entry points:

* :func:`train` (``arl-envs train --env ID --model tiny --steps N --output DIR``): writes ``DIR/metrics.jsonl``
  (one line per GRPO step), ``DIR/sft.jsonl``, ``DIR/samples.jsonl``, ``DIR/summary.json``, ``DIR/config.json``
  and ``DIR/curves.png``.
* :func:`sft_vs_grpo`: GRPO against more SFT at equal compute from one SFT checkpoint.
* :func:`demo_run`: that comparison on a one-step arithmetic task sized for two CPU cores, from a shipped SFT
  checkpoint (:func:`build_demo_checkpoint`) that imitated an imperfect demonstrator (used by ``arl-envs demo``).

This module holds :func:`train` and its loop over GRPO steps, and re-exports the names of the modules it is built
from, so ``from arl_baselines.grpo.train import ...`` reaches all of them:

* :mod:`.trainer`: :class:`Trainer` (SFT phase, GRPO step and update), the learning-rate schedules, batching.
* :mod:`.checkpoints`: SFT checkpoint files, the shipped ones, the warm start; snapshots of the SFT state.
* :mod:`.reporting`: held-out evaluations, ``metrics.jsonl`` lines (:data:`METRIC_KEYS`), samples, the summary.
* :mod:`.plots`: ``curves.png``.
* :mod:`.run_args`: the argument checks (:func:`check_train_args`) and the run directory's life.
* :mod:`.experiments`: :func:`sft_vs_grpo`, :func:`demo_run`, the SFT checkpoint builders.
"""

from __future__ import annotations

import os
import time
from typing import Any

from arl_baselines.grpo.checkpoints import (
    ARITHMETIC_SFT_CHECKPOINT,
    CHECKPOINT_ENV_ALIASES,
    CODE_SFT_CHECKPOINT,
    COUNTDOWN_SFT_CHECKPOINT,
    DEMO_SFT_CHECKPOINT,
    SFT_CHECKPOINT_FORMAT,
    SFT_CHECKPOINT_KEYS,
    SHIPPED_SFT_CHECKPOINTS,
    SHIPPED_SFT_SEED,
    SFTCheckpoints,
    _warm_start,
    read_sft_checkpoint,
    sft_checkpoint_spec,
)
from arl_baselines.grpo.config import EVAL_SEED_OFFSET, TINY_SIZES, TRAIN_SEED_RANGE, GRPOConfig
from arl_baselines.grpo.experiments import (
    DEMO_ENV_ID,
    DEMO_ENV_KWARGS,
    DEMO_SETTINGS,
    _trainer,
    build_demo_checkpoint,
    build_sft_checkpoint,
    demo_run,
    sft_vs_grpo,
)
from arl_baselines.grpo.plots import SMOOTH_FRACTION, plot_curves
from arl_baselines.grpo.reporting import METRIC_KEYS, SAMPLE_GROUPS, RunReport, step_metrics
from arl_baselines.grpo.run_args import (
    PARTIAL_MARK,
    PREVIOUS_DIR,
    RUN_FILES,
    RUN_OUTPUTS,
    _config,
    _mark_interrupted,
    check_run_dir,
    check_train_args,
    finish_run_dir,
    start_run_dir,
)
from arl_baselines.grpo.trainer import (
    ZERO_SPREAD_WARN_STEPS,
    Trainer,
    _bar,
    grpo_lr_at,
    pad_batch,
    pad_batch_floats,
    sft_lr_at,
)

__all__ = [
    "ARITHMETIC_SFT_CHECKPOINT",
    "CHECKPOINT_ENV_ALIASES",
    "CODE_SFT_CHECKPOINT",
    "COUNTDOWN_SFT_CHECKPOINT",
    "DEMO_ENV_ID",
    "DEMO_ENV_KWARGS",
    "DEMO_SETTINGS",
    "DEMO_SFT_CHECKPOINT",
    "EVAL_SEED_OFFSET",
    "METRIC_KEYS",
    "PARTIAL_MARK",
    "PREVIOUS_DIR",
    "RUN_FILES",
    "RUN_OUTPUTS",
    "SAMPLE_GROUPS",
    "SFT_CHECKPOINT_FORMAT",
    "SFT_CHECKPOINT_KEYS",
    "SHIPPED_SFT_CHECKPOINTS",
    "SHIPPED_SFT_SEED",
    "SMOOTH_FRACTION",
    "TINY_SIZES",
    "TRAIN_SEED_RANGE",
    "ZERO_SPREAD_WARN_STEPS",
    "GRPOConfig",
    "RunReport",
    "SFTCheckpoints",
    "Trainer",
    "_config",
    "_trainer",
    "_warm_start",
    "build_demo_checkpoint",
    "build_sft_checkpoint",
    "check_run_dir",
    "check_train_args",
    "demo_run",
    "finish_run_dir",
    "grpo_lr_at",
    "pad_batch",
    "pad_batch_floats",
    "plot_curves",
    "read_sft_checkpoint",
    "sft_checkpoint_spec",
    "sft_lr_at",
    "sft_vs_grpo",
    "start_run_dir",
    "step_metrics",
    "train",
]


def train(
    env_id: str,
    model: str = "tiny",
    steps: int | None = None,
    output: str | os.PathLike[str] = "runs/grpo",
    *,
    sft_checkpoint: str | os.PathLike[str] | None = "auto",
    overwrite: bool = False,
    **cfg: Any,
) -> dict[str, Any]:
    """Train a policy with GRPO on ``env_id`` (after an optional SFT warm start) and evaluate it.

    Args:
        env_id: Any registered arl-envs id, e.g. ``arl/math.arithmetic-v1``.
        model: ``tiny`` / ``tiny-S`` / ``tiny-M`` / ``tiny-L``, a local checkpoint directory, a ``.gguf`` file or
            ``smollm2``.
        steps: GRPO steps (0: SFT and evaluation only). None: the env's recommended number
            (:func:`~arl_baselines.grpo.config.recommended_steps`: 100; 40 for code.functions with a tiny model).
        output: Run directory (created; one that holds an earlier run's files is refused unless ``overwrite``;
            :func:`check_run_dir` says which paths are refused). It holds :data:`PARTIAL_MARK` until the run ends.
        sft_checkpoint: Where the SFT warm start comes from when the settings have one (``sft_steps > 0``):
            ``"auto"`` (default): the shipped checkpoint of the env's tiny defaults (:data:`SHIPPED_SFT_CHECKPOINTS`:
            arithmetic, countdown, code.functions) when its identity (env id and kwargs, model, SFT settings, see
            :func:`read_sft_checkpoint`) equals this run's and the run's seed is :data:`SHIPPED_SFT_SEED`, loaded
            weights only instead of running the SFT (:func:`_warm_start`); else (another model, seed or SFT
            setting, an env without one) the SFT runs here, and the reason is recorded as
            ``sft_checkpoint_skipped``. ``"none"`` or None: always run the SFT (keywords in any case). A path: load that
            :meth:`Trainer.save_sft_checkpoint` file (weights only; it must match the run).
        overwrite: Move the files of an earlier run in ``output`` into ``output/previous/`` first (otherwise a
            FileExistsError, before anything is written); the new run's files are never mixed with the old ones.
        **cfg: Fields of :class:`~arl_baselines.grpo.config.GRPOConfig` (e.g. ``sft_steps=200``, ``group_size=8``,
            ``env_kwargs={"difficulty": 1}``); they override the env's recommended settings
            (:func:`~arl_baselines.grpo.config.recommended_settings`: an SFT warm start for tiny models, token
            budgets that fit the env), which ``env_defaults=False`` turns off. ``save_model=True`` also writes
            the final policy to ``output/model``.

    Returns:
        The summary (``summary.json``): rewards first/last fifth of steps, evaluations ``before`` (untrained),
        ``after_sft`` and ``final`` on held-out seeds, tokens generated, wall time, ``sft_source`` (``"trained"``,
        ``"shipped"`` or ``"file"``) and ``sft_checkpoint`` (path, sha256) when one was loaded.

    Raises:
        TypeError: Unknown setting name.
        ValueError: Invalid setting value or negative ``steps``; a ``sft_checkpoint`` path that is unreadable or
            does not match the run; an ``output`` in the installed package or a pseudo-filesystem.
        FileNotFoundError: A ``sft_checkpoint`` path with no file.
        FileExistsError: ``output`` holds an earlier run (and not ``overwrite``), is a file or a dangling link.
        PermissionError: ``output`` cannot be created.
    """
    save_model = bool(cfg.pop("save_model", False))
    config, steps, sft_checkpoint = check_train_args(env_id, model, steps, output, sft_checkpoint=sft_checkpoint,
                                                     overwrite=overwrite, **cfg)
    start_run_dir(output, overwrite=overwrite)
    try:
        tr = Trainer(env_id, model, config, output)
    except BaseException as exc:
        _mark_interrupted(output, exc)
        raise
    try:
        summary = _train(tr, steps, sft_checkpoint, save_model)
    except BaseException as exc:
        tr.engine.close()  # envs, sandboxes and the rollout's thread pool (finish() closes them on success)
        _mark_interrupted(output, exc)
        raise
    finish_run_dir(output)
    return summary


def _train(tr: Trainer, steps: int, sft_checkpoint: str | os.PathLike[str] | None, save_model: bool) -> dict[str, Any]:
    """:func:`train`'s run once its :class:`Trainer` exists."""
    config = tr.cfg
    tr.evaluate("before")
    t = time.perf_counter()
    if config.sft_steps > 0 or sft_checkpoint not in (None, "auto"):
        if not _warm_start(tr, sft_checkpoint):
            tr.sft()
        tr.timings["sft_s"] = time.perf_counter() - t
        tr.evaluate("after_sft")
    tr.setup_grpo()
    t = time.perf_counter()
    bar = _bar(steps, "GRPO", config.progress)
    for _ in range(steps):
        if config.time_limit_s is not None and time.perf_counter() - tr.t0 > config.time_limit_s:
            tr.stopped_early = True
            break
        nxt = tr.step + 1
        row = tr.grpo_step(evaluate=bool(config.eval_every) and nxt % config.eval_every == 0 and nxt < steps)
        bar.set_postfix(reward=f"{row['reward_mean']:.2f}", success=f"{row['success']:.2f}")
        bar.update(1)
    bar.close()
    tr.timings["grpo_s"] = time.perf_counter() - t
    if steps > 0:
        tr.evaluate("final")
    if save_model:
        tr.policy.save(tr.out / "model")
    return tr.finish()
