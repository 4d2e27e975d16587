"""TRL's ``GRPOTrainer`` on arl envs: single-turn via reward functions, multi-turn via ``rollout_func``.

Tested with trl 1.16.0, transformers 5.24.0, datasets 5.2.0, accelerate 1.15.0, torch 2.13 (CPU).

How ``info`` maps onto TRL:

* ``info["reward_components"]`` -> one TRL reward function per part (:func:`env_reward_funcs`): TRL sums
  ``reward_weights * reward_funcs`` per completion and logs ``rewards/<name>/mean`` per function, so the parts are
  logged separately and their weighted sum is exactly the env's reward (weights 1). The env is stepped once per
  completion (:class:`EnvScorer` caches the step for the other parts).
* ``info["env_error"]`` (infrastructure failure) -> the reward functions return ``None`` for that completion (TRL
  leaves a ``None`` out of the reward: NaN, ignored by its ``nansum``) and log ``arl/env_errors``; in the
  multi-turn path the episode's ``env_mask`` is all zeros, so none of its tokens is trained on.
* Message boundaries -> ``env_mask`` (multi-turn): ``rollout_func`` returns the whole episode after the prompt as
  ``completion_ids`` (actions and observations interleaved, as the GRPO baseline samples them) with ``env_mask`` 1
  on the sampled action tokens and 0 on observation tokens; TRL multiplies it into its loss mask
  (``completion_mask * tool_mask``).
* ``info["success"]`` -> forwarded as the extra rollout field ``env_success`` and logged by the reward function.

Multi-turn: TRL 1.16 offers two hooks. ``environment_factory`` exposes an environment's public methods as tools
and runs TRL's own tool-calling loop; it needs a chat template that renders tool calls and a response parser
TRL knows for that template (``add_response_schema``: Qwen3-style templates), and it feeds tool results back
through the template's tool role, so an env's own action formats (``\\boxed{}``, fenced code, ``click("12")``)
and its non-tool feedback turns (format errors) do not fit it. ``rollout_func`` hands the whole rollout to us:
:class:`ArlRollout` plays the env with the GRPO baseline's :class:`~arl_baselines.grpo.rollout.RolloutEngine`
on the trainer's own model and returns ids, log-probs and the mask; that is the hook used here.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import gymnasium as gym

import arl_envs  # noqa: F401  (registers ids)
from arl_envs.core.errors import DependencyNotInstalled

#: Completions scored and kept by :class:`EnvScorer` (older ones are dropped first).
SCORER_CACHE_SIZE = 4096


def _require_trl() -> Any:
    try:
        import trl
    except ImportError as exc:  # pragma: no cover - the [trl] extra installs it
        raise DependencyNotInstalled("pip install 'arl-envs[trl]'  (TRL's GRPOTrainer)") from exc
    return trl


def _text(completion: Any) -> str:
    """A TRL completion (plain string, or conversational ``[{"role": "assistant", "content": ...}]``) as text."""
    if isinstance(completion, str):
        return completion
    return "".join(str(m.get("content", "")) for m in completion if m.get("role") == "assistant")


class EnvScorer:
    """Steps an env once per (seed, completion) and keeps the resulting ``(reward, info)``.

    Args:
        env_id: A single-turn env id (one action ends the episode, e.g. ``arl/math.arithmetic-v1``).
        env_kwargs: Env constructor kwargs.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
        self.env = gym.make(env_id, **(env_kwargs or {}))
        self._cache: dict[tuple[int, str], tuple[float, dict[str, Any]]] = {}

    def score(self, seed: int, text: str) -> tuple[float, dict[str, Any]]:
        """``(reward, info)`` of the action ``text`` on the task of ``seed``."""
        key = (int(seed), text)
        if key not in self._cache:
            self.env.reset(seed=int(seed))
            _, reward, _, _, info = self.env.step(text)
            if len(self._cache) >= SCORER_CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = (float(reward), info)
        return self._cache[key]

    def close(self) -> None:
        """Close the env."""
        self.env.close()


def env_reward_funcs(scorer: EnvScorer, parts: list[str]) -> list[Callable[..., list[float | None]]]:
    """One TRL reward function per reward part (``info["reward_components"][part]``).

    Each function takes TRL's keyword arguments (``prompts``, ``completions``, the dataset's ``seed`` column,
    ``log_metric``...) and returns one float per completion, or None where the env reported ``env_error``.
    The first one also logs ``arl/success`` and ``arl/env_errors`` (fractions of the batch).
    """

    def make(part: str, first: bool) -> Callable[..., list[float | None]]:
        def reward(completions: list[Any], seed: list[int], log_metric: Any = None, **_: Any) -> list[float | None]:
            out: list[float | None] = []
            ok = errors = 0
            for completion, s in zip(completions, seed):
                _, info = scorer.score(s, _text(completion))
                if info.get("env_error") is not None:
                    out.append(None)
                    errors += 1
                    continue
                out.append(float(info["reward_components"].get(part, 0.0)))
                ok += bool(info.get("success"))
            if first and log_metric is not None:
                log_metric("arl/success", ok / max(len(out), 1))
                log_metric("arl/env_errors", errors / max(len(out), 1))
            return out

        reward.__name__ = f"arl_{part}"
        return reward

    return [make(p, i == 0) for i, p in enumerate(parts)]


