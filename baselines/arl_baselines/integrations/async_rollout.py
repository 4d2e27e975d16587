"""An asyncio rollout loop: many arl envs stepped concurrently, one batched policy (the pattern async trainers use).

Each episode is a coroutine. Env calls (``reset`` / ``step``) are blocking (sandboxes, browsers, retrievers), so
they run in a thread pool (``asyncio.to_thread``); while one env waits on its sandbox or browser, the others go on.
The policy is shared: :class:`BatchedPolicy` queues the requests of all episodes and answers them in batches (up to
``max_batch`` at once, or whatever is waiting after ``max_wait_s``), the way an inference server batches requests.

How ``info`` maps onto the records (:class:`Rollout`): ``messages`` (from :class:`arl_envs.wrappers.ChatMessages`)
with ``trainable[i]`` True exactly on assistant messages (the loss mask at message granularity: a trainer
tokenises each message and masks every non-assistant one); ``reward_components`` per step; ``env_error`` (an
episode that ended on one is kept, flagged, and should be left out of the loss and of group statistics);
``success`` from the last step. Tested with Python 3.11 asyncio, gymnasium 1.x.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import gymnasium as gym

import arl_envs  # noqa: F401  (registers ids)
from arl_envs.wrappers import ChatMessages

#: Default longest wait (s) of a policy request for others to join its batch.
DEFAULT_MAX_WAIT_S = 0.005

Act = Callable[[gym.Env, str, dict[str, Any]], Awaitable[str]]


@dataclass
class Rollout:
    """One episode as an async trainer receives it.

    Attributes:
        env_id, seed: What was played.
        messages: Chat messages (system, user, then assistant / tool / user turns).
        trainable: Per message: True on assistant messages (what the loss is computed on).
        rewards: Per-step rewards.
        reward_components: Per-step ``info["reward_components"]``.
        success: ``info["success"]`` of the last step.
        env_error: ``info["env_error"]`` when the episode ended on an infrastructure failure.
        seconds: Wall time of the episode (s).
    """

    env_id: str
    seed: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    trainable: list[bool] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    reward_components: list[dict[str, float]] = field(default_factory=list)
    success: bool = False
    env_error: str | None = None
    seconds: float = 0.0

    @property
    def total_reward(self) -> float:
        """The episode return."""
        return float(sum(self.rewards))


class BatchedPolicy:
    """Answers concurrent ``act`` requests in batches with a blocking ``generate(list of messages) -> list[str]``.

    Args:
        generate: Called (in a worker thread) with a batch of message lists; returns one action per list.
        max_batch: Largest batch.
        max_wait_s: Longest time (s) the first request of a batch waits for more.

    Attributes:
        batch_sizes: Size of every batch answered (to see that requests were batched).
    """

    def __init__(self, generate: Callable[[list[list[dict[str, Any]]]], list[str]], max_batch: int = 16,
                 max_wait_s: float = DEFAULT_MAX_WAIT_S) -> None:
        self.generate, self.max_batch, self.max_wait_s = generate, int(max_batch), float(max_wait_s)
        self.batch_sizes: list[int] = []
        self._queue: asyncio.Queue[tuple[list[dict[str, Any]], asyncio.Future[str]]] | None = None
        self._worker: asyncio.Task[None] | None = None

    async def act(self, env: gym.Env, observation: str, info: dict[str, Any]) -> str:
        """The next action for the episode whose chat so far is ``info["messages"]``."""
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.create_task(self._serve())
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        await self._queue.put((info["messages"], fut))
        return await fut

    async def _serve(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            deadline = time.perf_counter() + self.max_wait_s
            while len(batch) < self.max_batch:
                timeout = deadline - time.perf_counter()
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), max(timeout, 0)))
                except asyncio.TimeoutError:
                    break
            self.batch_sizes.append(len(batch))
            try:
                actions = await asyncio.to_thread(self.generate, [m for m, _ in batch])
                for (_, fut), a in zip(batch, actions):
                    fut.set_result(a)
            except Exception as exc:  # noqa: BLE001 - handed to every waiting episode
                for _, fut in batch:
                    fut.set_exception(exc)

    async def aclose(self) -> None:
        """Stop the batching task."""
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker, self._queue = None, None


async def expert_act(env: gym.Env, observation: str, info: dict[str, Any]) -> str:
    """The env's scripted expert as an async policy (for tests and as a reference)."""
    return env.unwrapped.expert_action()


async def play(env_id: str, seed: int, act: Act, env_kwargs: dict[str, Any] | None = None) -> Rollout:
    """Play one episode: env calls in a worker thread, the policy awaited."""
    start = time.perf_counter()
    env = ChatMessages(await asyncio.to_thread(gym.make, env_id, **(env_kwargs or {})))
    ro = Rollout(env_id, seed)
    try:
        obs, info = await asyncio.to_thread(env.reset, seed=seed)
        while True:
            action = await act(env, obs, info)
            obs, reward, terminated, truncated, info = await asyncio.to_thread(env.step, action)
            ro.rewards.append(float(reward))
            ro.reward_components.append(dict(info.get("reward_components", {})))
            if info.get("env_error") is not None:
                ro.env_error = str(info["env_error"])
            if terminated or truncated:
                ro.success = bool(info.get("success", False))
                break
    finally:
        await asyncio.to_thread(env.close)
    ro.messages = info["messages"]
    ro.trainable = [m["role"] == "assistant" for m in ro.messages]
    ro.seconds = time.perf_counter() - start
    return ro


async def rollouts(env_id: str, seeds: list[int], act: Act, *, concurrency: int = 8,
                   env_kwargs: dict[str, Any] | None = None) -> list[Rollout]:
    """Play one episode per seed, at most ``concurrency`` at a time; results in seed order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(seed: int) -> Rollout:
        async with gate:
            return await play(env_id, seed, act, env_kwargs)

    return list(await asyncio.gather(*(one(s) for s in seeds)))


def lm_generate(model: Any, tokenizer: Any, max_new_tokens: int = 16) -> Callable[[list[list[dict[str, Any]]]], list[str]]:
    """A batched ``generate`` for :class:`BatchedPolicy` from a HF causal LM and tokenizer (left padding)."""
    import torch

    def generate(batch: list[list[dict[str, Any]]]) -> list[str]:
        texts = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in batch]
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**enc, do_sample=True, max_new_tokens=max_new_tokens,
                                 pad_token_id=tokenizer.pad_token_id)
        return tokenizer.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)

    return generate


if __name__ == "__main__":  # pragma: no cover - a manual run
    from arl_baselines.integrations.trl_grpo import tiny_model_and_tokenizer

    async def main() -> None:
        policy = BatchedPolicy(lm_generate(*tiny_model_and_tokenizer(), max_new_tokens=8))
        res = await rollouts("arl/math.tool-v1", list(range(16)), policy.act, concurrency=16)
        await policy.aclose()
        print(f"{len(res)} episodes, batches {policy.batch_sizes}, mean return "
              f"{sum(r.total_reward for r in res) / len(res):+.3f}")

    asyncio.run(main())
