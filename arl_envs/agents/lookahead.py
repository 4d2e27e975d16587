"""LookaheadAgent: try K candidate actions on a branch of the env (snapshot/restore) and play the best.

The branch is one extra env (``arl_envs.fork(env, 1)``, made on first use) that is restored to the played env's
snapshot before each candidate, so ``act`` never changes the played env. A candidate's score is the return on
its branch: its own step reward plus, with a ``rollout`` agent, the rewards of up to ``horizon`` further steps of
that agent (a Monte-Carlo estimate of the candidate's value); the best score wins, ties go to the earlier
candidate. Identical candidate strings are tried once (every id is deterministic under its state).

The branch restores every RNG of the env, so in an env with random transitions (slippery FrozenLake, a random
opponent) the lookahead sees the outcome the played env will realise: it plans with the env as a perfect model,
an upper bound for planning with a learned one.
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym

from arl_envs.agents.agents import Agent, _unwrapped
from arl_envs.core.snapshot import fork


class LookaheadAgent(Agent):
    """Plays, at each turn, the best of ``k`` candidate actions as judged on branches of the env.

    Args:
        env: The env being played (wrapped or not); ``act`` leaves its state unchanged.
        propose: Where candidates come from: an :class:`Agent` (asked ``k`` times; a stochastic agent gives
            different candidates) or a callable ``(observation, info) -> list[str]``.
        k: Candidates per turn when ``propose`` is an agent.
        rollout: ``agent_factory(branch_env) -> Agent`` playing each branch on after the candidate, for up to
            ``horizon`` steps; None scores a candidate by its own step reward.
        horizon: Rollout steps after the candidate.

    Attributes:
        branch_steps: Env steps taken on branches so far (the cost of lookahead, in env steps).
        last_scores: ``[(candidate, score), ...]`` of the last ``act``.

    Raises:
        ValueError: ``k < 1`` or ``horizon < 0``.
    """

    def __init__(
        self,
        env: gym.Env,
        propose: Agent | Callable[[str, dict[str, Any]], list[str]],
        k: int = 4,
        rollout: Callable[[gym.Env], Agent] | None = None,
        horizon: int = 0,
    ) -> None:
        if k < 1 or horizon < 0:
            raise ValueError(f"LookaheadAgent needs k >= 1 and horizon >= 0, got k={k}, horizon={horizon}")
        self.env = _unwrapped(env)
        self.propose, self.k, self.rollout_factory, self.horizon = propose, int(k), rollout, int(horizon)
        self._branch: gym.Env | None = None
        self._rollout: Agent | None = None
        self.branch_steps = 0
        self.last_scores: list[tuple[str, float]] = []

    def candidates(self, observation: str, info: dict[str, Any]) -> list[str]:
        """This turn's distinct candidate actions, in proposal order."""
        if isinstance(self.propose, Agent):
            raw = [self.propose.act(observation, info) for _ in range(self.k)]
        else:
            raw = list(self.propose(observation, info))
        return list(dict.fromkeys(raw))

    def act(self, observation: str, info: dict[str, Any]) -> str:
        cands = self.candidates(observation, info)
        if not cands:
            raise ValueError("LookaheadAgent: the proposer gave no candidate action")
        if len(cands) == 1:
            self.last_scores = [(cands[0], 0.0)]
            return cands[0]
        snap = self.env.snapshot()
        if self._branch is None:
            self._branch = fork(self.env, 1)[0]
            if self.rollout_factory is not None:
                self._rollout = self.rollout_factory(self._branch)
        branch = self._branch
        scores: list[tuple[str, float]] = []
        for cand in cands:
            branch.unwrapped.restore(snap)
            obs, total, term, trunc, binfo = branch.step(cand)
            self.branch_steps += 1
            for _ in range(self.horizon if self._rollout is not None else 0):
                if term or trunc:
                    break
                assert self._rollout is not None
                obs, r, term, trunc, binfo = branch.step(self._rollout.act(obs, binfo))
                total += r
                self.branch_steps += 1
            scores.append((cand, float(total)))
        self.last_scores = scores
        return max(scores, key=lambda cs: cs[1])[0]  # max keeps the first of equal scores

    def close(self) -> None:
        """Close the branch env (safe to call twice)."""
        if self._branch is not None:
            self._branch.close()
            self._branch = None