def prompt_dataset(env_id: str, seeds: list[int], env_kwargs: dict[str, Any] | None = None) -> Any:
    """A ``datasets.Dataset`` of conversational prompts from env resets, with a ``seed`` column.

    ``prompt`` is ``[{"role": "system", "content": info["instructions"]}, {"role": "user", "content": info["task"]}]``
    (the env's chat messages, as :class:`arl_envs.wrappers.ChatMessages` gives them).
    """
    from datasets import Dataset

    from arl_envs.wrappers import ChatMessages

    env = ChatMessages(gym.make(env_id, **(env_kwargs or {})))
    rows = []
    for s in seeds:
        _, info = env.reset(seed=int(s))
        rows.append({"prompt": info["messages"], "seed": int(s)})
    env.close()
    return Dataset.from_list(rows)


class ArlRollout:
    """A TRL ``rollout_func`` that plays whole multi-turn episodes of an arl env.

    TRL calls ``rollout(prompts, trainer)`` with this process's slice of the batch, in which TRL's sampler has
    already repeated each prompt ``num_generations`` times (trl 1.16 ``RepeatSampler``); the rollout plays one
    episode per prompt it receives. The prompt's seed is looked up from the prompt (the dataset is
    :func:`prompt_dataset` of the same env), the episode is played by
    :class:`~arl_baselines.grpo.rollout.RolloutEngine` on the trainer's model, and the result is
    ``prompt_ids`` / ``completion_ids`` (everything after the prompt) / ``logprobs`` / ``env_mask`` plus the fields
    ``env_return``, ``env_success``, ``env_error`` that TRL forwards to the reward functions.

    Args:
        env_id: Env id.
        dataset: The training dataset (its ``prompt`` / ``seed`` columns).
        tokenizer: The trainer's tokenizer (``processing_class``).
        max_new_tokens: Tokens per turn.
        max_seq_len: Token budget per episode (prompt included).
        env_kwargs: Env kwargs.
    """

    def __init__(self, env_id: str, dataset: Any, tokenizer: Any, *, max_new_tokens: int, max_seq_len: int,
                 env_kwargs: dict[str, Any] | None = None) -> None:
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs or {})
        self.tokenizer = tokenizer
        self.max_new_tokens, self.max_seq_len = int(max_new_tokens), int(max_seq_len)
        self.seed_of = {_key(p): int(s) for p, s in zip(dataset["prompt"], dataset["seed"])}
        self._engine: Any = None

    def _engine_for(self, trainer: Any, batch: int) -> Any:
        from arl_baselines.grpo.policy import ChatFormat, Policy, _stop_ids
        from arl_baselines.grpo.rollout import RolloutEngine

        model = trainer.accelerator.unwrap_model(trainer.model)
        if self._engine is None or self._engine.batch_size != batch or self._engine.policy.model is not model:
            tok = self.tokenizer
            policy = Policy(model=model, tokenizer=tok, chat=ChatFormat(tok), stop_ids=_stop_ids(tok, model),
                            pad_id=int(tok.pad_token_id), name="trl", is_tiny=False)
            if self._engine is not None:
                self._engine.close()
            self._engine = RolloutEngine(policy, self.env_id, env_kwargs=self.env_kwargs, batch_size=batch,
                                         max_new_tokens=self.max_new_tokens, max_seq_len=self.max_seq_len,
                                         use_instructions=True, compile=False)
        return self._engine

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        seeds = [self.seed_of[_key(p)] for p in prompts]
        engine = self._engine_for(trainer, len(seeds))
        was_training = trainer.model.training
        episodes = engine.run(seeds, 1, temperature=trainer.temperature)
        trainer.model.train(was_training)
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask",
                                                     "env_return", "env_success", "env_error")}
        for ep in episodes:
            p = ep.prompt_len
            out["prompt_ids"].append(ep.ids[:p])
            out["completion_ids"].append(ep.ids[p:])
            out["logprobs"].append(ep.sample_logprobs[p:])
            # 1 on sampled action tokens, 0 on observations; an env-error episode is not trained on at all
            out["env_mask"].append([0] * (len(ep.ids) - p) if ep.env_error is not None else ep.mask[p:])
            out["env_return"].append(float(ep.reward))
            out["env_success"].append(bool(ep.success))
            out["env_error"].append(ep.env_error)
        return out

    def close(self) -> None:
        """Close the engine's envs."""
        if self._engine is not None:
            self._engine.close()


