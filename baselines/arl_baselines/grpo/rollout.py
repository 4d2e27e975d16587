"""Group rollouts against any arl-envs id, expert trajectories for SFT, and held-out evaluation.

An episode is ONE token sequence: the prompt, then for each turn the policy's sampled ids (stop token included)
followed by the ids of the env's next observation. ``mask`` is 1 exactly on the sampled ids and 0 on prompt and
observation ids, and the ids stored are the ids sampled (never re-tokenised text), so the trainer computes
log-probabilities of exactly what the sampler produced (``arl_envs/CONTRACT.md``, section 2, "Observations as chat messages").

Episodes that cannot be trained on are kept (their rewards are real) but flagged and counted:

* ``truncated_turn``: a turn reached ``max_new_tokens`` without a stop token (the cut text is still sent to the
  env, which scores it, and the episode ends there); masked out of the loss when ``mask_truncated`` (DAPO);
* ``context_truncated``: the episode ran out of the ``max_seq_len`` token budget (an observation or action did not
  fit); it ends there with the rewards it earned (unfinished: the agent's failure) and IS trained on;
* ``env_error``: the env reported an infrastructure failure (``info["env_error"]``); the reward is meaningless,
  so the episode is also left out of its group's advantage statistics.
"""

from __future__ import annotations

import math
import random
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

import arl_envs  # noqa: F401  (registers the env ids)
from arl_baselines.grpo.config import TRAIN_SEED_RANGE
from arl_baselines.grpo.decode import FastDecoder
from arl_baselines.grpo.policy import Policy

#: Extra cache slots kept free after a prompt so that at least one token can be sampled.
MIN_FREE_SLOTS = 1
#: Decoder cache slots per token of episode budget in multi-turn envs: rows of a batch share the cache's write
#: position, so rows that stop early or get short observations leave holes; the episode budget itself
#: (``max_seq_len``) is counted per row on its real tokens.
CACHE_SLACK = 2


@dataclass
class Episode:
    """One episode as the trainer sees it.

    Attributes:
        group: Index of its group in the batch (episodes of a group share ``seed``).
        seed: Env reset seed (the task).
        task_id: ``info["task_id"]``.
        ids: The whole token sequence (prompt, actions, observations).
        mask: 1 on the policy's sampled ids (stop tokens included), 0 elsewhere; same length as ``ids``.
        sample_logprobs: Log-probs of ``ids`` under the sampler (0 where ``mask`` is 0).
        reward: Episode return (sum of step rewards).
        success: ``info["success"]`` of the last step.
        turns: Actions taken.
        invalid_actions: Steps whose ``info["action_error"]`` was set.
        truncated_turn: Some turn hit the token limit.
        context_truncated: The episode ran out of token budget.
        env_truncated: The env truncated it (turn budget), or it ended on an env error.
        env_error: ``info["env_error"]`` when the env failed, else None.
        prompt_len: Tokens of the first prompt.
        actions: Decoded actions (what the env received).
        observations: Observations after each action.
        states: The observation each action was taken from (the first observation, then ``observations[:-1]``):
            GiGPO's anchor states.
        step_rewards: Reward of each step.
        turn_spans: ``(start, end)`` of each action's sampled ids in ``ids``.
    """

    group: int
    seed: int
    task_id: str = ""
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    sample_logprobs: list[float] = field(default_factory=list)
    reward: float = 0.0
    success: bool = False
    turns: int = 0
    invalid_actions: int = 0
    truncated_turn: bool = False
    context_truncated: bool = False
    env_truncated: bool = False
    env_error: str | None = None
    prompt_len: int = 0
    actions: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    step_rewards: list[float] = field(default_factory=list)
    turn_spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def sampled_tokens(self) -> int:
        """Tokens the policy sampled (sum of ``mask``)."""
        return sum(self.mask)

    @property
    def env_tokens(self) -> int:
        """Observation tokens after the prompt."""
        return len(self.ids) - self.prompt_len - self.sampled_tokens

    def trainable(self, mask_truncated: bool = True) -> bool:
        """Whether the episode's tokens may enter the loss.

        Not when the env failed (its reward means nothing), and not for a truncated turn when masking those
        (DAPO's overlong filtering). A ``context_truncated`` episode IS trained on: it ended because its next
        observation (or action) did not fit, which scores as the agent's failure, never silently masked.
        """
        if self.env_error is not None or self.sampled_tokens == 0:
            return False
        return not (mask_truncated and self.truncated_turn)


