"""Experiments built on the :class:`~arl_baselines.grpo.trainer.Trainer`: GRPO against more SFT at equal compute
(:func:`sft_vs_grpo`), the demo's comparison on a one-step arithmetic task sized for two CPU cores (:func:`demo_run`,
used by ``arl-envs demo``) from a shipped SFT checkpoint that imitated an imperfect demonstrator
(:func:`build_demo_checkpoint`), and the builder of the shipped SFT checkpoints (:func:`build_sft_checkpoint`).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from arl_baselines.grpo.checkpoints import DEMO_SFT_CHECKPOINT, _check_sft_checkpoint
from arl_baselines.grpo.plots import plot_curves
from arl_baselines.grpo.run_args import _config, check_run_dir, finish_run_dir, start_run_dir
from arl_baselines.grpo.trainer import Trainer

#: The demo's task: one-step integer arithmetic with single-digit operands (+, -, *; 243 distinct problems).
DEMO_ENV_ID = "arl/math.arithmetic-v1"
DEMO_ENV_KWARGS: dict[str, Any] = {"difficulty": 1, "kinds": ["integer"]}


def _trainer(env_id: str, model: str, output: str | os.PathLike[str], cfg: dict[str, Any]) -> Trainer:
    """A :class:`~arl_baselines.grpo.trainer.Trainer` from keyword settings laid over the env's recommended ones
    (unless ``env_defaults=False``)."""
    return Trainer(env_id, model, _config(env_id, model, cfg), output)


def sft_vs_grpo(
    env_id: str,
    model: str = "tiny",
    output: str | os.PathLike[str] = "runs/sft-vs-grpo",
    *,
    grpo_steps: int = 30,
    sft_checkpoint: str | os.PathLike[str] | None = None,
    save_sft_checkpoint: str | os.PathLike[str] | None = None,
    **cfg: Any,
) -> dict[str, Any]:
    """GRPO against more SFT at equal compute, from the same SFT checkpoint.

    SFT for ``sft_steps`` on ``sft_episodes`` expert demonstrations; then (a) GRPO for ``grpo_steps`` on fresh
    training seeds, and (b) from the SAME checkpoint, more SFT on the same demonstrations for as many seconds as
    the GRPO phase took (equal wall-clock compute in the same process). Both are evaluated on the held-out seeds.

    Args:
        env_id: Env id.
        model: Policy spec.
        output: Run directory (``metrics.jsonl``/``curves.png`` of the GRPO branch; ``comparison.json``). An
            earlier run's files there are moved into ``output/previous/`` first;
            :data:`~arl_baselines.grpo.run_args.PARTIAL_MARK` marks the directory until ``comparison.json`` is
            written.
        grpo_steps: GRPO steps of branch (a).
        sft_checkpoint: Start from this :meth:`~arl_baselines.grpo.trainer.Trainer.save_sft_checkpoint` file
            instead of running the SFT (its settings must match the run's, checked before the run directory is
            touched; the untrained ``before`` evaluation is skipped; its path and sha256 are recorded as
            ``sft_checkpoint``).
        save_sft_checkpoint: Write the SFT checkpoint here after the SFT (a file :func:`sft_vs_grpo` can start from).
        **cfg: :class:`~arl_baselines.grpo.config.GRPOConfig` fields (over the env's recommended settings).

    Raises:
        ValueError: ``sft_steps`` is 0; ``sft_checkpoint`` is unreadable or does not match the settings (see
            :func:`~arl_baselines.grpo.checkpoints.read_sft_checkpoint`); both ``sft_checkpoint`` and
            ``save_sft_checkpoint`` are given.
        FileNotFoundError: ``sft_checkpoint`` does not exist.

    Returns:
        ``after_sft``, ``sft_only`` and ``sft_grpo`` held-out evaluations, ``grpo_s``, ``sft_extra_steps``,
        ``lift`` (success of (a) minus (b)), and the GRPO run's summary under ``grpo``.
    """
    config = _config(env_id, model, cfg)
    if config.sft_steps <= 0:
        raise ValueError("sft_vs_grpo compares two continuations of an SFT checkpoint: it needs sft_steps > 0")
    source: dict[str, Any] | None = None
    if sft_checkpoint is not None:
        if save_sft_checkpoint is not None:
            raise ValueError("give sft_checkpoint (start from a file) or save_sft_checkpoint (write one), not both")
        source = _check_sft_checkpoint(sft_checkpoint, env_id, model, config)
    check_run_dir(output)
    start_run_dir(output, overwrite=True)
    tr = Trainer(env_id, model, config, output)
    try:
        if sft_checkpoint is not None:
            tr.load_sft_checkpoint(sft_checkpoint)
        else:
            tr.evaluate("before")
            tr.sft()
            if save_sft_checkpoint is not None:
                tr.save_sft_checkpoint(save_sft_checkpoint)
    except BaseException:
        tr.engine.close()
        raise
    tr.evaluate("after_sft")
    checkpoint = tr.sft_snapshot()
    tr.setup_grpo()
    t = time.perf_counter()
    for _ in range(grpo_steps):
        tr.grpo_step()
    grpo_s = time.perf_counter() - t
    tr.timings["grpo_s"] = grpo_s
    sft_grpo = tr.evaluate("final")
    grpo_summary = tr.summary()
    # branch (b): the same checkpoint, SFT optimiser and data stream; SFT for the GRPO phase's wall time
    tr.restore_sft_snapshot(checkpoint)
    extra = tr.sft(steps=10**9, time_budget_s=grpo_s)
    sft_only = tr.evaluate("sft_only")
    tr.engine.close()
    # the GRPO branch's summary and curves, with the SFT-only branch's evaluation and SFT loss beside them
    (tr.out / "summary.json").write_text(json.dumps(grpo_summary, indent=2, default=str))
    plot_curves(tr.out)
    res = {
        "env_id": env_id,
        "seed": config.seed,
        "demonstrator_success": tr.demonstrator_success,
        "sft_checkpoint": source,
        "after_sft": tr.evals["after_sft"],
        "sft_only": sft_only,
        "sft_grpo": sft_grpo,
        "grpo_s": grpo_s,
        "grpo_steps": grpo_steps,
        "sft_extra_steps": len(extra),
        "lift": sft_grpo["success"] - sft_only["success"],
        "output": str(tr.out),
        "grpo": grpo_summary,
    }
    (tr.out / "comparison.json").write_text(json.dumps(res, indent=2, default=str))
    finish_run_dir(tr.out)
    return res


#: Settings of :func:`demo_run` (sized for 2 CPU cores; measured in benchmarks/RESULTS.md). The SFT
#: part (``sft_*``) is the shipped checkpoint's: a demonstrator that is wrong on 30% of its 2048 demonstrations
#: (``sft_error_rate``), imitated for 3000 constant-lr steps, up to the plateau imitation reaches (held-out
#: success 0.65-0.71 over evaluation seeds, at the demonstrator's 0.705: imitation copies the wrong answers with the
#: right ones). GRPO sees the reward, so it can leave the demonstrator's mistakes behind; more SFT cannot.
DEMO_SETTINGS: dict[str, Any] = {
    "grpo_steps": 40,
    "env_kwargs": DEMO_ENV_KWARGS,
    "sft_steps": 3000,
    "sft_episodes": 2048,
    "sft_error_rate": 0.3,
    "sft_lr": 3e-3,
    "sft_schedule": "constant",
    "num_groups": 16,
    "group_size": 8,
    "lr": 1e-3,  # at or below the SFT's (constant) lr
    "warmup_steps": 3,
    "max_new_tokens": 40,
    "max_seq_len": 256,  # prompt + a malformed turn + its ~125-token error observation + a retry (~205 tokens)
    "eval_tasks": 64,
    "eval_samples": 4,
    "log_samples": 0,
}


def demo_run(
    output: str | os.PathLike[str] = "runs/demo-grpo",
    *,
    progress: bool = True,
    sft_checkpoint: str | os.PathLike[str] | None = DEMO_SFT_CHECKPOINT,
    **overrides: Any,
) -> dict[str, Any]:
    """The demo's GRPO part: from an SFT checkpoint that imitated an imperfect demonstrator to its plateau, GRPO
    vs more SFT at equal compute (:func:`sft_vs_grpo`).

    Args:
        output: Run directory.
        progress: Show progress bars.
        sft_checkpoint: The SFT checkpoint both branches continue from (default: the shipped one, built by
            :func:`build_demo_checkpoint` with :data:`DEMO_SETTINGS`); None: run the SFT here first
            (``sft_steps`` steps, ~150 s on 2 cores at the demo's settings).
        **overrides: Settings overriding the demo's (``seed``, ``grpo_steps``, any
            :class:`~arl_baselines.grpo.config.GRPOConfig` field; SFT fields must match the checkpoint's).

    Returns:
        :func:`sft_vs_grpo`'s result plus ``success_sft_only`` / ``success_sft_grpo`` (held-out, sampled at
        temperature 1) and ``grpo_wins`` (``lift > 0``).

    Raises:
        FileNotFoundError: ``sft_checkpoint`` is missing.
        ValueError: ``overrides`` change an SFT setting the checkpoint was built with.
    """
    settings: dict[str, Any] = {**DEMO_SETTINGS, **overrides}
    steps = int(settings.pop("grpo_steps"))
    try:
        r = sft_vs_grpo(
            DEMO_ENV_ID, "tiny", output, grpo_steps=steps, progress=progress, sft_checkpoint=sft_checkpoint, **settings
        )
    except ValueError as exc:
        if sft_checkpoint is None or "does not match" not in str(exc):
            raise
        raise ValueError(f"{exc}. demo_run(sft_checkpoint=None, ...) runs the SFT with these settings instead") from exc
    r["success_sft_only"], r["success_sft_grpo"] = r["sft_only"]["success"], r["sft_grpo"]["success"]
    r["grpo_wins"] = bool(r["lift"] > 0)
    # the keys of the previous demo (the GRPO branch's reward curve and held-out success around it)
    g = r["grpo"]
    r["reward_before"], r["reward_after"] = g["reward_first"], g["reward_last"]
    r["success_before_grpo"], r["success_after_grpo"] = r["after_sft"]["success"], r["sft_grpo"]["success"]
    r["curve_rises"] = bool(g["reward_last"] is not None and g["reward_last"] > g["reward_first"])
    r["steps"] = g["steps"]
    return r


def build_sft_checkpoint(
    env_id: str,
    path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    model: str = "tiny",
    eval_every: int = 500,
    **settings: Any,
) -> dict[str, Any]:
    """SFT on ``env_id``'s expert (``settings`` over the env's recommended ones, as
    :func:`~arl_baselines.grpo.train.train`), evaluated on the held-out seeds every ``eval_every`` steps, saved to
    ``path`` (:meth:`~arl_baselines.grpo.trainer.Trainer.save_sft_checkpoint`).

    Args:
        env_id: A registered id.
        path: Checkpoint file to write.
        output: Run directory (``sft.jsonl``, ``sft_curve.json``).
        model: The model spec.
        eval_every: SFT steps between held-out evaluations (0: one at the end).
        **settings: :class:`~arl_baselines.grpo.config.GRPOConfig` fields.

    Returns:
        ``path``, ``demonstrator_success``, ``curve`` (rows ``sft_steps``, ``success``, ``elapsed_s``), ``sft_s``.

    Raises:
        ValueError: Invalid settings (from :class:`~arl_baselines.grpo.config.GRPOConfig`), or no SFT steps to run.
    """
    if _config(env_id, model, settings).sft_steps < 1:
        raise ValueError(f"build_sft_checkpoint needs sft_steps >= 1 (the settings for {env_id} with {model} have none)")
    tr = _trainer(env_id, model, output, settings)
    try:
        t, done, curve = time.perf_counter(), 0, []
        total = tr.cfg.sft_steps
        while done < total:
            n = min(eval_every, total - done) if eval_every > 0 else total
            tr.sft(steps=n)
            done += n
            ev = tr.evaluate(f"sft_{done}")
            curve.append({"sft_steps": done, "success": ev["success"], "elapsed_s": round(time.perf_counter() - t, 1)})
        saved = tr.save_sft_checkpoint(path)
    finally:
        tr.engine.close()
    res = {"path": str(saved), "demonstrator_success": tr.demonstrator_success, "curve": curve, "sft_s": curve[-1]["elapsed_s"]}
    (tr.out / "sft_curve.json").write_text(json.dumps(res, indent=2))
    return res


def build_demo_checkpoint(
    path: str | os.PathLike[str] = DEMO_SFT_CHECKPOINT,
    output: str | os.PathLike[str] = "runs/demo-sft",
    *,
    eval_every: int = 500,
    progress: bool = True,
    **overrides: Any,
) -> dict[str, Any]:
    """Build the demo's SFT checkpoint: :data:`DEMO_SETTINGS`' SFT on the imperfect demonstrator (tiny model,
    seed 0 unless overridden), evaluated on the held-out seeds every ``eval_every`` steps, saved to ``path``.

    ``python -m arl_baselines.grpo.demo_checkpoint`` runs it (150 s on 2 CPU cores at the defaults).

    Args:
        path: Where to write the checkpoint (default: the shipped file).
        output: Run directory (``sft.jsonl``, ``sft_curve.json``).
        eval_every: SFT steps between held-out evaluations (the curve shows the plateau).
        progress: Show progress bars.
        **overrides: :class:`~arl_baselines.grpo.config.GRPOConfig` fields over the demo's.

    Returns:
        As :func:`build_sft_checkpoint`.
    """
    settings: dict[str, Any] = {**DEMO_SETTINGS, "progress": progress, **overrides}
    settings.pop("grpo_steps")
    return build_sft_checkpoint(DEMO_ENV_ID, path, output, eval_every=eval_every, **settings)