def _key(prompt: Any) -> str:
    import json

    return json.dumps(prompt, sort_keys=True)


def env_return_reward(env_return: list[float], env_success: list[bool], env_error: list[str | None],
                      log_metric: Any = None, **_: Any) -> list[float | None]:
    """The reward function of the multi-turn path: the episode return from :class:`ArlRollout` (None on env error)."""
    if log_metric is not None:
        log_metric("arl/success", sum(env_success) / max(len(env_success), 1))
        log_metric("arl/env_errors", sum(e is not None for e in env_error) / max(len(env_error), 1))
    return [None if e is not None else float(r) for r, e in zip(env_return, env_error)]


def tiny_model_and_tokenizer(size: str = "tiny", seed: int = 0) -> tuple[Any, Any]:
    """A randomly initialised tiny Llama and the byte tokenizer (built locally; nothing downloaded)."""
    from arl_baselines.grpo.policy import load_policy

    policy = load_policy(size, seed=seed)
    tok = policy.tokenizer
    tok.padding_side = "left"  # TRL left-pads prompts
    policy.model.config.use_cache = True
    return policy.model, tok


def grpo_config(output_dir: str, *, steps: int, group: int, max_completion_length: int, **overrides: Any) -> Any:
    """A small CPU ``trl.GRPOConfig`` (no reporting, no checkpoints)."""
    trl = _require_trl()
    kwargs: dict[str, Any] = dict(
        output_dir=output_dir, max_steps=steps, per_device_train_batch_size=group, num_generations=group,
        max_completion_length=max_completion_length, learning_rate=1e-4, logging_steps=1, report_to="none",
        save_strategy="no", use_cpu=True, bf16=False, fp16=False, temperature=1.0, seed=0,
        dataloader_num_workers=0,
    )
    kwargs.update(overrides)
    return trl.GRPOConfig(**kwargs)


def train_single_turn(env_id: str = "arl/math.arithmetic-v1", *, steps: int = 2, group: int = 4, seeds: int = 8,
                      max_completion_length: int = 16, output_dir: str = "runs/trl-single",
                      env_kwargs: dict[str, Any] | None = None, model: Any = None, tokenizer: Any = None
                      ) -> list[dict[str, Any]]:
    """``GRPOTrainer`` on a single-turn env: TRL samples, the env's reward parts are the reward functions.

    Returns:
        ``trainer.state.log_history`` (one dict per logged step: ``rewards/arl_task/mean``, ``arl/success``, ...).
    """
    trl = _require_trl()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if model is None:
        model, tokenizer = tiny_model_and_tokenizer()
    probe = gym.make(env_id, **(env_kwargs or {}))
    _, info = probe.reset(seed=0)
    _, _, _, _, step_info = probe.step(probe.unwrapped.expert_action())
    parts = sorted(step_info["reward_components"])
    probe.close()
    scorer = EnvScorer(env_id, env_kwargs)
    try:
        trainer = trl.GRPOTrainer(
            model=model, processing_class=tokenizer, reward_funcs=env_reward_funcs(scorer, parts),
            args=grpo_config(output_dir, steps=steps, group=group, max_completion_length=max_completion_length),
            train_dataset=prompt_dataset(env_id, list(range(seeds)), env_kwargs),
        )
        trainer.train()
        return list(trainer.state.log_history)
    finally:
        scorer.close()


def train_multi_turn(env_id: str = "arl/math.tool-v1", *, steps: int = 2, group: int = 2, seeds: int = 4,
                     max_new_tokens: int = 8, max_seq_len: int = 1024, output_dir: str = "runs/trl-multi",
                     env_kwargs: dict[str, Any] | None = None, model: Any = None, tokenizer: Any = None
                     ) -> list[dict[str, Any]]:
    """``GRPOTrainer`` on a multi-turn env through ``rollout_func`` (:class:`ArlRollout`).

    Returns:
        ``trainer.state.log_history``.
    """
    trl = _require_trl()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if model is None:
        model, tokenizer = tiny_model_and_tokenizer()
    dataset = prompt_dataset(env_id, list(range(seeds)), env_kwargs)
    rollout = ArlRollout(env_id, dataset, tokenizer, max_new_tokens=max_new_tokens, max_seq_len=max_seq_len,
                         env_kwargs=env_kwargs)
    try:
        trainer = trl.GRPOTrainer(
            model=model, processing_class=tokenizer, reward_funcs=[env_return_reward], rollout_func=rollout,
            args=grpo_config(output_dir, steps=steps, group=group, max_completion_length=max_seq_len),
            train_dataset=dataset,
        )
        trainer.train()
        return list(trainer.state.log_history)
    finally:
        rollout.close()


if __name__ == "__main__":  # pragma: no cover - a manual run
    import json

    print(json.dumps(train_single_turn()[-1], indent=1, default=str))
    print(json.dumps(train_multi_turn()[-1], indent=1, default=str))
