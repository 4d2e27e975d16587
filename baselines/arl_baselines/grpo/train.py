"""GRPO training against an arl-envs id: SFT warm start, group rollouts, clipped update, evaluation, logs, plot.

Entry points:

* :func:`train` (``arl-envs train --env ID --model tiny --steps N --output DIR``): writes ``DIR/metrics.jsonl``
  (one line per GRPO step), ``DIR/sft.jsonl``, ``DIR/samples.jsonl``, ``DIR/summary.json``, ``DIR/config.json``
  and ``DIR/curves.png``.
* :func:`sft_vs_grpo`: GRPO against more SFT at equal compute from one SFT checkpoint.
* :func:`demo_run`: that comparison on a one-step arithmetic task sized for two CPU cores, from a shipped SFT
  checkpoint (:func:`build_demo_checkpoint`) that imitated an imperfect demonstrator (used by ``arl-envs demo``).

One GRPO step: sample ``num_groups`` training seeds; play ``group_size`` episodes of each
(:class:`~arl_baselines.grpo.rollout.RolloutEngine`); group-relative advantages; drop zero-spread groups and masked
episodes; one (or ``num_iterations``) AdamW step(s) on the clipped loss (:mod:`arl_baselines.grpo.loss`), accumulated
over micro-batches.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import math
import os
import pickle
import random
import shutil
import sys
import time
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arl_baselines.grpo.branching import Brancher
from arl_baselines.grpo.config import (
    EVAL_SEED_OFFSET,
    TINY_SIZES,
    TRAIN_SEED_RANGE,
    GRPOConfig,
    recommended_settings,
    recommended_steps,
)
from arl_baselines.grpo.diversity import diversity_rewards
from arl_baselines.grpo.loss import group_advantages, grpo_loss, step_group_advantages
from arl_baselines.grpo.policy import Policy, load_policy, token_logprobs
from arl_baselines.grpo.rollout import Episode, RolloutEngine, evaluate, expert_episodes

#: Keys every metrics.jsonl line has (tests check them; the plot reads some of them).
METRIC_KEYS = (
    "step",
    "reward_mean",
    "reward_std",
    "success",
    "frac_zero_spread",
    "adv_mean",
    "adv_std",
    "adv_abs_mean",
    "diversity_mean",
    "entropy",
    "kl",
    "clip_low",
    "clip_high",
    "clip_region",
    "ratio_mean",
    "grad_norm",
    "loss",
    "completion_len",
    "turns",
    "invalid_action_rate",
    "env_token_frac",
    "truncated_turn_frac",
    "context_truncated_frac",
    "env_errors",
    "masked_episodes",
    "trained_episodes",
    "env_steps",
    "branch_episodes",
    "trained_tokens",
    "sampler_logp_gap",
    "rollout_s",
    "update_s",
    "tokens_per_s",
    "lr",
    "elapsed_s",
)
#: Consecutive all-zero-spread GRPO steps after which :class:`Trainer` warns that nothing is being learned.
ZERO_SPREAD_WARN_STEPS = 5
#: Episodes of each step written to samples.jsonl are the first of this many groups.
SAMPLE_GROUPS = 2
#: The reward curve is also drawn as a moving average over 1/SMOOTH_FRACTION of the steps.
SMOOTH_FRACTION = 10
#: Version of the :meth:`Trainer.save_sft_checkpoint` file layout.
SFT_CHECKPOINT_FORMAT = 1
#: Settings an SFT checkpoint must share with the run that loads it (they shape the data, the schedule or the SFT
#: optimiser, whose state the checkpoint brings back); the resolved ``use_instructions`` is checked too.
SFT_CHECKPOINT_KEYS = (
    "sft_steps",
    "sft_episodes",
    "sft_error_rate",
    "sft_lr",
    "sft_schedule",
    "sft_min_lr_ratio",
    "sft_batch_size",
    "max_seq_len",
    "weight_decay",
    "adam_betas",
    "max_grad_norm",
)


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def _seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pad_batch(episodes: list[Episode], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad episodes into ``(ids, mask)`` tensors of shape ``(B, T_max)`` (mask 0 on padding)."""
    T = max(len(e.ids) for e in episodes)
    ids = torch.full((len(episodes), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(episodes), T), dtype=torch.float32)
    for b, e in enumerate(episodes):
        ids[b, : len(e.ids)] = torch.tensor(e.ids, dtype=torch.long)
        mask[b, : len(e.mask)] = torch.tensor(e.mask, dtype=torch.float32)
    return ids.to(device), mask.to(device)


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class Trainer:
    """Holds the policy, optimiser, rollout engine and logs of one run (see :func:`train`)."""

    def __init__(self, env_id: str, model: str, cfg: GRPOConfig, output: str | os.PathLike[str]) -> None:
        self.env_id, self.cfg, self.model_spec = env_id, cfg, model
        self.out = Path(output)
        self.out.mkdir(parents=True, exist_ok=True)
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        _seed_all(cfg.seed)
        self.device = _device(cfg.device)
        dtype = torch.bfloat16 if cfg.dtype == "bfloat16" else torch.float32
        if dtype == torch.bfloat16 and self.device.type != "cuda":
            raise ValueError("dtype='bfloat16' needs CUDA; use float32 on CPU")
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
        self.policy: Policy = load_policy(model, device=self.device, dtype=dtype, seed=cfg.seed)
        use_instr = (not self.policy.is_tiny) if cfg.use_instructions is None else cfg.use_instructions
        self.engine = RolloutEngine(
            self.policy,
            env_id,
            env_kwargs=cfg.env_kwargs,
            batch_size=cfg.batch_episodes,
            max_new_tokens=cfg.max_new_tokens,
            max_seq_len=cfg.max_seq_len,
            use_instructions=use_instr,
            compile=cfg.compile,
            env_threads=cfg.env_threads,
        )
        self.gen = torch.Generator(device=self.device).manual_seed(cfg.seed)
        self.brancher = Brancher(self.engine, cfg) if cfg.branch_k else None
        self.task_rng = np.random.default_rng(cfg.seed)
        self.eval_seeds = [EVAL_SEED_OFFSET + i for i in range(cfg.eval_tasks)]
        self.ref_model: Any = None
        self.step = 0
        self.t0 = time.perf_counter()
        self.history: list[dict[str, Any]] = []
        self.evals: dict[str, dict[str, float]] = {}
        self.tokens_generated = 0
        self.stopped_early = False
        self.timings: dict[str, float] = {}
        self.sft_examples = 0
        self._zero_run = 0
        self._zero_warned = False
        self._sft_data: list[Episode] | None = None
        #: Success rate of the SFT demonstrations themselves (below 1 with ``sft_error_rate`` > 0); None before SFT.
        self.demonstrator_success: float | None = None
        self._sft_opt: Any = None
        self._sft_rng = random.Random(cfg.seed)
        self._sft_step = 0
        self._sft_seeds: list[int] = []
        self._demonstrator_seed = ''
        #: The loaded SFT checkpoint (``path``, ``sha256``, ``sft_steps_done``, ``weights_only``), else None.
        self.sft_checkpoint: dict[str, Any] | None = None
        #: Why :func:`train`'s ``sft_checkpoint="auto"`` found no usable shipped checkpoint (None: it found one, or
        #: was not asked).
        self.sft_checkpoint_skipped: str | None = None
        self.opt: Any = None
        (self.out / "config.json").write_text(
            json.dumps({"env_id": env_id, "model": model, **cfg.to_dict()}, indent=2, default=str)
        )
        for name in ("metrics.jsonl", "sft.jsonl", "samples.jsonl"):
            (self.out / name).write_text("")

    @property
    def sft_source(self) -> str | None:
        """Where the SFT weights came from: ``"shipped"`` (a file of :data:`SHIPPED_SFT_CHECKPOINTS`), ``"file"``
        (another :meth:`load_sft_checkpoint` file), ``"trained"`` (:meth:`sft` in this run), None (no SFT)."""
        if self.sft_checkpoint is not None:
            shipped = {str(p) for p in SHIPPED_SFT_CHECKPOINTS.values()}
            return "shipped" if str(Path(self.sft_checkpoint["path"]).resolve()) in shipped else "file"
        return "trained" if self._sft_step > 0 else None

    # ----------------------------------------------------------------- evaluation
    def evaluate(self, tag: str) -> dict[str, float]:
        """Evaluate on the held-out seeds; stored under ``tag`` in the summary."""
        self.policy.model.eval()
        t = time.perf_counter()
        res = evaluate(
            self.engine,
            self.eval_seeds,
            samples=self.cfg.eval_samples,
            temperature=self.cfg.eval_temperature,
            generator=self.gen,
        )
        res["eval_s"] = time.perf_counter() - t
        self.evals[tag] = res
        return res

    # ----------------------------------------------------------------- SFT
    def prepare_sft(self, seeds: list[int] | None = None, demonstrator_seed: str | None = None) -> None:
        """Collect the demonstrations and build the SFT optimiser, once; :meth:`sft` and
        :meth:`load_sft_checkpoint` call it.

        Args:
            seeds: Reset seeds of the demonstrations (default: ``cfg.sft_episodes`` seeds drawn from the run's
                task stream).
            demonstrator_seed: Seeds the imperfect demonstrator's decoys (``cfg.sft_error_rate``; default
                ``"{cfg.seed}-demonstrator"``).

        Raises:
            RuntimeError: No usable demonstration (all empty or longer than ``max_seq_len``); or this run loaded
                a checkpoint's weights only (``load_sft_checkpoint(demonstrations=False)``).
        """
        cfg = self.cfg
        if self._sft_data is not None:
            return
        if self.sft_checkpoint is not None and self.sft_checkpoint["weights_only"]:
            raise RuntimeError(
                f"this run loaded only the weights of {self.sft_checkpoint['path']} "
                "(load_sft_checkpoint(demonstrations=False)): SFT cannot continue; load it with demonstrations=True"
            )
        if seeds is None:
            seeds = [int(s) for s in self.task_rng.integers(0, TRAIN_SEED_RANGE, size=cfg.sft_episodes)]
        self._sft_seeds = [int(s) for s in seeds]
        self._demonstrator_seed = f"{cfg.seed}-demonstrator" if demonstrator_seed is None else demonstrator_seed
        demos = expert_episodes(
            self.engine, self._sft_seeds, error_rate=cfg.sft_error_rate, rng=random.Random(self._demonstrator_seed)
        )
        data = [e for e in demos if e.sampled_tokens > 0 and not e.context_truncated]
        if not data:
            raise RuntimeError(
                f"no usable expert episodes for {self.env_id}: all {len(demos)} are empty or longer than "
                f"max_seq_len={cfg.max_seq_len} tokens; raise it (max_seq_len=..., -s max_seq_len=...; and "
                f"max_new_tokens={cfg.max_new_tokens} if the expert's actions are longer)"
            )
        _warn_long_actions(data, cfg.max_new_tokens)
        self._sft_data = data
        self.demonstrator_success = sum(e.success for e in data) / len(data)
        self._sft_opt = torch.optim.AdamW(
            self.policy.model.parameters(), lr=cfg.sft_lr, weight_decay=cfg.weight_decay, betas=cfg.adam_betas
        )
        self._sft_rng = random.Random(cfg.seed)

    def sft(self, steps: int | None = None, *, time_budget_s: float | None = None) -> list[dict[str, float]]:
        """Behaviour cloning on expert trajectories (cross-entropy on the expert's action tokens only).

        Args:
            steps: SFT steps (default ``cfg.sft_steps``). A later call continues the schedule and reuses the same
                expert episodes (the few-demonstration comparison of :func:`sft_vs_grpo` relies on it).
            time_budget_s: Stop after this many seconds of SFT (for equal-compute comparisons); None: no limit.

        Raises:
            RuntimeError: This run loaded a checkpoint's weights only (``load_sft_checkpoint(demonstrations=False)``)
                and ``steps`` > 0; or no usable demonstration (see :meth:`prepare_sft`).
        """
        cfg = self.cfg
        n_steps = cfg.sft_steps if steps is None else int(steps)
        if n_steps <= 0:
            return []
        self.prepare_sft()
        data, opt, rng = self._sft_data, self._sft_opt, self._sft_rng
        assert data is not None and opt is not None
        model = self.policy.model
        model.train()
        logs: list[dict[str, float]] = []
        # a time-budgeted phase counts seconds (elapsed / budget), never a step total it will not reach
        timed = time_budget_s is not None
        bar = _bar(n_steps, "SFT", cfg.progress, seconds=time_budget_s)
        shown_s = 0.0
        t0 = time.perf_counter()
        for _ in range(n_steps):
            if time_budget_s is not None and time.perf_counter() - t0 >= time_budget_s:
                break
            step = self._sft_step
            self._sft_step += 1
            batch = rng.sample(data, min(cfg.sft_batch_size, len(data)))
            lr = sft_lr_at(cfg, step)
            for group in opt.param_groups:
                group["lr"] = lr
            opt.zero_grad(set_to_none=True)
            n_tok = sum(e.sampled_tokens for e in batch)
            total = 0.0
            for mb in _chunks(batch, cfg.micro_batch_size):
                ids, mask = pad_batch(mb, self.policy.pad_id, self.device)
                logp, _ = token_logprobs(model, ids, mask)
                loss = -(logp * mask).sum() / n_tok
                loss.backward()
                total += float(loss.detach())
            gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm))
            opt.step()
            row = {"sft_step": step + 1, "sft_loss": total, "grad_norm": gn, "lr": lr}
            logs.append(row)
            with open(self.out / "sft.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
            bar.set_postfix(loss=f"{total:.3f}", **({"steps": len(logs)} if timed else {}))
            if timed:
                now_s = min(time.perf_counter() - t0, float(time_budget_s))
                bar.update(now_s - shown_s)
                shown_s = now_s
            else:
                bar.update(1)
        bar.close()
        self.sft_examples = len(data)
        return logs

    def sft_snapshot(self) -> dict[str, Any]:
        """Copies of the model weights, the SFT optimiser state, step and data-stream state (after :meth:`sft`),
        for :meth:`restore_sft_snapshot`: two continuations of one SFT checkpoint (:func:`sft_vs_grpo`)."""
        if self._sft_opt is None:
            raise RuntimeError("sft_snapshot needs a finished sft() call")
        return {
            "model": copy.deepcopy(self.policy.model.state_dict()),
            "opt": copy.deepcopy(self._sft_opt.state_dict()),
            "step": self._sft_step,
            "rng": self._sft_rng.getstate(),
        }

    def restore_sft_snapshot(self, snapshot: dict[str, Any]) -> None:
        """Put the model, SFT optimiser, step and data stream back to ``snapshot`` (:meth:`sft_snapshot`)."""
        self.policy.model.load_state_dict(snapshot["model"])
        self._sft_opt.load_state_dict(snapshot["opt"])
        self._sft_step = snapshot["step"]
        self._sft_rng.setstate(snapshot["rng"])

    def save_sft_checkpoint(self, path: str | os.PathLike[str]) -> Path:
        """Write the SFT state (after :meth:`sft`) to ``path`` (a ``torch.save`` file, ~3x the model's float32
        size: weights and the AdamW moments) for :meth:`load_sft_checkpoint`.

        Besides the weights it records what rebuilds the rest exactly: env id and kwargs, model spec, the
        demonstrations' seeds and demonstrator seed, the SFT settings (:data:`SFT_CHECKPOINT_KEYS` and the
        resolved ``use_instructions``), steps done and the demonstrator's success.

        Raises:
            RuntimeError: No :meth:`sft` call yet.
        """
        if self._sft_opt is None or self._sft_step == 0:
            raise RuntimeError("save_sft_checkpoint needs a finished sft() call")
        payload = {
            "format": SFT_CHECKPOINT_FORMAT,
            **_sft_identity(self.env_id, self.model_spec, self.cfg),
            "use_instructions": self.engine.use_instructions,
            "sft_seeds": list(self._sft_seeds),
            "demonstrator_seed": self._demonstrator_seed,
            "demonstrator_success": self.demonstrator_success,
            "sft_steps_done": self._sft_step,
            "model": self.policy.model.state_dict(),
            "opt": self._sft_opt.state_dict(),
        }
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(payload, path)
        return path

    def load_sft_checkpoint(self, path: str | os.PathLike[str], *, demonstrations: bool = True) -> dict[str, Any]:
        """Continue from a :meth:`save_sft_checkpoint` file, before any SFT or GRPO step of this run: by default the
        same demonstrations are rebuilt (seeds and demonstrator seed from the file), then the weights, SFT optimiser
        state (its lr, betas and weight decay included) and SFT step are loaded; the SFT data order is reseeded
        from ``cfg.seed`` (so runs with different seeds continue differently).

        Args:
            path: The checkpoint file.
            demonstrations: False loads the weights only (after the same checks), for a GRPO phase or an
                evaluation: the demonstrations are not rebuilt (on code.functions that is 512 sandboxed episodes,
                ~110 s) and SFT cannot continue (a later :meth:`sft` raises RuntimeError).

        Returns:
            The file's metadata (everything but the tensors) plus its ``sha256``.

        Raises:
            FileNotFoundError: No file at ``path``.
            ValueError: The file is not a readable SFT checkpoint of this format; or its env id, env kwargs,
                model spec, SFT settings (:data:`SFT_CHECKPOINT_KEYS`) or resolved ``use_instructions`` differ
                from this run's; or it holds fewer SFT steps than ``cfg.sft_steps`` (a partial SFT); or its
                weights' names or shapes differ from the model's (another architecture or vocabulary).
            RuntimeError: This run already collected demonstrations (:meth:`sft` / :meth:`prepare_sft` ran),
                loaded a checkpoint, or set up its GRPO phase (:meth:`setup_grpo`: its optimiser and reference
                model would belong to the old weights).
        """
        if self._sft_data is not None:
            raise RuntimeError("load_sft_checkpoint must come before any sft()/prepare_sft() of this run")
        if self.sft_checkpoint is not None:
            raise RuntimeError(f"this run already loaded the checkpoint {self.sft_checkpoint['path']}")
        if self.step > 0 or self.opt is not None:
            raise RuntimeError("load_sft_checkpoint must come before setup_grpo() and any GRPO step of this run")
        ck = read_sft_checkpoint(path, env_id=self.env_id, model=self.model_spec, cfg=self.cfg, device=self.device)
        if ck["use_instructions"] != self.engine.use_instructions:
            raise ValueError(
                f"SFT checkpoint {path} does not match this run (checkpoint, run): "
                f"{{'use_instructions': ({ck['use_instructions']}, {self.engine.use_instructions})}}"
            )
        mine, theirs = self.policy.model.state_dict(), ck["model"]
        odd = sorted(k for k in mine.keys() | theirs.keys()
                     if k not in mine or k not in theirs or mine[k].shape != theirs[k].shape)
        if odd:  # checked before anything is loaded: load_state_dict would copy the tensors that do fit
            raise ValueError(f"SFT checkpoint {path} holds the weights of another architecture than this run's "
                             f"{self.model_spec!r} model ({len(odd)} tensors differ, e.g. {odd[:3]})")
        if demonstrations:
            self.prepare_sft(seeds=ck["sft_seeds"], demonstrator_seed=ck["demonstrator_seed"])
            self._sft_opt.load_state_dict(ck["opt"])
            self._sft_step = int(ck["sft_steps_done"])
            self._sft_rng = random.Random(f"{self.cfg.seed}-sft-continuation")
            self.sft_examples = len(self._sft_data or [])
        else:
            self.demonstrator_success = ck["demonstrator_success"]
        self.policy.model.load_state_dict(ck["model"])
        self.sft_checkpoint = {"path": str(path), "sha256": ck["sha256"], "sft_steps_done": int(ck["sft_steps_done"]),
                               "weights_only": not demonstrations}
        return {k: v for k, v in ck.items() if k not in ("model", "opt")}

    # ----------------------------------------------------------------- GRPO
    def setup_grpo(self) -> None:
        """Optimiser (and frozen reference model when ``beta > 0``) for the GRPO phase."""
        cfg = self.cfg
        model = self.policy.model
        if cfg.optimizer == "sgd":
            self.opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.sgd_momentum, weight_decay=cfg.weight_decay)
        else:
            self.opt = torch.optim.AdamW(
                model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=cfg.adam_betas, eps=cfg.adam_eps
            )
        if cfg.beta > 0:
            self.ref_model = copy.deepcopy(model).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)

    def grpo_step(self, evaluate: bool = False) -> dict[str, Any]:
        """One rollout + update (+ a held-out evaluation when ``evaluate``); returns and logs the metrics line."""
        cfg, model = self.cfg, self.policy.model
        self.step += 1
        if cfg.train_seeds:
            pool = cfg.train_seeds
            picks = self.task_rng.choice(len(pool), size=cfg.num_groups, replace=len(pool) < cfg.num_groups)
            seeds = [int(pool[int(i)]) for i in picks]
        else:
            seeds = [int(s) for s in self.task_rng.integers(0, TRAIN_SEED_RANGE, size=cfg.num_groups)]
        model.eval()
        t = time.perf_counter()
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        run = self.brancher.rollout if self.brancher is not None else self.engine.run
        eps = run(seeds, cfg.group_size, temperature=cfg.temperature, top_k=cfg.top_k, generator=self.gen)
        rollout_s = time.perf_counter() - t
        branches = self.brancher.branches if self.brancher is not None else []
        sampled = sum(e.sampled_tokens for e in eps + branches)
        self.tokens_generated += sampled

        rewards = torch.tensor([e.reward for e in eps], dtype=torch.float32)
        valid = torch.tensor([e.env_error is None for e in eps])
        div = None
        if cfg.diversity == "ngram":  # DARLING: reward x distinctness within the group
            texts = ["\n".join(e.actions) for e in eps]
            rewards, div = diversity_rewards(
                rewards, texts, cfg.group_size, n=cfg.diversity_ngram, threshold=cfg.diversity_threshold
            )
        adv = group_advantages(rewards, cfg.group_size, scale_rewards=cfg.scale_rewards, valid=valid)
        train_adv: Any = adv.advantages
        signal, trained = None, eps
        if self.brancher is not None:  # step groups from K actions at snapshotted states (trunks, then branches)
            trained, train_adv, signal = self.brancher.advantages(eps, adv.advantages, valid)
        elif cfg.advantage_level == "step":
            train_adv, signal = self.step_level_advantages(eps, adv.advantages, valid)
        keep = self.loss_batch(trained, adv.zero_spread, signal)
        # the schedule counts GRPO steps, updated or not (a step whose groups are all zero-spread has no update)
        lr_used = grpo_lr_at(cfg, self.step - 1)
        for group in self.opt.param_groups:
            group["lr"] = lr_used
        masked = sum(not e.trainable(cfg.mask_truncated) for e in eps)
        self._watch_zero_spread(adv.zero_spread)

        t = time.perf_counter()
        model.train()
        sel = train_adv[keep] if isinstance(train_adv, torch.Tensor) else [train_adv[i] for i in keep]
        stats = self._update([trained[i] for i in keep], sel) if keep else _empty_update_stats()
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        update_s = time.perf_counter() - t

        ok = [e for e in eps if e.env_error is None]
        actions = sum(e.turns for e in eps)
        total_tokens = sum(len(e.ids) for e in eps)
        a = adv.advantages
        row: dict[str, Any] = {
            "step": self.step,
            "reward_mean": float(np.mean([e.reward for e in ok])) if ok else float("nan"),
            "reward_std": float(np.std([e.reward for e in ok])) if ok else float("nan"),
            "success": float(np.mean([e.success for e in ok])) if ok else float("nan"),
            "frac_zero_spread": float(adv.zero_spread.float().mean()),
            "adv_mean": float(a.mean()),
            "adv_std": float(a.std()) if a.numel() > 1 else 0.0,
            "adv_abs_mean": float(a.abs().mean()),
            "diversity_mean": float(div.mean()) if div is not None else float("nan"),
            **stats,
            "completion_len": sampled / max(len(eps), 1),
            "turns": actions / max(len(eps), 1),
            "invalid_action_rate": sum(e.invalid_actions for e in eps) / max(actions, 1),
            "env_token_frac": sum(e.env_tokens for e in eps) / max(total_tokens, 1),
            "truncated_turn_frac": sum(e.truncated_turn for e in eps) / max(len(eps), 1),
            "context_truncated_frac": sum(e.context_truncated for e in eps) / max(len(eps), 1),
            "env_errors": sum(e.env_error is not None for e in eps),
            "masked_episodes": masked,
            "trained_episodes": len(keep),
            "env_steps": sum(e.turns for e in trained),
            "branch_episodes": len(branches),
            "rollout_s": rollout_s,
            "update_s": update_s,
            "tokens_per_s": sampled / max(rollout_s, 1e-9),
            "lr": lr_used,
            "elapsed_s": time.perf_counter() - self.t0,
        }
        if evaluate:
            res = self.evaluate(f"step_{self.step}")
            row["eval_success"], row["eval_mean_return"] = res["success"], res["mean_return"]
        self.history.append(row)
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        if cfg.log_samples:
            self._log_samples(eps)
        return row

    def step_level_advantages(
        self, eps: list[Episode], episode_adv: torch.Tensor, valid: torch.Tensor
    ) -> tuple[list[list[float]], list[bool]]:
        """GiGPO per-token advantages: the episode advantage plus ``step_advantage_weight`` times the step-level
        advantage of each turn (:func:`~arl_baselines.grpo.loss.step_group_advantages`) on that turn's tokens.

        Returns:
            ``(rows, signal)``: per episode a list as long as its ``ids``, and whether any of its turns has a
            non-zero advantage (episodes of zero-spread groups may still carry step-level signal).
        """
        cfg = self.cfg
        step = step_group_advantages(
            [e.states[: len(e.step_rewards)] for e in eps],
            [e.step_rewards for e in eps],
            cfg.group_size,
            gamma=cfg.step_gamma,
            scale=cfg.scale_rewards != "none",
            valid=[bool(v) for v in valid],
        )
        rows, signal = [], []
        for e, a_ep, a_steps in zip(eps, episode_adv.tolist(), step):
            row = [a_ep] * len(e.ids)
            for (start, end), a_s in zip(e.turn_spans, a_steps):
                row[start:end] = [a_ep + cfg.step_advantage_weight * a_s] * (end - start)
            rows.append(row)
            signal.append(any(row[i] != 0.0 for i, m in enumerate(e.mask) if m))
        return rows, signal

    def loss_batch(self, eps: list[Episode], zero_spread: torch.Tensor, signal: list[bool] | None = None) -> list[int]:
        """Indices of the episodes that enter the loss.

        Left out: untrainable episodes (env errors; truncated turns when ``mask_truncated``) and, with
        ``drop_zero_spread``, every episode of a zero-spread group. The DAPO token normaliser counts the sampled
        tokens of exactly these episodes (:meth:`_update`), so masked tokens are in neither sum nor count.

        Args:
            eps: The step's episodes, group by group.
            zero_spread: ``(num_groups,)`` bool from :func:`~arl_baselines.grpo.loss.group_advantages`.
            signal: Per episode, whether it has a non-zero (step-level) advantage; when given it replaces the
                group's zero-spread test.
        """
        cfg = self.cfg
        zero_group = zero_spread.repeat_interleave(cfg.group_size)
        no_signal = [not x for x in signal] if signal is not None else [bool(z) for z in zero_group]
        return [i for i, e in enumerate(eps) if e.trainable(cfg.mask_truncated) and not (cfg.drop_zero_spread and no_signal[i])]

    def _watch_zero_spread(self, zero_spread: torch.Tensor) -> None:
        """Warn (once per run) when every group has had zero reward spread for ``ZERO_SPREAD_WARN_STEPS`` steps."""
        self._zero_run = self._zero_run + 1 if bool(zero_spread.all()) else 0
        if self._zero_run == ZERO_SPREAD_WARN_STEPS and not self._zero_warned:
            self._zero_warned = True
            warnings.warn(
                f"GRPO step {self.step}: every group has had zero reward spread for {ZERO_SPREAD_WARN_STEPS} steps, "
                "so the policy gradient is exactly zero and nothing is learned. Warm the policy up first "
                "(sft_steps > 0), raise temperature or group_size, or use an env whose reward has partial credit.",
                RuntimeWarning,
                stacklevel=2,
            )

    def _update(self, eps: list[Episode], advantages: torch.Tensor | list[list[float]]) -> dict[str, float]:
        """One GRPO update (``num_iterations`` passes) on ``eps`` with per-episode ``(n,)`` or per-token
        advantages (one list per episode, as long as its ``ids``)."""
        cfg, model, policy = self.cfg, self.policy.model, self.policy
        mbs = _chunks(list(range(len(eps))), cfg.micro_batch_size)
        n_items = float(sum(eps[i].sampled_tokens for i in range(len(eps))))
        batches = []
        for mb in mbs:
            ids, mask = pad_batch([eps[i] for i in mb], policy.pad_id, self.device)
            slp = pad_batch_floats([eps[i].sample_logprobs for i in mb], ids.shape[1], self.device)
            if isinstance(advantages, torch.Tensor):
                adv_mb = advantages[mb].to(self.device)
            else:
                adv_mb = pad_batch_floats([advantages[i] for i in mb], ids.shape[1], self.device)
            batches.append((ids, mask, adv_mb, slp))
        old: list[torch.Tensor | None] = [None] * len(batches)
        ref: list[torch.Tensor | None] = [None] * len(batches)
        with torch.no_grad():
            for j, (ids, mask, _, _) in enumerate(batches):
                if cfg.num_iterations > 1:
                    old[j] = token_logprobs(model, ids, mask, temperature=cfg.temperature)[0]
                if self.ref_model is not None:
                    ref[j] = token_logprobs(self.ref_model, ids, mask, temperature=cfg.temperature)[0]
        agg: dict[str, float] = {}
        first: dict[str, float] = {}
        weights = first_tokens = 0.0
        gn = 0.0
        bonus = cfg.entropy_coef > 0  # the entropy then keeps its graph, on every pass
        for it in range(cfg.num_iterations):
            self.opt.zero_grad(set_to_none=True)
            loss_total = 0.0
            for j, (ids, mask, adv, slp) in enumerate(batches):
                logp, ent = token_logprobs(
                    model, ids, mask, temperature=cfg.temperature, with_entropy=(it == 0 or bonus), entropy_grad=bonus
                )
                old_lp = old[j] if old[j] is not None else logp.detach()
                loss, st = grpo_loss(
                    logp,
                    old_lp,
                    adv,
                    mask,
                    loss_type=cfg.loss_type,
                    epsilon_low=cfg.epsilon_low,
                    epsilon_high=cfg.epsilon_high,
                    beta=cfg.beta,
                    ref_logp=ref[j],
                    importance_sampling_level=cfg.importance_sampling_level,
                    max_completion_length=self.engine.max_completion_tokens,
                    num_items_in_batch=n_items,
                    num_micro_batches=len(batches),
                    entropy=ent,
                    entropy_coef=cfg.entropy_coef,
                )
                loss.backward()
                loss_total += float(loss.detach())
                w = st.pop("tokens")
                for k, v in st.items():  # clip / ratio / KL statistics: token-weighted over every pass
                    agg[k] = agg.get(k, 0.0) + v * w
                weights += w
                if it == 0:  # the sampler's distribution is compared with the first pass only
                    first["entropy"] = first.get("entropy", 0.0) + (float((ent.detach() * mask).sum()) if ent is not None else 0.0)
                    first["sampler_logp_gap"] = first.get("sampler_logp_gap", 0.0) + float(
                        ((logp.detach() - slp).abs() * mask).sum()
                    )
                    first_tokens += w
            gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm))
            self.opt.step()
            agg_loss = loss_total
        out = {k: v / max(weights, 1.0) for k, v in agg.items()}
        out.update({k: v / max(first_tokens, 1.0) for k, v in first.items()})
        out.update(grad_norm=gn, loss=agg_loss, trained_tokens=n_items)
        return out

    def _log_samples(self, eps: list[Episode]) -> None:
        g = self.cfg.group_size
        with open(self.out / "samples.jsonl", "a") as f:
            for k in range(min(SAMPLE_GROUPS, len(eps) // g, self.cfg.log_samples)):
                e = eps[k * g]
                prompt = self.policy.tokenizer.decode(e.ids[: e.prompt_len])
                f.write(
                    json.dumps(
                        {
                            "step": self.step,
                            "task_id": e.task_id,
                            "prompt": prompt,
                            "actions": e.actions,
                            "observations": e.observations,
                            "reward": e.reward,
                            "success": e.success,
                        }
                    )
                    + "\n"
                )

    # ----------------------------------------------------------------- outputs
    def summary(self) -> dict[str, Any]:
        """Summary of the run (also written to ``summary.json``)."""
        h = self.history
        k = max(1, len(h) // 5)
        return {
            "env_id": self.env_id,
            "output": str(self.out),
            "model": self.policy.name,
            "parameters": self.policy.num_parameters(),
            "device": str(self.device),
            "steps": len(h),
            "episodes_per_step": self.cfg.batch_episodes,
            "tokens_generated": self.tokens_generated,
            "wall_s": time.perf_counter() - self.t0,
            "stopped_early": self.stopped_early,
            "timings_s": {**self.timings, "eval_s": sum(e.get("eval_s", 0.0) for e in self.evals.values())},
            "sft_examples": self.sft_examples,
            "sft_checkpoint": self.sft_checkpoint,
            "sft_source": self.sft_source,
            "sft_checkpoint_skipped": self.sft_checkpoint_skipped,
            "decode_compiled": self.engine.decoder.compiled if self.engine._decoder is not None else False,
            "reward_first": float(np.nanmean([r["reward_mean"] for r in h[:k]])) if h else None,
            "reward_last": float(np.nanmean([r["reward_mean"] for r in h[-k:]])) if h else None,
            "success_first": float(np.nanmean([r["success"] for r in h[:k]])) if h else None,
            "success_last": float(np.nanmean([r["success"] for r in h[-k:]])) if h else None,
            "evals": self.evals,
        }

    def finish(self) -> dict[str, Any]:
        """Write ``summary.json`` and ``curves.png``; close envs; return the summary."""
        s = self.summary()
        (self.out / "summary.json").write_text(json.dumps(s, indent=2, default=str))
        plot_curves(self.out)
        self.engine.close()
        return s


def _longest_action(ep: Episode) -> int:
    """Tokens of the longest run of trained ids in ``ep`` (one action with its stop id)."""
    best = run = 0
    for m in ep.mask:
        run = run + 1 if m else 0
        best = max(best, run)
    return best


def _warn_long_actions(data: list[Episode], max_new_tokens: int) -> None:
    """Warn when expert actions (stop id included) are longer than a sampled turn may be: the policy could never
    finish such an action, so every rollout that imitates it is cut as a ``truncated_turn`` (a budget one token
    short of the expert's answers cuts every one of them)."""
    lengths = [_longest_action(e) for e in data]
    over = sum(n > max_new_tokens for n in lengths)
    if over:
        warnings.warn(
            f"{over} of {len(data)} expert demonstrations have an action longer than max_new_tokens="
            f"{max_new_tokens} tokens (longest {max(lengths)}, stop id included): sampled turns that imitate them are "
            "cut as truncated turns; raise max_new_tokens",
            stacklevel=3,
        )


def grpo_lr_at(cfg: GRPOConfig, step: int) -> float:
    """GRPO learning rate at ``step`` (0-based): linear warm-up ``lr * (step + 1) / (warmup_steps + 1)``, then ``lr``."""
    warm = max(cfg.warmup_steps, 0)
    return cfg.lr * min(1.0, (step + 1) / (warm + 1)) if warm else cfg.lr


def sft_lr_at(cfg: GRPOConfig, step: int) -> float:
    """SFT learning rate at ``step`` (0-based): constant, or cosine from ``sft_lr`` to ``sft_min_lr_ratio * sft_lr``.

    The cosine (Loshchilov & Hutter 2017, SGDR, without restarts) reaches its floor at ``step == sft_steps`` and
    stays there for any later step (e.g. the SFT-only branch of :func:`sft_vs_grpo`, which continues SFT past
    ``sft_steps``): it never climbs back towards ``sft_lr``.
    """
    if cfg.sft_schedule == "constant":
        return cfg.sft_lr
    floor = cfg.sft_min_lr_ratio
    frac = min(step, cfg.sft_steps) / max(cfg.sft_steps, 1)
    return cfg.sft_lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * frac)))


