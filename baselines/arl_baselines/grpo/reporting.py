"""What a run reports: held-out evaluations, the metrics line of each GRPO step (``metrics.jsonl``), sampled
episodes (``samples.jsonl``), the summary (``summary.json``) and the plot (``curves.png``, :mod:`.plots`): the
:class:`RunReport` methods of :class:`~arl_baselines.grpo.trainer.Trainer` and :func:`step_metrics`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arl_baselines.grpo.config import GRPOConfig
from arl_baselines.grpo.loss import Advantages
from arl_baselines.grpo.plots import plot_curves
from arl_baselines.grpo.policy import Policy
from arl_baselines.grpo.rollout import Episode, RolloutEngine, evaluate

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
#: Episodes of each step written to samples.jsonl are the first of this many groups.
SAMPLE_GROUPS = 2


def step_metrics(
    step: int,
    eps: list[Episode],
    adv: Advantages,
    diversity: torch.Tensor | None,
    stats: dict[str, float],
    *,
    masked: int,
    trained: int,
    rollout_s: float,
    update_s: float,
    lr: float,
    elapsed_s: float,
    branches: list[Episode] | None = None,
    env_steps: int | None = None,
) -> dict[str, Any]:
    """The metrics line of GRPO step ``step`` (:data:`METRIC_KEYS`, in that order) from its episodes, advantages,
    DARLING distinctness (``diversity``, None when off) and update statistics (``stats``: entropy, KL, clipping,
    grad norm, loss, trained tokens).

    Rewards and success are means over the episodes without an env error (NaN when there is none); ``masked`` and
    ``trained`` count the episodes left out of and entering the loss. ``branches``: the step's branch episodes
    (GRPO's ``branch_k``; their sampled tokens count in ``tokens_per_s``); ``env_steps``: every ``env.step`` of the
    step, branch steps included (default: the episodes' turns).
    """
    branches = branches or []
    sampled = sum(e.sampled_tokens for e in eps + branches)
    ok = [e for e in eps if e.env_error is None]
    actions = sum(e.turns for e in eps)
    total_tokens = sum(len(e.ids) for e in eps)
    a = adv.advantages
    return {
        "step": step,
        "reward_mean": float(np.mean([e.reward for e in ok])) if ok else float("nan"),
        "reward_std": float(np.std([e.reward for e in ok])) if ok else float("nan"),
        "success": float(np.mean([e.success for e in ok])) if ok else float("nan"),
        "frac_zero_spread": float(adv.zero_spread.float().mean()),
        "adv_mean": float(a.mean()),
        "adv_std": float(a.std()) if a.numel() > 1 else 0.0,
        "adv_abs_mean": float(a.abs().mean()),
        "diversity_mean": float(diversity.mean()) if diversity is not None else float("nan"),
        **stats,
        "completion_len": sampled / max(len(eps), 1),
        "turns": actions / max(len(eps), 1),
        "invalid_action_rate": sum(e.invalid_actions for e in eps) / max(actions, 1),
        "env_token_frac": sum(e.env_tokens for e in eps) / max(total_tokens, 1),
        "truncated_turn_frac": sum(e.truncated_turn for e in eps) / max(len(eps), 1),
        "context_truncated_frac": sum(e.context_truncated for e in eps) / max(len(eps), 1),
        "env_errors": sum(e.env_error is not None for e in eps),
        "masked_episodes": masked,
        "trained_episodes": trained,
        "env_steps": sum(e.turns for e in eps) if env_steps is None else env_steps,
        "branch_episodes": len(branches),
        "rollout_s": rollout_s,
        "update_s": update_s,
        "tokens_per_s": sampled / max(rollout_s, 1e-9),
        "lr": lr,
        "elapsed_s": elapsed_s,
    }


class RunReport:
    """Held-out evaluations, logs and summary of a :class:`~arl_baselines.grpo.trainer.Trainer` run.

    A base class of ``Trainer``: ``Trainer.__init__`` sets the attributes annotated here and empties the log files.
    """

    env_id: str
    cfg: GRPOConfig
    out: Path
    device: torch.device
    policy: Policy
    engine: RolloutEngine
    gen: torch.Generator
    eval_seeds: list[int]
    step: int
    t0: float
    history: list[dict[str, Any]]
    evals: dict[str, dict[str, float]]
    tokens_generated: int
    stopped_early: bool
    timings: dict[str, float]
    sft_examples: int
    sft_checkpoint: dict[str, Any] | None
    sft_checkpoint_skipped: str | None
    sft_source: str | None

    def log_step(self, row: dict[str, Any], eps: list[Episode]) -> None:
        """Keep a step's metrics line ``row`` (:func:`step_metrics`) in ``history`` and append it to
        ``metrics.jsonl``; with ``cfg.log_samples``, append a few of its episodes ``eps`` to ``samples.jsonl``."""
        self.history.append(row)
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        if self.cfg.log_samples:
            self._log_samples(eps)

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