class RolloutEngine:
    """Plays batches of episodes of one env id with one policy through a :class:`FastDecoder`.

    Args:
        policy: The policy.
        env_id: Gymnasium id (``arl/...``).
        env_kwargs: Constructor kwargs of the env.
        batch_size: Episodes per decoder batch (fixed: the decoder's cache and CUDA graph are per batch size);
            smaller requests are padded with inactive rows, larger ones run in chunks.
        max_new_tokens: Token limit per turn.
        max_seq_len: Token budget per episode.
        use_instructions: Put ``info["instructions"]`` in the prompt.
        compile: Passed to :class:`FastDecoder`.
        env_threads: Threads that step the batch's envs at once after each decoded turn (each env is stepped by
            one thread; sandboxed code runs in its own processes, so grading overlaps). 1 (default): in turn.
            The episodes are the same either way (each env sees only its own actions; tested).
    """

    def __init__(
        self,
        policy: Policy,
        env_id: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        batch_size: int,
        max_new_tokens: int,
        max_seq_len: int,
        use_instructions: bool,
        compile: bool | None = None,
        env_threads: int = 1,
    ) -> None:
        if int(env_threads) < 1:
            raise ValueError(f"env_threads must be >= 1, got {env_threads}")
        self.policy = policy
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.batch_size = int(batch_size)
        self.max_new_tokens = int(max_new_tokens)
        self.max_seq_len = int(max_seq_len)
        self.use_instructions = bool(use_instructions)
        self.compile = compile
        self.envs: list[Any] = []
        self.env_threads = int(env_threads)
        self._pool: ThreadPoolExecutor | None = None
        self._decoder: FastDecoder | None = None
        #: Called as ``before_step(episode, env)`` right before each env step of :meth:`play` (None: nothing);
        #: :class:`arl_baselines.grpo.branching.Brancher` snapshots the env there.
        self.before_step: Callable[[Episode, Any], None] | None = None
        probe = self._env(0)
        self.max_turns = int(getattr(probe.unwrapped, "max_turns", 1))
        self.json_format = getattr(probe.unwrapped, "action_format", "native") == "json"
        self.end_of_turn_id = end_of_turn_id(policy)

    @property
    def max_completion_tokens(self) -> int:
        """Most tokens an episode can sample (``max_new_tokens * max_turns``; Dr. GRPO's constant normaliser)."""
        return self.max_new_tokens * self.max_turns

    @property
    def decoder(self) -> FastDecoder:
        """The decoder (built on first use)."""
        if self._decoder is None:
            p = self.policy
            self._decoder = FastDecoder(
                p.model,
                batch_size=self.batch_size,
                max_len=self.max_seq_len * (CACHE_SLACK if self.max_turns > 1 else 1),
                pad_id=p.pad_id,
                stop_ids=p.stop_ids,
                compile=self.compile,
            )
        return self._decoder

    def _env(self, i: int) -> Any:
        while len(self.envs) <= i:
            self.envs.append(gym.make(self.env_id, **self.env_kwargs))
        return self.envs[i]

    def close(self) -> None:
        """Close every env (and the stepping threads)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for env in self.envs:
            env.close()
        self.envs.clear()

    def _step_envs(self, calls: list[tuple[Any, str]]) -> list[tuple[Any, ...]]:
        """``env.step(text)`` for each ``(env, text)``, in ``env_threads`` threads; results in input order."""
        if self.env_threads <= 1 or len(calls) <= 1:
            return [env.step(text) for env, text in calls]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.env_threads, thread_name_prefix="arl-rollout-env")
        futures = [self._pool.submit(env.step, text) for env, text in calls]
        wait(futures)  # every step has returned before an exception leaves: no env is still stepping behind it
        return [f.result() for f in futures]

    def prompt(self, env: Any, seed: int) -> tuple[list[int], str, Any]:
        """Reset ``env`` with ``seed``; return ``(prompt ids, first observation, info)``."""
        obs, info = env.reset(seed=int(seed))
        tools = info.get("tools") if self.json_format else None
        task = info.get("task")
        if task is None:  # the observation is the whole prompt (instructions included when the env has them)
            return self.policy.chat.prompt_ids(obs, None, tools), obs, info
        # the first observation is "instructions + blank line + task"; info gives the parts separately, so the
        # instructions go where the chat template wants them (system message), or are left out
        instructions = info.get("instructions") if self.use_instructions else None
        return self.policy.chat.prompt_ids(str(task), instructions, tools), obs, info

    @torch.no_grad()
    def run(
        self,
        seeds: list[int],
        group_size: int,
        *,
        temperature: float = 1.0,
        top_k: int = 0,
        generator: torch.Generator | None = None,
    ) -> list[Episode]:
        """Play ``group_size`` episodes of each seed's task.

        Args:
            seeds: One reset seed per group.
            group_size: Episodes per seed (contiguous in the result).
            temperature: Sampling temperature (0: greedy).
            top_k: Top-k sampling (0: off).
            generator: RNG for sampling.

        Returns:
            ``len(seeds) * group_size`` episodes, group by group.

        Raises:
            ValueError: A prompt longer than ``max_seq_len``.
        """
        wanted = [(g, s) for g, s in enumerate(seeds) for _ in range(group_size)]
        episodes: list[Episode] = []
        for start in range(0, len(wanted), self.batch_size):
            episodes += self._run_batch(wanted[start : start + self.batch_size], temperature, top_k, generator)
        return episodes

    def _run_batch(
        self, wanted: list[tuple[int, int]], temperature: float, top_k: int, generator: torch.Generator | None
    ) -> list[Episode]:
        eps = [Episode(group=g, seed=s) for g, s in wanted]
        prompts = [self._start_episode(ep, self._env(i)) for i, ep in enumerate(eps)]
        return self.play(eps, prompts, temperature, top_k, generator)

    @torch.no_grad()
    def play(
        self,
        eps: list[Episode],
        prompts: list[list[int]],
        temperature: float,
        top_k: int,
        generator: torch.Generator | None,
    ) -> list[Episode]:
        """Play started episodes to their ends in one decoder batch: row ``i`` is ``eps[i]``, whose env is
        ``self.envs[i]`` (already in the state ``prompts[i]`` leads to) and whose ``ids`` end with ``prompts[i]``.

        :meth:`run` calls it on freshly reset episodes; :mod:`arl_baselines.grpo.branching` on episodes that
        continue from a restored snapshot (the prompt is then an earlier episode's prefix). Calls
        :attr:`before_step` (when set) with each episode and its env right before the env is stepped.

        Raises:
            ValueError: More episodes than ``batch_size``.
        """
        p, dec = self.policy, self.decoder
        n = len(eps)
        if n > self.batch_size:
            raise ValueError(f"{n} episodes do not fit a decoder batch of {self.batch_size}")
        prompts = list(prompts) + [[p.pad_id]] * (self.batch_size - n)
        active = [True] * n + [False] * (self.batch_size - n)
        dec.start(prompts)
        while any(active):
            limits = [self._turn_limit(eps[i]) if i < n else 0 for i in range(self.batch_size)]
            if dec.free_slots < MIN_FREE_SLOTS:  # the shared cache (holes included) is full: out of budget
                for i in range(n):
                    if active[i]:
                        eps[i].context_truncated, active[i] = True, False
                break
            outs = dec.generate(
                active, self.max_new_tokens, temperature=temperature, top_k=top_k, generator=generator, limits=limits
            )
            chunks: list[list[int]] = [[] for _ in range(self.batch_size)]
            rows = [i for i in range(n) if outs[i] is not None]
            texts = [self._record_turn(eps[i], outs[i], limits[i]) for i in rows]
            if self.before_step is not None:
                for i in rows:
                    self.before_step(eps[i], self._env(i))
            results = self._step_envs([(self._env(i), text) for i, text in zip(rows, texts)])
            for i, text, result in zip(rows, texts, results):
                obs_ids = self._finish_turn(eps[i], outs[i], text, result)
                if obs_ids is None:
                    active[i] = False
                else:
                    chunks[i] = obs_ids
            for i in range(n):  # an observation the shared cache cannot hold ends the episode as above
                if active[i] and len(chunks[i]) + MIN_FREE_SLOTS > dec.free_slots:
                    eps[i].context_truncated, active[i], chunks[i] = True, False, []
            for i in range(n):
                if active[i]:
                    eps[i].ids += chunks[i]
                    eps[i].mask += [0] * len(chunks[i])
                    eps[i].sample_logprobs += [0.0] * len(chunks[i])
            dec.append(chunks)
        return eps

    @torch.no_grad()
    def play_episode(
        self, seed: int, *, temperature: float = 1.0, top_k: int = 0, generator: torch.Generator | None = None
    ) -> Episode:
        """One episode without the batched decoder: a full forward of the whole sequence per sampled token.

        The reference path for :meth:`run` (slow, no KV cache): the same prompt, turn limits, stop handling and
        episode ends (:meth:`_take_turn`), so with ``temperature=0`` it gives the same episode as :meth:`run`
        (tested) as long as the batched cache does not run out first.

        Args:
            seed: Env reset seed.
            temperature: 0 is greedy.
            top_k: Top-k sampling (0: off).
            generator: RNG for sampling.
        """
        from arl_baselines.grpo.decode import TurnOutput, _sample

        p = self.policy
        stop = set(int(t) for t in p.stop_ids)
        env = self._env(0)
        ep = Episode(group=0, seed=int(seed))
        self._start_episode(ep, env)
        while True:
            limit = self._turn_limit(ep)
            ids: list[int] = []
            lps: list[float] = []
            stopped = False
            while len(ids) < limit:
                x = torch.tensor([ep.ids + ids], dtype=torch.long, device=p.device)
                logits = p.model(input_ids=x, use_cache=False).logits[:, -1].float()
                tok, lp = _sample(logits, temperature, top_k, generator)
                ids.append(int(tok[0]))
                lps.append(float(lp[0]))
                if ids[-1] in stop:
                    stopped = True
                    break
            obs_ids = self._take_turn(ep, env, TurnOutput(ids, lps, stopped), limit)
            if obs_ids is None:
                return ep
            ep.ids += obs_ids
            ep.mask += [0] * len(obs_ids)
            ep.sample_logprobs += [0.0] * len(obs_ids)

    def _start_episode(self, ep: Episode, env: Any) -> list[int]:
        """Reset ``env`` for ``ep.seed``; fill the episode's prompt fields; return the prompt ids.

        Raises:
            ValueError: The prompt does not leave room for one sampled token in ``max_seq_len``.
        """
        ids, obs, info = self.prompt(env, ep.seed)
        if len(ids) + MIN_FREE_SLOTS > self.max_seq_len:
            raise ValueError(f"prompt of {len(ids)} tokens does not fit max_seq_len={self.max_seq_len}; raise "
                             f"max_seq_len (-s max_seq_len=... for arl-envs train) to hold the prompt and its turns")
        ep.states = [obs]
        ep.task_id, ep.ids, ep.prompt_len = str(info.get("task_id", "")), list(ids), len(ids)
        ep.mask, ep.sample_logprobs = [0] * len(ids), [0.0] * len(ids)
        return list(ids)

    def _turn_limit(self, ep: Episode) -> int:
        """Tokens the next turn may sample: ``max_new_tokens``, or less when the episode's budget is nearly spent."""
        return max(0, min(self.max_new_tokens, self.max_seq_len - len(ep.ids)))

    def _take_turn(self, ep: Episode, env: Any, out: Any, limit: int) -> list[int] | None:
        """Record one sampled turn and step the env with its text (shared by :meth:`run` and :meth:`play_episode`).

        A turn that ends on a stop id is a complete action. One that reaches ``max_new_tokens`` is a
        ``truncated_turn``; one cut earlier by the episode's budget is ``context_truncated``. Either way the cut text
        is still sent to the env (so it is scored) and the episode ends there. After a complete action, an
        observation that does not fit the budget also ends the episode as ``context_truncated``: the episode keeps
        the rewards it earned (an unfinished task is the agent's failure, ``success=False``) and is trained on.
        :meth:`run` does the same in three parts (:meth:`_record_turn`, the env steps of the whole batch, possibly
        in threads, then :meth:`_finish_turn`).

        Args:
            ep: The episode (updated in place).
            env: Its env.
            out: The turn's :class:`~arl_baselines.grpo.decode.TurnOutput`.
            limit: The token limit the turn was sampled under.

        Returns:
            The observation ids to append when the episode goes on, else None.
        """
        text = self._record_turn(ep, out, limit)
        return self._finish_turn(ep, out, text, env.step(text))

    def _record_turn(self, ep: Episode, out: Any, limit: int) -> str:
        """Append the sampled ids of a turn to ``ep`` and mark how it was cut; returns the action text."""
        ep.turn_spans.append((len(ep.ids), len(ep.ids) + len(out.ids)))
        ep.ids += out.ids
        ep.mask += [1] * len(out.ids)
        ep.sample_logprobs += list(out.logprobs)
        if not out.stopped:
            if len(out.ids) >= self.max_new_tokens:
                ep.truncated_turn = True
            else:
                ep.context_truncated = True
        return self.policy.decode(out.ids)

    def _finish_turn(self, ep: Episode, out: Any, text: str, result: tuple[Any, ...]) -> list[int] | None:
        """Record the env's ``step`` result for the turn (``text``) that :meth:`_record_turn` recorded (see
        :meth:`_take_turn`)."""
        obs, reward, terminated, truncated, info = result
        ep.actions.append(text)
        ep.observations.append(obs)
        ep.step_rewards.append(float(reward))
        ep.turns += 1
        ep.reward += float(reward)
        ep.invalid_actions += info.get("action_error") is not None
        if info.get("env_error") is not None:
            ep.env_error = str(info["env_error"])
        if terminated or truncated or not out.stopped:
            ep.success = bool(info.get("success", False)) if (terminated or truncated) else False
            ep.env_truncated = bool(truncated)
            return None
        obs_ids = self.policy.chat.observation_ids(obs, ended_with=out.ids[-1])
        if len(ep.ids) + len(obs_ids) + MIN_FREE_SLOTS > self.max_seq_len:
            ep.context_truncated = True
            return None
        ep.states.append(obs)
        return obs_ids


def end_of_turn_id(policy: Policy) -> int:
    """The stop id the chat template writes after an assistant message (the id expert actions end with)."""
    tok = policy.tokenizer
    if policy.chat.use_chat_template:
        mark = "\u2063ARL-END-MARK\u2063"
        text = str(
            tok.apply_chat_template(
                [{"role": "user", "content": "q"}, {"role": "assistant", "content": mark}], tokenize=False
            )
        )
        rest = text[text.find(mark) + len(mark) :] if mark in text else ""
        for sid in policy.stop_ids:
            s = tok.convert_ids_to_tokens(int(sid))
            if isinstance(s, str) and s and rest.startswith(s):
                return int(sid)
    return int(tok.eos_token_id if tok.eos_token_id is not None else policy.stop_ids[0])


def expert_episodes(
    engine: RolloutEngine, seeds: list[int], *, error_rate: float = 0.0, rng: random.Random | None = None
) -> list[Episode]:
    """Expert trajectories (``env.unwrapped.expert_action()``) as token sequences, masked like rollouts.

    The expert's text is tokenised (it was never sampled) and ends with the template's end-of-turn id; the mask
    is 1 on those action ids and 0 on prompt/observation ids, as in :meth:`RolloutEngine.run`. Episodes that do
    not fit ``max_seq_len`` are cut there (``context_truncated``) and dropped by the SFT loss.

    Args:
        engine: Gives the policy's formatting and an env.
        seeds: Reset seeds (one episode each).
        error_rate: An imperfect demonstrator, for the probability in [0, 1] that a turn's action is a decoy
            instead of the expert's: the expert's first action on a different task (a reset of a second env
            with a seed drawn from ``rng``). A decoy has the env's format, so it is a well-formed and usually
            wrong answer: on a single-turn env the demonstrator is right on about ``1 - error_rate`` of the
            tasks. It is played in the env like any action, so ``Episode.reward`` / ``success`` are what it
            earned. 0 (default): the expert exactly.
        rng: Draws the decoy turns and seeds (needed when ``error_rate > 0``).

    Raises:
        ValueError: ``error_rate`` outside [0, 1], or > 0 without ``rng``.
    """
    if not 0.0 <= error_rate <= 1.0:
        raise ValueError(f"error_rate must be in [0, 1], got {error_rate}")
    if error_rate > 0 and rng is None:
        raise ValueError("an error_rate > 0 needs an rng to draw the decoy actions")
    p = engine.policy
    env = engine._env(0)
    out: list[Episode] = []
    for g, seed in enumerate(seeds):
        ids, _, info = engine.prompt(env, seed)
        ep = Episode(group=g, seed=int(seed), task_id=str(info.get("task_id", "")))
        ep.ids, ep.mask, ep.prompt_len = list(ids), [0] * len(ids), len(ids)
        for _ in range(engine.max_turns):
            if error_rate > 0 and rng is not None and rng.random() < error_rate:
                decoy = engine._env(1)
                decoy.reset(seed=rng.randrange(TRAIN_SEED_RANGE))
                action = decoy.unwrapped.expert_action()
            else:
                action = env.unwrapped.expert_action()
            act_ids = list(p.tokenizer.encode(action, add_special_tokens=False)) + [engine.end_of_turn_id]
            if len(ep.ids) + len(act_ids) > engine.max_seq_len:
                ep.context_truncated = True
                break
            ep.ids += act_ids
            ep.mask += [1] * len(act_ids)
            obs, reward, terminated, truncated, info = env.step(action)
            ep.actions.append(action)
            ep.turns += 1
            ep.reward += float(reward)
            if info.get("env_error") is not None:
                ep.env_error = str(info["env_error"])
            if terminated or truncated:
                ep.success = bool(info.get("success", False))
                break
            obs_ids = p.chat.observation_ids(obs, ended_with=engine.end_of_turn_id)
            if len(ep.ids) + len(obs_ids) + MIN_FREE_SLOTS > engine.max_seq_len:
                ep.context_truncated = True
                break
            ep.ids += obs_ids
            ep.mask += [0] * len(obs_ids)
        ep.sample_logprobs = [0.0] * len(ep.ids)
        out.append(ep)
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` successes: ``1 - C(n-c, k) / C(n, k)``.

    Source: Chen et al. 2021, "Evaluating Large Language Models Trained on Code" (Codex), eq. 1.

    Raises:
        ValueError: ``k > n`` or ``k < 1``.
    """
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def evaluate(
    engine: RolloutEngine,
    seeds: list[int],
    *,
    samples: int,
    temperature: float,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """Held-out evaluation: ``samples`` sampled episodes per task seed.

    Returns:
        ``success`` (mean over all episodes = pass@1), ``mean_return``, ``pass@k`` for k in 1, 2, 4, ... up to
        ``samples`` (unbiased estimator, averaged over tasks), ``truncated_turn_frac``, ``env_errors``,
        ``tasks``, ``episodes``.
    """
    eps = engine.run(seeds, samples, temperature=temperature, generator=generator)
    ok = [e for e in eps if e.env_error is None]
    res: dict[str, float] = {
        "success": sum(e.success for e in ok) / max(len(ok), 1),
        "mean_return": sum(e.reward for e in ok) / max(len(ok), 1),
        "truncated_turn_frac": sum(e.truncated_turn for e in eps) / max(len(eps), 1),
        "env_errors": float(len(eps) - len(ok)),
        "tasks": float(len(seeds)),
        "episodes": float(len(eps)),
    }
    k = 1
    while k <= samples:
        vals = []
        for g in range(len(seeds)):
            grp = [e for e in eps[g * samples : (g + 1) * samples] if e.env_error is None]
            if len(grp) >= k:
                vals.append(pass_at_k(len(grp), sum(e.success for e in grp), k))
        res[f"pass@{k}"] = sum(vals) / max(len(vals), 1)
        k *= 2
    return res
