"""Configuration of the GRPO baseline: one dataclass, every knob named, every default explained.

Defaults follow TRL's ``GRPOConfig`` where the knob exists there (``loss_type="dapo"``, ``epsilon=0.2``,
``epsilon_high=0.28`` as in DAPO, ``beta=0.0``, ``scale_rewards="group"``, ``importance_sampling_level="token"``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import typing
from dataclasses import dataclass, field
from typing import Any

import pydantic

from arl_envs.lm import TINY_SIZES, TinySize  # noqa: F401 - the tiny architectures, re-exported for the settings

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
SCALE_REWARDS = ("group", "batch", "none")
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")
OPTIMIZERS = ("adamw", "sgd")
SFT_SCHEDULES = ("constant", "cosine")
ADVANTAGE_LEVELS = ("episode", "step")
DIVERSITY_MODES = ("off", "ngram")

#: Seeds at or above this value are held out for evaluation; training seeds are drawn below it.
EVAL_SEED_OFFSET = 1_000_000_000
#: Training task seeds are drawn uniformly from [0, TRAIN_SEED_RANGE).
TRAIN_SEED_RANGE = 1_000_000_000
#: Lower bounds of numeric settings (None values of optional ones are not checked): name -> (bound, inclusive).
FIELD_MINIMUMS: dict[str, tuple[float, bool]] = {
    "lr": (0.0, False), "sft_lr": (0.0, False), "adam_eps": (0.0, False), "max_grad_norm": (0.0, False),
    "weight_decay": (0.0, True), "beta": (0.0, True), "entropy_coef": (0.0, True), "sgd_momentum": (0.0, True), "top_k": (0, True),
    "warmup_steps": (0, True), "sft_steps": (0, True), "sft_batch_size": (1, True), "sft_episodes": (0, True),
    "branch_k": (0, True), "branch_points": (1, True), "eval_every": (0, True), "eval_tasks": (0, True), "eval_samples": (1, True), "log_samples": (0, True),
    "num_threads": (1, True), "env_threads": (1, True), "time_limit_s": (0.0, False),
}


#: Settings that apply to every env when the model is a tiny one (built from scratch, so it needs an SFT warm
#: start: without one every group is zero-spread and the gradient is exactly 0). 500 cosine SFT steps from 3e-3
#: down to 3e-4, then GRPO at 1e-4, below the SFT's final lr (any GRPO lr above it overshoots).
#: Chosen from the sweep in benchmarks/RESULTS.md, "GRPO defaults" (``benchmarks/grpo_defaults_sweep.py``).
TINY_DEFAULTS: dict[str, Any] = {
    "sft_steps": 500, "sft_lr": 3e-3, "sft_schedule": "cosine", "sft_min_lr_ratio": 0.1, "lr": 1e-4,
    "warmup_steps": 3,
}

#: Per-env settings (all models): token budgets in byte tokens (the tiny models; subword checkpoints need fewer):
#: ``max_new_tokens`` holds the expert's longest action and its end-of-turn id (countdown's are 46-49 bytes,
#: arithmetic's up to 44, search.multihop's up to 51, code.functions' up to 371), ``max_seq_len`` the prompt, a
#: full-length action and the env's error observation; and the rollout shape. Measured in benchmarks/RESULTS.md,
#: "GRPO defaults".
ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "arl/math.arithmetic-v1": {"max_new_tokens": 56, "max_seq_len": 384},
    "arl/math.countdown-v1": {"max_new_tokens": 64, "max_seq_len": 512},
    "arl/code.functions-v0": {
        "max_new_tokens": 384, "max_seq_len": 2048, "num_groups": 4, "group_size": 4, "eval_tasks": 16,
        "eval_samples": 2, "env_threads": 4,
    },
    "arl/search.multihop-v1": {"max_new_tokens": 64, "max_seq_len": 2048},
}
#: Tiny-model settings per env that differ from :data:`TINY_DEFAULTS` (the measurements behind each choice:
#: benchmarks/RESULTS.md, "GRPO defaults" and "GRPO tiny-model settings per env").
#: Countdown: SFT demonstrations from the in-order expert (``env_kwargs={"expert": "ordered"}``; same tasks and
#: rewards), which the tiny model can imitate (the generator's random-order expressions it cannot), 1500
#: constant-lr SFT steps, then GRPO at 3e-4, a tenth of that SFT lr.
#: code.functions: difficulty 1 of the generated set (13 fixed-rule families with at most one drawn parameter;
#: held-out tasks are new seeds), single-turn (``max_turns=1``: the byte model cannot use test feedback), 600
#: constant-lr SFT steps, GRPO at 3e-5 with 8 x 4 episodes, token budgets that hold difficulty 1's longest expert
#: action (272 bytes) and episode (844 bytes), 4 threads stepping the sandboxed envs (``env_threads``) and 40
#: GRPO steps (:data:`TINY_ENV_STEPS`). The SFT phases of these settings ship as warm starts
#: (``arl_baselines.grpo.train.SHIPPED_SFT_CHECKPOINTS``).
TINY_ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "arl/math.countdown-v1": {
        "sft_steps": 1500, "sft_schedule": "constant", "lr": 3e-4, "env_kwargs": {"expert": "ordered"},
    },
    "arl/code.functions-v0": {
        "sft_steps": 600, "sft_schedule": "constant", "sft_batch_size": 16, "sft_episodes": 512, "lr": 3e-5,
        "max_new_tokens": 320, "max_seq_len": 1024, "num_groups": 8, "group_size": 4, "eval_tasks": 32,
        "eval_samples": 4, "env_kwargs": {"difficulty": 1, "max_turns": 1},
    },
}


#: GRPO steps of ``train`` / ``arl-envs train`` when ``--steps`` is not given.
DEFAULT_GRPO_STEPS = 100
#: Tiny-model GRPO steps per env that differ from :data:`DEFAULT_GRPO_STEPS`. code.functions: 40 (a step is 32
#: sandboxed episodes of up to 320 tokens, ~4.4 s on a quiet core; held-out success rose 0.125 -> 0.234 in 30
#: steps and reached 0.281 after 100, benchmarks/RESULTS.md "GRPO defaults"), so the no-flag run stays within a
#: few CPU minutes.
TINY_ENV_STEPS: dict[str, int] = {"arl/code.functions-v0": 40}


def recommended_steps(env_id: str, *, tiny: bool) -> int:
    """GRPO steps ``train`` runs on ``env_id`` when none are given (:data:`DEFAULT_GRPO_STEPS`, or the tiny model's
    per-env number in :data:`TINY_ENV_STEPS`)."""
    return TINY_ENV_STEPS.get(env_id, DEFAULT_GRPO_STEPS) if tiny else DEFAULT_GRPO_STEPS


def recommended_settings(env_id: str, *, tiny: bool) -> dict[str, Any]:
    """Default :class:`GRPOConfig` fields for ``env_id`` (what ``arl-envs train`` uses under the user's flags).

    Args:
        env_id: A registered id.
        tiny: The model is a tiny one built from scratch (adds the SFT warm start and its learning rates).

    Returns:
        Field -> value (a fresh dict: ``env_kwargs`` included); empty for an env without tuned settings and a
        non-tiny model.
    """
    out: dict[str, Any] = dict(TINY_DEFAULTS) if tiny else {}
    out.update(ENV_DEFAULTS.get(env_id, {}))
    if tiny:
        out.update(TINY_ENV_DEFAULTS.get(env_id, {}))
    if "env_kwargs" in out:
        out["env_kwargs"] = dict(out["env_kwargs"])
    return out


@dataclass
class GRPOConfig:
    """Every setting of a GRPO run (SFT warm start, rollouts, loss, evaluation, logging).

    Rollouts:
        num_groups: Tasks per step; each is played ``group_size`` times from the same seed.
        group_size: Episodes per task (G in the GRPO paper).
        max_new_tokens: Sampled tokens per turn; a turn that reaches it without a stop token is a truncated turn.
        max_seq_len: Token budget of a whole episode (prompt + actions + observations); the decoder's static
            KV cache is sized from it. An episode whose next action or observation does not fit ends there as
            ``context_truncated``: it keeps the rewards it earned (``success=False``: the agent's failure) and IS
            trained on, never masked (see :meth:`arl_baselines.grpo.rollout.Episode.trainable`).
        temperature: Sampling temperature of rollouts (the loss uses the same temperature on the logits, as TRL).
        top_k: Keep only the top-k logits when sampling (0 disables). Non-zero top-k makes the sampling
            distribution differ from the trained one; leave at 0 for on-policy GRPO.
        use_instructions: Put the env's ``info["instructions"]`` before the task (as a system message when the
            tokenizer has a chat template). None: True for checkpoints, False for the byte-level tiny models
            (their instructions are a constant prefix they cannot read; dropping it saves compute).
        env_kwargs: Constructor kwargs for ``gym.make(env_id, **env_kwargs)``.
        train_seeds: Train on these task seeds only (each step draws ``num_groups`` of them, without replacement
            when there are enough): a fixed training set. None (default): fresh seeds from the training range
            every step.
        env_threads: Threads that step a batch's envs at once after each decoded turn (1: in turn). Worth it where
            a step waits on a sandbox: code.functions' recommended setting is 4 (its 8 x 4 batch graded in the
            bubblewrap sandbox: benchmarks/RESULTS.md, "GRPO defaults"). The episodes do not depend on it.
        mask_truncated: Zero the loss mask of episodes with a truncated turn or context (DAPO's overlong
            filtering; TRL ``mask_truncated_completions``). Their rewards still enter the group statistics.

    Loss (see :mod:`arl_baselines.grpo.loss` for formulas and sources):
        loss_type: ``grpo`` | ``bnpo`` | ``dr_grpo`` | ``dapo``.
        scale_rewards: ``group`` | ``batch`` | ``none``.
        epsilon_low / epsilon_high: Clip range ``[1 - epsilon_low, 1 + epsilon_high]`` of the ratio.
        beta: Weight of the k3 KL estimate to a frozen reference model (0 keeps no reference model).
        entropy_coef: Weight of an entropy bonus: each trained token's loss term minus ``entropy_coef`` times the
            entropy (nats) of the policy's temperature-scaled next-token distribution there, aggregated like the
            surrogate (PPO's ``c2`` term, Schulman et al. 2017, arXiv:1707.06347; verl's ``entropy_coeff``). 0 (the
            default) adds nothing. Against the entropy collapse on FrozenLake, 0.01 and 0.05 lowered held-out
            success (benchmarks/RESULTS.md).
        importance_sampling_level: ``token`` (GRPO) or ``sequence`` (GSPO).
        drop_zero_spread: Remove groups whose rewards have zero spread from the loss batch (their advantages are
            0 anyway; dropping them keeps them out of the token normaliser, as DAPO's dynamic sampling filter).
        num_iterations: Optimisation passes over each rollout batch (mu in the GRPO paper; > 1 makes the
            ratio differ from 1 and the clip matter).
        micro_batch_size: Episodes per forward/backward (gradient accumulation over the rollout batch).
        advantage_level: ``episode`` (GRPO: one advantage per episode) or ``step`` (GiGPO, Feng et al. 2025,
            "Group-in-Group Policy Optimization for LLM Agent Training", arXiv:2505.10978: the episode advantage
            plus ``step_advantage_weight`` times a step-level one, computed over the turns of a group's episodes
            that act from the same observation; see :func:`arl_baselines.grpo.loss.step_group_advantages`).
        step_advantage_weight: omega of GiGPO (1.0 in the paper).
        step_gamma: Discount of the step-level returns (0.95 in the paper).
        branch_k: Step groups by construction (:mod:`arl_baselines.grpo.branching`): after each rollout, at one
            uniformly drawn turn of each of the first ``branch_points`` episodes of every group, the env is
            restored from a snapshot taken before that turn (``env.unwrapped.snapshot()``) and ``branch_k``
            more actions are sampled there, each played by the policy to the episode's end (a Monte-Carlo
            return of that action, as the tree rollouts of TreeRL, Hou et al. 2025, arXiv:2506.11902). The
            trunk's turn and its branches form one GiGPO step group that shares an exact state; branch turns
            get only step-level advantages. Their env steps count like any other (``env_steps`` in
            metrics.jsonl). 0 (default): no branching. Needs ``advantage_level="step"``.
        branch_points: Episodes of each group that are branched from (one turn each) when ``branch_k > 0``.
        diversity: ``off`` (default) or ``ngram``: DARLING's diversity bonus (Li et al. 2025, arXiv:2509.02534),
            the reward multiplied by each completion's n-gram distinctness within its group
            (:mod:`arl_baselines.grpo.diversity`).
        diversity_ngram: n-gram length in words.
        diversity_threshold: Two completions are equivalent when their n-gram Jaccard similarity is at least
            this; None: the soft score (mean ``1 - Jaccard``).

    Optimiser:
        optimizer: ``adamw`` (default) or ``sgd`` (with ``sgd_momentum``).
        lr: GRPO learning rate. The default (1e-4) suits the tiny models; 5e-5 was steadier for tiny-S; pretrained
            checkpoints usually want 1e-6 to 1e-5. With a fresh Adam, 3e-4 and above lost success within a few
            steps on the tiny models (benchmarks/RESULTS.md).
        weight_decay, adam_betas, adam_eps: AdamW settings (betas/eps as TRL's defaults).
        max_grad_norm: Gradient-norm clip.
        warmup_steps: Linear learning-rate warm-up over the first GRPO steps, then constant.

    SFT warm start:
        sft_steps: Behaviour-cloning steps on expert trajectories before GRPO (0 skips SFT).
        sft_batch_size: Expert episodes per SFT step.
        sft_lr: SFT learning rate.
        sft_episodes: Distinct expert episodes collected (random seeds of the training range).
        sft_schedule: ``constant`` (default) or ``cosine`` (decay to ``sft_min_lr_ratio * sft_lr``). A cosine
            SFT ends sharp, and any GRPO lr above its final lr overshoots even along the exact gradient; after a
            constant-lr SFT, GRPO at or below ``sft_lr`` is stable. :data:`TINY_DEFAULTS` use ``cosine`` (3e-3
            down to 3e-4) with GRPO at 1e-4, below that final lr, which keeps the SFT's held-out success through
            GRPO where constant-lr SFT loses part of it (benchmarks/RESULTS.md, "GRPO defaults").
        sft_min_lr_ratio: Final lr of the cosine schedule as a fraction of ``sft_lr``.
        sft_error_rate: An imperfect demonstrator: the probability in [0, 1] that a demonstration's turn is a
            decoy, the expert's answer to a different task (well-formed, usually wrong; see
            :func:`arl_baselines.grpo.rollout.expert_episodes`). The demonstrations carry no reward, so imitation
            learns the decoys with the rest; 0 (default): the expert exactly. Meant for single-turn envs: on a
            multi-turn one a wrong decoy earns feedback and the next turn is drawn again, so the demonstrations
            mostly still succeed (arithmetic with ``max_attempts=3``: 0.97 at rate 0.3).

    Evaluation:
        eval_every: GRPO steps between evaluations (0: only before and after training).
        eval_tasks: Held-out tasks (seeds from ``EVAL_SEED_OFFSET``).
        eval_samples: Sampled episodes per held-out task (pass@k for k <= eval_samples).
        eval_temperature: Sampling temperature at evaluation.

    System:
        seed: Seeds torch and the task-seed stream.
        device: ``auto`` (cuda when available), ``cpu`` or ``cuda``.
        dtype: ``float32`` | ``bfloat16`` (parameters and compute; bfloat16 only on CUDA).
        compile: Compile the decode step with CUDA graphs; None: on CUDA only.
        num_threads: ``torch.set_num_threads`` (None leaves torch's default).
        progress: Show a tqdm progress bar.
        log_samples: Episodes written to ``samples.jsonl`` per step (0: none).
        time_limit_s: Stop GRPO early once the run has lasted this many seconds (the final evaluation still runs);
            None: no limit.
    """

    # rollouts
    num_groups: int = 8
    group_size: int = 8
    max_new_tokens: int = 48
    max_seq_len: int = 512
    temperature: float = 1.0
    top_k: int = 0
    use_instructions: bool | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    train_seeds: list[int] | None = None
    env_threads: int = 1
    mask_truncated: bool = True
    # loss
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    epsilon_low: float = 0.2
    epsilon_high: float = 0.28
    beta: float = 0.0
    entropy_coef: float = 0.0
    importance_sampling_level: str = "token"
    drop_zero_spread: bool = True
    num_iterations: int = 1
    micro_batch_size: int = 64
    advantage_level: str = "episode"
    step_advantage_weight: float = 1.0
    step_gamma: float = 0.95
    branch_k: int = 0
    branch_points: int = 1
    diversity: str = "off"
    diversity_ngram: int = 2
    diversity_threshold: float | None = 0.5
    # optimiser
    optimizer: str = "adamw"
    lr: float = 1e-4
    weight_decay: float = 0.0
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    sgd_momentum: float = 0.9
    max_grad_norm: float = 1.0
    warmup_steps: int = 10
    # SFT
    sft_steps: int = 0
    sft_batch_size: int = 32
    sft_lr: float = 3e-3
    sft_episodes: int = 2048
    sft_schedule: str = "constant"
    sft_min_lr_ratio: float = 0.1
    sft_error_rate: float = 0.0
    # evaluation
    eval_every: int = 0
    eval_tasks: int = 64
    eval_samples: int = 4
    eval_temperature: float = 1.0
    # system
    seed: int = 0
    device: str = "auto"
    dtype: str = "float32"
    compile: bool | None = None
    num_threads: int | None = None
    progress: bool = True
    log_samples: int = 2
    time_limit_s: float | None = None

    def __post_init__(self) -> None:
        self._check_types_and_minimums()
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.scale_rewards not in SCALE_REWARDS:
            raise ValueError(f"scale_rewards must be one of {SCALE_REWARDS}, got {self.scale_rewards!r}")
        if self.importance_sampling_level not in IMPORTANCE_SAMPLING_LEVELS:
            raise ValueError(
                f"importance_sampling_level must be one of {IMPORTANCE_SAMPLING_LEVELS}, "
                f"got {self.importance_sampling_level!r}"
            )
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (advantages compare episodes of a group), got {self.group_size}")
        for name in ("num_groups", "max_new_tokens", "max_seq_len", "num_iterations", "micro_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.epsilon_low < 1 or self.epsilon_high < 0:
            raise ValueError(f"need 0 <= epsilon_low < 1 and epsilon_high >= 0, got {self.epsilon_low}, {self.epsilon_high}")
        if self.temperature < 0 or self.eval_temperature < 0:
            raise ValueError("temperatures must be >= 0 (0 means greedy)")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.advantage_level not in ADVANTAGE_LEVELS:
            raise ValueError(f"advantage_level must be one of {ADVANTAGE_LEVELS}, got {self.advantage_level!r}")
        if self.branch_k and self.advantage_level != "step":
            raise ValueError(f"branch_k={self.branch_k} makes step groups: it needs advantage_level='step'")
        if self.branch_k and self.branch_points > self.group_size:
            raise ValueError(f"branch_points={self.branch_points} is more than the group's {self.group_size} episodes")
        if self.diversity not in DIVERSITY_MODES:
            raise ValueError(f"diversity must be one of {DIVERSITY_MODES}, got {self.diversity!r}")
        if self.sft_schedule not in SFT_SCHEDULES:
            raise ValueError(f"sft_schedule must be one of {SFT_SCHEDULES}, got {self.sft_schedule!r}")
        if not 0.0 <= self.sft_error_rate <= 1.0:
            raise ValueError(f"sft_error_rate must be in [0, 1], got {self.sft_error_rate}")
        if self.train_seeds is not None and not self.train_seeds:
            raise ValueError("train_seeds must be None or a non-empty list of task seeds")
        if self.dtype not in ("float32", "bfloat16"):
            raise ValueError(f"dtype must be float32 or bfloat16, got {self.dtype!r}")

    def _check_types_and_minimums(self) -> None:
        """Validate every field against its type hint (pydantic, lax: ``"1e-4"`` becomes 1e-4, ``"abc"`` fails)
        and :data:`FIELD_MINIMUMS`; store the validated values.

        Raises:
            ValueError: Naming the field, its value and what was expected.
        """
        for name, adapter in _field_adapters().items():
            value = getattr(self, name)
            try:
                value = adapter.validate_python(value)
            except pydantic.ValidationError as exc:
                why = exc.errors()[0].get("msg", str(exc))
                raise ValueError(f"GRPOConfig.{name}: invalid value {value!r} ({why})") from None
            if isinstance(value, float) and (math.isnan(value) or (math.isinf(value) and name != "time_limit_s")):
                raise ValueError(f"GRPOConfig.{name} must be a finite number, got {value!r}")
            setattr(self, name, value)
            bound = FIELD_MINIMUMS.get(name)
            if bound is not None and value is not None and (value < bound[0] or (value == bound[0] and not bound[1])):
                raise ValueError(f"GRPOConfig.{name} must be {'>=' if bound[1] else '>'} {bound[0]}, got {value!r}")

    @property
    def batch_episodes(self) -> int:
        """Episodes per GRPO step (``num_groups * group_size``)."""
        return self.num_groups * self.group_size

    def replace(self, **changes: Any) -> GRPOConfig:
        """A copy with ``changes`` applied (validated)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> GRPOConfig:
        """Build from keyword arguments, with a clear error for unknown names.

        Raises:
            TypeError: A name that is not a field of :class:`GRPOConfig`.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise TypeError(f"unknown GRPO setting(s) {unknown}; known: {sorted(names)}")
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict of every setting (a value that cannot be copied, such as an opponent object holding a
        lock in ``env_kwargs``, is recorded by its ``repr``)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _plain(value: Any) -> Any:
    """A deep copy of ``value``; where a part cannot be copied, that part's ``repr`` (dicts, lists and tuples are
    walked)."""
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - any object that refuses to be copied is recorded by its repr
        if isinstance(value, dict):
            return {k: _plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(_plain(v) for v in value)
        return repr(value)


@functools.cache
def _field_adapters() -> dict[str, pydantic.TypeAdapter]:
    """A pydantic validator per :class:`GRPOConfig` field, from its type hint."""
    hints = typing.get_type_hints(GRPOConfig)
    return {f.name: pydantic.TypeAdapter(hints[f.name]) for f in dataclasses.fields(GRPOConfig)}


#: A small learning recipe on ``arl/math.arithmetic`` difficulty 1, integer kind (for ``train``/``sft_vs_grpo``
#: with a tiny model): SFT on expert trajectories, then GRPO at a small learning rate. The CI learning test
#: (tiny-S, ~90 s on 2 CPU cores; docs site, Training page) and ``benchmarks/grpo_cpu.py`` use it.
ARITHMETIC_LEARNING_RECIPE: dict[str, Any] = {
    "env_kwargs": {"difficulty": 1, "kinds": ["integer"]},
    "sft_steps": 800,
    "sft_lr": 2e-3,
    "sft_schedule": "cosine",
    "env_defaults": False,
    "num_groups": 16,
    "group_size": 8,
    "lr": 5e-5,
    "max_seq_len": 128,
    "eval_tasks": 64,
    "eval_samples": 4,
    "progress": False,
}
