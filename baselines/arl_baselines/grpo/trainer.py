"""The :class:`Trainer` of one GRPO run: SFT warm start on expert demonstrations, then GRPO steps.

One GRPO step (:meth:`Trainer.grpo_step`): sample ``num_groups`` training seeds; play ``group_size`` episodes of each
(:class:`~arl_baselines.grpo.rollout.RolloutEngine`); group-relative advantages; drop zero-spread groups and masked
episodes; one (or ``num_iterations``) AdamW step(s) on the clipped loss (:mod:`arl_baselines.grpo.loss`), accumulated
over micro-batches. The learning-rate schedules (:func:`grpo_lr_at`, :func:`sft_lr_at`) and the batching helpers
live here too.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arl_baselines.grpo.branching import Brancher
from arl_baselines.grpo.checkpoints import SFTCheckpoints
from arl_baselines.grpo.config import EVAL_SEED_OFFSET, TRAIN_SEED_RANGE, GRPOConfig
from arl_baselines.grpo.diversity import diversity_rewards
from arl_baselines.grpo.loss import group_advantages, grpo_loss, step_group_advantages
from arl_baselines.grpo.policy import Policy, load_policy, token_logprobs
from arl_baselines.grpo.reporting import RunReport, step_metrics
from arl_baselines.grpo.rollout import Episode, RolloutEngine, expert_episodes

#: Consecutive all-zero-spread GRPO steps after which :class:`Trainer` warns that nothing is being learned.
ZERO_SPREAD_WARN_STEPS = 5


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


class Trainer(SFTCheckpoints, RunReport):
    """Holds the policy, optimiser, rollout engine and logs of one run (see :func:`~arl_baselines.grpo.train.train`):
    the SFT phase (:meth:`prepare_sft`, :meth:`sft`) and the GRPO phase (:meth:`setup_grpo`, :meth:`grpo_step`).

    Its SFT snapshots and checkpoint files are :class:`~arl_baselines.grpo.checkpoints.SFTCheckpoints`' methods;
    its evaluations, logs and summary :class:`~arl_baselines.grpo.reporting.RunReport`'s.
    """

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
        #: Why :func:`~arl_baselines.grpo.train.train`'s ``sft_checkpoint="auto"`` found no usable shipped checkpoint
        #: (None: it found one, or was not asked).
        self.sft_checkpoint_skipped: str | None = None
        self.opt: Any = None
        (self.out / "config.json").write_text(
            json.dumps({"env_id": env_id, "model": model, **cfg.to_dict()}, indent=2, default=str)
        )
        for name in ("metrics.jsonl", "sft.jsonl", "samples.jsonl"):
            (self.out / name).write_text("")

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
                expert episodes (the few-demonstration comparison of
                :func:`~arl_baselines.grpo.experiments.sft_vs_grpo` relies on it).
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
        self.tokens_generated += sum(e.sampled_tokens for e in eps + branches)

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

        row = step_metrics(self.step, eps, adv, div, stats, masked=masked, trained=len(keep), rollout_s=rollout_s,
                           update_s=update_s, lr=lr_used, elapsed_s=time.perf_counter() - self.t0,
                           branches=branches, env_steps=sum(e.turns for e in trained))
        if evaluate:
            res = self.evaluate(f"step_{self.step}")
            row["eval_success"], row["eval_mean_return"] = res["success"], res["mean_return"]
        self.log_step(row, eps)
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
    stays there for any later step (e.g. the SFT-only branch of :func:`~arl_baselines.grpo.experiments.sft_vs_grpo`,
    which continues SFT past ``sft_steps``): it never climbs back towards ``sft_lr``.
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