def pad_batch_floats(rows: list[list[float]], T: int, device: torch.device) -> torch.Tensor:
    """Right-pad float rows to ``(B, T)`` with zeros."""
    out = torch.zeros((len(rows), T), dtype=torch.float32)
    for b, r in enumerate(rows):
        out[b, : len(r)] = torch.tensor(r, dtype=torch.float32)
    return out.to(device)


def _empty_update_stats() -> dict[str, float]:
    keys = ("clip_low", "clip_high", "clip_region", "ratio_mean", "kl", "entropy", "sampler_logp_gap")
    return {**{k: float("nan") for k in keys}, "grad_norm": 0.0, "loss": 0.0, "trained_tokens": 0.0}


class _NoBar:
    def update(self, n: int = 1) -> None: ...
    def set_postfix(self, **kw: Any) -> None: ...
    def close(self) -> None: ...


def _bar(total: int, desc: str, enabled: bool, *, seconds: float | None = None) -> Any:
    """A tqdm bar of ``total`` steps; with ``seconds``, a bar of elapsed / ``seconds`` wall seconds instead (for a
    time-budgeted phase, whose step count is not known in advance)."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    if seconds is not None:
        return tqdm(total=round(float(seconds), 1), desc=desc, unit="s", dynamic_ncols=True,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s budget [{postfix}]")
    return tqdm(total=total, desc=desc, dynamic_ncols=True)


def plot_curves(output: str | os.PathLike[str]) -> Path:
    """Plot ``metrics.jsonl`` (and ``sft.jsonl``) of a run directory into ``curves.png`` (matplotlib, Agg).

    Panels: reward and success per step with held-out evaluations; SFT loss; entropy and clip fraction;
    completion length and turns; rollout throughput.

    Returns:
        Path of the PNG.
    """
    from matplotlib.figure import Figure  # the object API renders without a backend: no matplotlib.use()

    out = Path(output)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
    sft_path = out / "sft.jsonl"
    sft = [json.loads(x) for x in sft_path.read_text().splitlines() if x.strip()] if sft_path.exists() else []
    summary_path = out / "summary.json"
    evals = json.loads(summary_path.read_text()).get("evals", {}) if summary_path.exists() else {}
    fig = Figure(figsize=(15, 8))
    axes = fig.subplots(2, 3)
    steps = [r["step"] for r in rows]

    def series(key: str) -> list[float]:
        return [float(r.get(key, float("nan"))) if r.get(key) is not None else float("nan") for r in rows]

    ax = axes[0, 0]
    reward = series("reward_mean")
    ax.plot(steps, reward, label="reward (train)", alpha=0.5)
    ax.plot(steps, series("success"), label="success (train)", alpha=0.5)
    window = max(1, len(rows) // SMOOTH_FRACTION)
    if window > 1:
        smooth = np.convolve(np.nan_to_num(reward), np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1 :], smooth, color="k", label=f"reward ({window}-step mean)")
    for tag, res in evals.items():
        ax.axhline(res.get("success", float("nan")), ls="--", lw=0.8, color="gray")
        ax.text(0, res.get("success", 0), f" eval {tag}: {res.get('success', float('nan')):.2f}", fontsize=7)
    ax.set_title("GRPO reward / success")
    ax.set_xlabel("step")
    ax.legend()
    ax = axes[0, 1]
    if sft:
        ax.plot([r["sft_step"] for r in sft], [r["sft_loss"] for r in sft])
    ax.set_title("SFT loss (nats/token)")
    ax.set_xlabel("SFT step")
    ax = axes[0, 2]
    ax.plot(steps, series("entropy"), label="entropy")
    ax.plot(steps, series("clip_region"), label="clip fraction")
    ax.plot(steps, series("frac_zero_spread"), label="zero-spread groups")
    ax.set_title("entropy / clipping")
    ax.legend()
    ax = axes[1, 0]
    ax.plot(steps, series("completion_len"), label="sampled tokens / episode")
    ax.plot(steps, series("turns"), label="turns / episode")
    ax.set_title("lengths")
    ax.legend()
    ax = axes[1, 1]
    ax.plot(steps, series("grad_norm"), label="grad norm")
    ax.plot(steps, series("invalid_action_rate"), label="invalid-action rate")
    ax.plot(steps, series("truncated_turn_frac"), label="truncated turns")
    ax.set_title("optimisation / format")
    ax.legend()
    ax = axes[1, 2]
    ax.plot(steps, series("tokens_per_s"))
    ax.set_title("rollout tokens/s")
    fig.tight_layout()
    path = out / "curves.png"
    fig.savefig(path, dpi=90)
    return path


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists, recursively (a checkpoint's settings compare equal to the run's)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _sft_identity(env_id: str, model: str, cfg: GRPOConfig) -> dict[str, Any]:
    """What an SFT checkpoint must share with the run that loads it (:data:`SFT_CHECKPOINT_KEYS`)."""
    return _plain(
        {
            "env_id": env_id,
            "env_kwargs": dict(cfg.env_kwargs or {}),
            "model_spec": model,
            "settings": {k: getattr(cfg, k) for k in SFT_CHECKPOINT_KEYS},
        }
    )


def read_sft_checkpoint(
    path: str | os.PathLike[str],
    *,
    env_id: str | None = None,
    model: str | None = None,
    cfg: GRPOConfig | None = None,
    device: str | torch.device = "cpu",
) -> dict[str, Any]:
    """Read a :meth:`Trainer.save_sft_checkpoint` file (``torch.load(weights_only=True)``: tensors and plain
    containers only, no pickled code) and, given ``env_id``, ``model`` and ``cfg``, check it fits that run.

    Returns:
        The file's dict (tensors under ``model`` and ``opt``) plus its ``sha256`` and ``path``.

    Raises:
        FileNotFoundError: No file at ``path``.
        ValueError: Not a readable SFT checkpoint of :data:`SFT_CHECKPOINT_FORMAT`; or it does not fit the run
            (the message names each differing key as ``(checkpoint, run)``), or holds fewer SFT steps than
            ``cfg.sft_steps``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no SFT checkpoint at {path}")
    raw = path.read_bytes()  # read once: hashed and loaded from the same bytes
    if not raw:
        raise ValueError(f"{path} is not an SFT checkpoint: the file is empty")
    if not zipfile.is_zipfile(io.BytesIO(raw)):
        raise ValueError(f"{path} is not an SFT checkpoint: not a torch.save file (no zip archive)")
    try:
        ck = torch.load(io.BytesIO(raw), map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(f"{path} is not an SFT checkpoint: it holds objects other than tensors and plain "
                         "containers, refused (loading them would run pickled code)") from exc
    except Exception as exc:  # noqa: BLE001  (torch raises RuntimeError, EOFError, ...)
        raise ValueError(f"{path} is not a readable SFT checkpoint: {type(exc).__name__}: {str(exc)[:200]}") from exc
    need = ("env_id", "env_kwargs", "model_spec", "settings", "use_instructions", "sft_seeds", "demonstrator_seed",
            "demonstrator_success", "sft_steps_done", "model", "opt")
    if not isinstance(ck, dict) or ck.get("format") != SFT_CHECKPOINT_FORMAT or any(k not in ck for k in need):
        raise ValueError(
            f"{path} is not an arl-baselines SFT checkpoint of format {SFT_CHECKPOINT_FORMAT} "
            f"(needs the keys {', '.join(need)})"
        )
    ck["sha256"] = hashlib.sha256(raw).hexdigest()
    ck["path"] = str(path)
    if env_id is None or model is None or cfg is None:
        return ck
    mine = _sft_identity(env_id, model, cfg)
    theirs = _plain({k: ck[k] for k in ("env_id", "env_kwargs", "model_spec", "settings")})
    theirs["env_id"] = CHECKPOINT_ENV_ALIASES.get(theirs["env_id"], theirs["env_id"])
    flat_mine = {**{k: v for k, v in mine.items() if k != "settings"}, **mine["settings"]}
    flat_theirs = {**{k: v for k, v in theirs.items() if k != "settings"}, **theirs["settings"]}
    diff = {k: (flat_theirs.get(k), v) for k, v in flat_mine.items() if flat_theirs.get(k) != v}
    if diff:
        raise ValueError(f"SFT checkpoint {path} does not match this run (checkpoint, run): {diff}")
    if int(ck["sft_steps_done"]) < cfg.sft_steps:
        raise ValueError(
            f"SFT checkpoint {path} holds {ck['sft_steps_done']} SFT steps, fewer than the run's sft_steps="
            f"{cfg.sft_steps} (a partial SFT)"
        )
    return ck


def _config(env_id: str, model: str, cfg: dict[str, Any]) -> GRPOConfig:
    """A :class:`GRPOConfig` from keyword settings laid over the env's recommended ones (unless ``env_defaults=False``).

    ``env_kwargs`` are merged key by key (the user's win), so ``env_kwargs={"max_number": 20}`` on countdown keeps
    the recommended ``expert``; ``env_defaults=False`` drops them all.
    """
    cfg = dict(cfg)
    if bool(cfg.pop("env_defaults", True)):
        rec = recommended_settings(env_id, tiny=model in TINY_SIZES)
        if "env_kwargs" in rec and cfg.get("env_kwargs") is not None:
            cfg["env_kwargs"] = {**rec["env_kwargs"], **dict(cfg["env_kwargs"])}
        cfg = {**rec, **cfg}
    return GRPOConfig.from_kwargs(**cfg)


def _trainer(env_id: str, model: str, output: str | os.PathLike[str], cfg: dict[str, Any]) -> Trainer:
    """A :class:`Trainer` from keyword settings laid over the env's recommended ones (unless ``env_defaults=False``)."""
    return Trainer(env_id, model, _config(env_id, model, cfg), output)


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


#: Files of a run directory: one holding any of them holds an earlier run (:func:`train` refuses to replace it).
RUN_FILES = ("config.json", "metrics.jsonl", "sft.jsonl", "samples.jsonl", "summary.json")
#: The file that marks a run directory whose run has not finished (written first, removed once ``summary.json`` and
#: ``curves.png`` are written; it says why when the run stopped on an exception or an interrupt).
PARTIAL_MARK = "PARTIAL"
#: Subdirectory of a run directory where ``overwrite`` moves the earlier run's files (replacing an older one there).
PREVIOUS_DIR = "previous"
#: Everything a run writes in its directory: what ``overwrite`` moves aside into :data:`PREVIOUS_DIR`.
RUN_OUTPUTS = (*RUN_FILES, "curves.png", "comparison.json", "model", PARTIAL_MARK)
#: Trees a run directory may not be in: the kernel's pseudo-filesystems (``/dev/shm`` is a plain tmpfs: allowed).
_PSEUDO_FS = ("/proc", "/sys", "/dev")


def check_run_dir(output: str | os.PathLike[str]) -> Path:
    """Check that ``output`` can be a run directory, without writing anything; return it as a Path.

    Raises:
        FileExistsError: ``output`` is a file, a dangling symbolic link, or below a file.
        ValueError: ``output`` is (in) the installed ``arl_envs`` / ``arl_baselines`` package, or in a kernel
            pseudo-filesystem (``/proc``, ``/sys``, ``/dev`` other than ``/dev/shm``).
        PermissionError: The nearest existing directory of ``output`` is not writable.
    """
    import arl_envs

    out = Path(output)
    if out.is_symlink() and not out.exists():
        raise FileExistsError(f"the run directory {out} is a dangling symbolic link (to {os.readlink(out)})")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"the run directory {out} is a file")
    real = Path(os.path.realpath(out))
    packages = [Path(arl_envs.__file__).resolve().parent, Path(__file__).resolve().parents[1]]
    for pkg in packages:
        if real == pkg or pkg in real.parents:
            raise ValueError(f"the run directory {out} is in the installed package {pkg}: give a directory of your own")
    for root in _PSEUDO_FS:
        root_p = Path(root)
        if (real == root_p or root_p in real.parents) and not (real == Path("/dev/shm") or Path("/dev/shm") in real.parents):
            raise ValueError(f"the run directory {out} is in {root}, a kernel pseudo-filesystem: give a real directory")
    existing = real
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise FileExistsError(f"the run directory {out} would be below the file {existing}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"the run directory {out} cannot be written ({existing} is not writable)")
    return out


def start_run_dir(output: str | os.PathLike[str], *, overwrite: bool) -> Path:
    """Create the run directory ``output`` and mark it :data:`PARTIAL_MARK`; with ``overwrite``, first move an
    earlier run's files (:data:`RUN_OUTPUTS`) into ``output/previous/`` (replacing what an older overwrite left
    there), so the new run's files are never mixed with the old ones.

    Raises:
        FileExistsError: ``output`` holds an earlier run and not ``overwrite``.
    """
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    earlier = [name for name in RUN_OUTPUTS if os.path.lexists(out / name)]
    if earlier:
        if not overwrite:
            raise FileExistsError(f"{out} holds an earlier run ({', '.join(earlier)}): give another output, or "
                                  "overwrite=True / --overwrite to move it to previous/")
        prev = out / PREVIOUS_DIR
        if prev.is_dir() and not prev.is_symlink():
            shutil.rmtree(prev)
        elif os.path.lexists(prev):
            prev.unlink()
        prev.mkdir()
        for name in earlier:
            os.replace(out / name, prev / name)
    (out / PARTIAL_MARK).write_text(
        f"This run has not finished (started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, pid {os.getpid()}): "
        "summary.json and curves.png are written when it ends, and this file is removed. If no process is running "
        "it, it was interrupted.\n"
    )
    return out


def finish_run_dir(output: str | os.PathLike[str]) -> None:
    """Remove the :data:`PARTIAL_MARK` of a run directory whose run has written all its files."""
    (Path(output) / PARTIAL_MARK).unlink(missing_ok=True)


def _mark_interrupted(output: str | os.PathLike[str], exc: BaseException) -> None:
    """Append why the run stopped to its :data:`PARTIAL_MARK` (best effort: the original error is what matters)."""
    with contextlib.suppress(OSError):
        with open(Path(output) / PARTIAL_MARK, "a") as fh:
            fh.write(f"Stopped by {type(exc).__name__}: {exc}\n")


def check_train_args(
    env_id: str,
    model: str = "tiny",
    steps: int | None = None,
    output: str | os.PathLike[str] = "runs/grpo",
    *,
    sft_checkpoint: str | os.PathLike[str] | None = "auto",
    overwrite: bool = False,
    **cfg: Any,
) -> tuple[GRPOConfig, int, str | os.PathLike[str] | None]:
    """:func:`train`'s checks of its arguments, done before it writes anything (``arl-envs train`` runs them first
    to report bad input as a usage error); returns the settings, the GRPO steps and the normalised
    ``sft_checkpoint`` (:func:`sft_checkpoint_spec`).

    Raises:
        gymnasium.error.Error: ``env_id`` is not registered.
        TypeError, ValueError, FileNotFoundError, FileExistsError, PermissionError: As :func:`train`; nothing is
            written.
    """
    import gymnasium as gym

    import arl_envs  # noqa: F401  (registers the ids)

    gym.spec(env_id)  # an unknown id fails here (gymnasium's error names the closest ids), not after a directory exists
    cfg = {k: v for k, v in cfg.items() if k != "save_model"}
    config = _config(env_id, model, cfg)
    if steps is None:
        steps = recommended_steps(env_id, tiny=model in TINY_SIZES and bool(cfg.get("env_defaults", True)))
    if int(steps) < 0:
        raise ValueError(f"steps must be >= 0 GRPO steps, got {steps}")
    out = check_run_dir(output)
    earlier = [name for name in RUN_OUTPUTS if os.path.lexists(out / name)] if out.is_dir() else []
    if not overwrite and earlier:
        raise FileExistsError(f"{out} holds an earlier run ({', '.join(earlier)}): give another output, or "
                              "overwrite=True / --overwrite to move it to previous/")
    spec = sft_checkpoint_spec(sft_checkpoint)
    if spec not in (None, "auto"):
        _check_sft_checkpoint(spec, env_id, model, config)
    return config, int(steps), spec


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


def sft_checkpoint_spec(spec: str | os.PathLike[str] | None) -> str | os.PathLike[str] | None:
    """:func:`train`'s ``sft_checkpoint`` (also ``--sft-checkpoint``) normalised: ``"auto"``, None (``"none"``;
    keywords in any case) or the path of an existing file.

    Raises:
        FileNotFoundError: A path with no file (the message lists the keywords, for a misspelt one).
    """
    if isinstance(spec, str) and spec.strip().lower() in ("auto", "none"):
        return None if spec.strip().lower() == "none" else "auto"
    if spec is not None and not Path(spec).is_file():
        raise FileNotFoundError(f"no SFT checkpoint file at {spec} (sft_checkpoint / --sft-checkpoint: auto, none "
                                "or the path of a saved SFT checkpoint)")
    return spec


def _check_sft_checkpoint(path: str | os.PathLike[str], env_id: str, model: str, cfg: GRPOConfig) -> dict[str, Any]:
    """Check that the SFT checkpoint ``path`` fits the run before its :class:`Trainer` empties the run directory's
    logs (:func:`read_sft_checkpoint`); returns its ``path``, ``sha256`` and ``sft_steps_done``.

    Raises:
        FileNotFoundError, ValueError: As :func:`read_sft_checkpoint`.
    """
    ck = read_sft_checkpoint(path, env_id=env_id, model=model, cfg=cfg)
    return {"path": ck["path"], "sha256": ck["sha256"], "sft_steps_done": ck["sft_steps_done"]}


def _warm_start(tr: Trainer, spec: str | os.PathLike[str] | None) -> bool:
    """Load the SFT warm start ``spec`` (see :func:`sft_checkpoint_spec`) into ``tr``, weights only; True if loaded.

    After a load, the run's task-seed stream skips the draw the SFT's demonstrations would have taken, so the GRPO
    phase sees the task seeds of a run that ran the same SFT itself.

    Raises:
        ValueError, FileNotFoundError: An explicit path that cannot be loaded (``"auto"`` never raises: it falls
            back to running the SFT and records why in ``tr.sft_checkpoint_skipped``).
    """
    if spec is None:
        return False
    path = SHIPPED_SFT_CHECKPOINTS.get(tr.env_id) if spec == "auto" else spec
    if spec == "auto":
        if path is None:
            tr.sft_checkpoint_skipped = f"no shipped SFT checkpoint for {tr.env_id}"
        elif tr.cfg.seed != SHIPPED_SFT_SEED:
            tr.sft_checkpoint_skipped = (f"the shipped SFT checkpoints are the SFT of seed {SHIPPED_SFT_SEED}; "
                                         f"this run's seed is {tr.cfg.seed}")
        else:
            try:
                tr.load_sft_checkpoint(path, demonstrations=False)
            except (ValueError, FileNotFoundError) as exc:
                tr.sft_checkpoint_skipped = str(exc)
        if tr.sft_checkpoint_skipped is not None:
            if tr.cfg.progress:
                print(f"shipped SFT checkpoint not used, running the SFT here: {tr.sft_checkpoint_skipped}",
                      file=sys.stderr)
            return False
    else:
        tr.load_sft_checkpoint(path, demonstrations=False)
    tr.task_rng.integers(0, TRAIN_SEED_RANGE, size=tr.cfg.sft_episodes)
    if spec == "auto" and tr.cfg.progress:
        print(f"SFT warm start: shipped checkpoint {path.name} (sha256 {tr.sft_checkpoint['sha256'][:12]}; "
              "sft_checkpoint='none' / --sft-checkpoint none runs the SFT here)", file=sys.stderr)
    return True


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
            earlier run's files there are moved into ``output/previous/`` first; :data:`PARTIAL_MARK` marks the
            directory until ``comparison.json`` is written.
        grpo_steps: GRPO steps of branch (a).
        sft_checkpoint: Start from this :meth:`Trainer.save_sft_checkpoint` file instead of running the SFT
            (its settings must match the run's, checked before the run directory is touched; the untrained
            ``before`` evaluation is skipped; its path and sha256 are recorded as ``sft_checkpoint``).
        save_sft_checkpoint: Write the SFT checkpoint here after the SFT (a file :func:`sft_vs_grpo` can start from).
        **cfg: :class:`GRPOConfig` fields (over the env's recommended settings).

    Raises:
        ValueError: ``sft_steps`` is 0; ``sft_checkpoint`` is unreadable or does not match the settings (see
            :func:`read_sft_checkpoint`); both ``sft_checkpoint`` and ``save_sft_checkpoint`` are given.
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


#: The demo's task: one-step integer arithmetic with single-digit operands (+, -, *; 243 distinct problems).
DEMO_ENV_ID = "arl/math.arithmetic-v1"
DEMO_ENV_KWARGS: dict[str, Any] = {"difficulty": 1, "kinds": ["integer"]}
#: The shipped SFT checkpoint the demo starts from (built by :func:`build_demo_checkpoint`; 1.8 MB).
DEMO_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "demo_sft.pt"
#: A shipped SFT checkpoint of countdown's tiny defaults (``recommended_settings``: 1500 constant-lr steps on the
#: in-order expert; built by ``python -m arl_baselines.grpo.demo_checkpoint --env arl/math.countdown-v1``, 1.8 MB):
#: the test of the defaults' GRPO phase starts from it instead of 8 CPU minutes of SFT.
COUNTDOWN_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "countdown_sft.pt"
#: A shipped SFT checkpoint of code.functions' tiny defaults (600 constant-lr steps on the difficulty-1 generated
#: tasks; built by ``python -m arl_baselines.grpo.demo_checkpoint --env arl/code.functions-v0``, 1.8 MB): the test
#: of those defaults starts from it instead of 14 CPU minutes of sandboxed demonstrations and SFT.
CODE_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "code_sft.pt"
#: A shipped SFT checkpoint of arithmetic's tiny defaults (500 cosine SFT steps from 3e-3 to 3e-4; built by
#: ``python -m arl_baselines.grpo.demo_checkpoint --env arl/math.arithmetic-v1``, 1.8 MB).
ARITHMETIC_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "arithmetic_sft.pt"
#: The seed of every :data:`SHIPPED_SFT_CHECKPOINTS` build (``demonstrator_seed`` ``"0-demonstrator"`` in the files).
SHIPPED_SFT_SEED = 0
#: The SFT checkpoints :func:`train` starts from with ``sft_checkpoint="auto"`` (its default) when the run's settings
#: are the env's tiny defaults: env id -> file. Each is the SFT phase of those defaults, seed 0, one torch thread.
SHIPPED_SFT_CHECKPOINTS: dict[str, Path] = {
    "arl/math.arithmetic-v1": ARITHMETIC_SFT_CHECKPOINT,
    "arl/math.countdown-v1": COUNTDOWN_SFT_CHECKPOINT,
    "arl/code.functions-v0": CODE_SFT_CHECKPOINT,
}
#: Env ids retired by a version bump -> the id that replaced them. An SFT checkpoint records the id it was trained
#: on, and :func:`read_sft_checkpoint` reads that id through this map, so a checkpoint of a retired id loads for its
#: successor. Sound because the bumps changed rewards only, which SFT never sees: it imitates expert trajectories,
#: and the experts, tasks and observations of these ids are unchanged (CHANGELOG.md). The shipped arithmetic,
#: countdown and demo checkpoints were written under the ``-v0`` ids.
CHECKPOINT_ENV_ALIASES: dict[str, str] = {
    f"arl/{name}-v0": f"arl/{name}-v1"
    for name in ("math.arithmetic", "math.countdown", "math.dataset", "math.tool", "search.multihop", "search.qa",
                 "code.repo", "selfplay.propose-solve", "memory.bank", "multiagent.tictactoe",
                 "multiagent.connect_four", "multiagent.kuhn_poker", "multiagent.negotiation",
                 "multiagent.referential", "multiagent.gridpath")
}

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
        **overrides: Settings overriding the demo's (``seed``, ``grpo_steps``, any :class:`GRPOConfig` field; SFT
            fields must match the checkpoint's).

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
    """SFT on ``env_id``'s expert (``settings`` over the env's recommended ones, as :func:`train`), evaluated on the
    held-out seeds every ``eval_every`` steps, saved to ``path`` (:meth:`Trainer.save_sft_checkpoint`).

    Args:
        env_id: A registered id.
        path: Checkpoint file to write.
        output: Run directory (``sft.jsonl``, ``sft_curve.json``).
        model: The model spec.
        eval_every: SFT steps between held-out evaluations (0: one at the end).
        **settings: :class:`GRPOConfig` fields.

    Returns:
        ``path``, ``demonstrator_success``, ``curve`` (rows ``sft_steps``, ``success``, ``elapsed_s``), ``sft_s``.

    Raises:
        ValueError: Invalid settings (from :class:`GRPOConfig`), or no SFT steps to run.
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
        **overrides: :class:`GRPOConfig` fields over the demo's.

    Returns:
        As :func:`build_sft_checkpoint`.
    """
    settings: dict[str, Any] = {**DEMO_SETTINGS, "progress": progress, **overrides}
    settings.pop("grpo_steps")
    return build_sft_checkpoint(DEMO_ENV_ID, path, output, eval_every=eval_every, **settings)
