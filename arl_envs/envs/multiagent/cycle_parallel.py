"""``CycleParallelEnv``: a PettingZoo Parallel env over an AEC text game whose agents move once per round, in seat
order (OpenSpiel's simultaneous-move games through the bridge, gridpath's cycles)."""

from __future__ import annotations

from typing import Any, ClassVar

from pettingzoo import ParallelEnv

from arl_envs.core.errors import InvalidActionType, ResetNeeded
from arl_envs.envs.multiagent.base import TextGameEnv
from arl_envs.envs.multiagent.parallel import ParallelSnapshot

__all__ = ["CycleParallelEnv"]


class CycleParallelEnv(ParallelSnapshot, ParallelEnv):
    """A PettingZoo Parallel env driving an AEC text game round by round (one rule set, one invalid-move logic).

    For AEC games where every agent still in the game moves once per round, in seat order (gridpath's cycles,
    OpenSpiel's simultaneous-move games played turn by turn), and that count completed rounds in ``round_index``,
    one ``step(actions)`` is one round: each agent that
    has not yet moved in the round gets its action, in order. An invalid move stops the round at that agent
    (``infos[agent]["reason"]`` says why); the next ``step`` resumes with its retry, and the actions of agents that
    already moved in the round are ignored. Agents that leave (or all, at the end) are removed from ``agents``.
    Unlike PettingZoo's ``aec_to_parallel``, an agent moving again after an invalid move is not an error.

    Args:
        aec_env: The AEC game (a :class:`~arl_envs.envs.multiagent.base.TextGameEnv`).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "name": "cycle_parallel",
                                          "render_fps": 1}

    def __init__(self, aec_env: TextGameEnv) -> None:
        self.aec_env = aec_env
        self.possible_agents = list(aec_env.possible_agents)
        self.agents: list[str] = []
        self.render_mode = aec_env.render_mode

    def observation_space(self, agent: str) -> Any:
        """The (cached) observation space of ``agent``."""
        return self.aec_env.observation_space(agent)

    def action_space(self, agent: str) -> Any:
        """The (cached) action space of ``agent``."""
        return self.aec_env.action_space(agent)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Start a game: ``(observations, infos)`` of every agent."""
        self.aec_env.reset(seed=seed, options=options)
        self.agents = list(self.aec_env.agents)
        obs = {a: self.aec_env.observe(a) for a in self.agents}
        infos = {a: dict(self.aec_env.infos[a]) for a in self.agents}
        self._round_view(obs, infos)
        return obs, infos

    def _round_view(self, obs: dict[str, str], infos: dict[str, dict[str, Any]]) -> None:
        """Give every agent still to move in this round, not only the AEC game's selected agent, its move info
        (``aec_env.round_info(agent)``: ``legal_moves`` and the game's mask keys; ``to_move`` set) and the move
        prompt in its observation."""
        aec = self.aec_env
        round_info = getattr(aec, "round_info", None)
        if round_info is None:
            return
        for a in aec.agents:
            if a == aec.agent_selection or a not in infos or aec.terminations[a] or aec.truncations[a]:
                continue
            extra = round_info(a)
            if extra.get("legal_moves"):
                infos[a].update(extra)
                infos[a]["to_move"] = True
                prompt = " ".join(f"[{m}]" for m in extra["legal_moves"])
                obs[a] = type(obs[a])(f"{obs[a]}\nYour move. Legal moves: {prompt}")

    def step(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        """One round (or what is left of it after an invalid move). A missing action is an invalid move.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)`` for the agents live before the step.

        Raises:
            ResetNeeded: No game running.
            InvalidActionType: An action that is not a ``str``.
        """
        aec = self.aec_env
        if not self.agents:
            raise ResetNeeded("call reset() before step(): no game is running")
        for a in self.agents:
            if a in actions and not isinstance(actions[a], str):
                raise InvalidActionType(f"action of {a} must be a str, got {type(actions[a]).__name__}")
        live = list(self.agents)
        rewards = dict.fromkeys(live, 0.0)
        obs: dict[str, str] = {}
        terms: dict[str, bool] = {}
        truncs: dict[str, bool] = {}
        infos: dict[str, dict[str, Any]] = {}
        moved: set[str] = set()
        start_round = aec.round_index
        while aec.agents:
            a = aec.agent_selection
            if aec.terminations[a] or aec.truncations[a]:
                obs[a], terms[a], truncs[a] = aec.observe(a), aec.terminations[a], aec.truncations[a]
                infos[a] = dict(aec.infos[a])
                aec.step(None)
                continue
            if a in moved or aec.round_index != start_round:  # a new round, or a retry after an invalid move
                break
            aec.step(actions.get(a, ""))
            moved.add(a)
            for b, r in aec.rewards.items():
                if b in rewards:
                    rewards[b] += float(r)
        for a in aec.agents:
            obs[a] = aec.observe(a)
            terms[a], truncs[a] = aec.terminations[a], aec.truncations[a]
            infos[a] = dict(aec.infos[a])
        self._round_view(obs, infos)
        self.agents = list(aec.agents)
        keep = set(live)
        return ({a: o for a, o in obs.items() if a in keep}, rewards,
                {a: v for a, v in terms.items() if a in keep}, {a: v for a, v in truncs.items() if a in keep},
                {a: v for a, v in infos.items() if a in keep})

    def render(self) -> str | None:
        """The AEC game's render."""
        return self.aec_env.render()

    def close(self) -> None:
        """Nothing to release (safe to call twice)."""
        self.aec_env.close()

    def state(self) -> str:
        """The AEC game's state text."""
        return self.aec_env.state()
