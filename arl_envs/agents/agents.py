"""Reference agents.

All agents share one interface: ``agent.act(observation, info) -> str`` (the next action text) and
``agent.reset(seed)``. They work on a ``gym.make``-wrapped env or on the raw env.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from arl_envs.core.env import AgentEnv
from arl_envs.core.errors import ArlError

_WORDS = (
    "the", "answer", "is", "42", "search", "capital", "population", "river", "print", "x", "=", "1", "+", "def",
    "return", "click", "login", "open", "door", "中文", "🙂", "Paris", "3/4", "\\frac{1}{2}", "north", "take",
)


def _unwrapped(env: gym.Env) -> AgentEnv:
    base = env.unwrapped
    if not isinstance(base, AgentEnv):
        raise ArlError(f"expected an arl-envs AgentEnv, got {type(base).__name__}")
    return base


class Agent:
    """Interface of reference agents."""

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode (and reseed the agent's own RNG when ``seed`` is given)."""

    def act(self, observation: str, info: dict[str, Any]) -> str:  # pragma: no cover - interface
        """The next action (model text) for ``observation``."""
        raise ArlError(f"{type(self).__name__} does not implement act()")


class ExpertAgent(Agent):
    """Plays ``env.unwrapped.expert_action()``: the env's privileged scripted expert.

    Args:
        env: The env the agent plays (wrapped or not).
    """

    def __init__(self, env: gym.Env):
        self.env = _unwrapped(env)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.env.expert_action()


class RandomAgent(Agent):
    """Random printable text and random well-formed tool calls, in the env's action format.

    With probability ``p_tool_call`` it writes a call to a random tool of the env with arguments drawn from the
    tool's JSON schema (strings of random words, integers in range, ...); otherwise random printable Unicode text.

    Args:
        env: The env the agent plays.
        seed: Seed of the agent's RNG.
        p_tool_call: Probability of a well-formed tool call per turn.
    """

    def __init__(self, env: gym.Env, seed: int | None = None, p_tool_call: float = 0.5):
        self.env = _unwrapped(env)
        self.p_tool_call = float(p_tool_call)
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def random_text(self, max_words: int = 12) -> str:
        """A string of 0..max_words random words."""
        n = int(self.rng.integers(0, max_words + 1))
        return " ".join(_WORDS[int(i)] for i in self.rng.integers(0, len(_WORDS), size=n))

    def _value(self, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return schema["enum"][int(self.rng.integers(0, len(schema["enum"])))]
        if "anyOf" in schema:
            options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
            return self._value(options[int(self.rng.integers(0, len(options)))])
        kind = schema.get("type", "string")
        if kind == "integer":
            lo = int(schema.get("minimum", 0))
            hi = int(schema.get("maximum", lo + 20))
            return int(self.rng.integers(lo, hi + 1))
        if kind == "number":
            return float(self.rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 100.0)))
        if kind == "boolean":
            return bool(self.rng.integers(0, 2))
        if kind == "array":
            return [self._value(schema.get("items", {})) for _ in range(int(self.rng.integers(0, 3)))]
        if kind == "object":
            return {}
        return self.random_text(8)

    def random_call(self) -> str:
        """A well-formed call of a random tool with random (schema-typed) arguments."""
        tools = self.env.tools()
        tool = tools[int(self.rng.integers(0, len(tools)))]
        params = tool.schema()["function"]["parameters"]
        required = set(params.get("required", []))
        args = {
            k: self._value(v)
            for k, v in params.get("properties", {}).items()
            if k in required or self.rng.random() < 0.5
        }
        return self.env.render_call(tool.name, args)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.rng.random() < self.p_tool_call:
            return self.random_call()
        return self.env.action_space.sample() if self.rng.random() < 0.5 else self.random_text()


class HumanAgent(Agent):
    """Reads each action from a text stream (stdin by default); a line with only ``.`` ends a multi-line action.

    Args:
        stream: Where to read from.
        prompt: Printed before each action.
    """

    def __init__(self, stream: Any = None, prompt: str = "action> "):
        self.stream = stream if stream is not None else sys.stdin
        self.prompt = prompt

    def act(self, observation: str, info: dict[str, Any]) -> str:
        print(observation)
        print(self.prompt, end="", flush=True)
        first = self.stream.readline()
        if first == "":
            raise EOFError("no more input for HumanAgent")
        lines = [first.rstrip("\n")]
        if lines[0].endswith("\\"):  # continuation: read until a line with a single "."
            lines[0] = lines[0][:-1]
            for line in self.stream:
                if line.rstrip("\n") == ".":
                    break
                lines.append(line.rstrip("\n"))
        return "\n".join(lines)


AGENTS: dict[str, Callable[..., Agent]] = {
    "expert": lambda env, seed=None: ExpertAgent(env),
    "random": lambda env, seed=None: RandomAgent(env, seed=seed),
    "human": lambda env, seed=None: HumanAgent(),
}


def make_agent(name: str, env: gym.Env, seed: int | None = None) -> Agent:
    """Build a reference agent by name: ``"expert"``, ``"random"`` or ``"human"``.

    Raises:
        ValueError: Unknown name.
    """
    try:
        return AGENTS[name](env, seed=seed)
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; choose from {sorted(AGENTS)}") from None


class Episode:
    """The record of one played episode.

    Attributes:
        observations: ``[obs_0, obs_1, ...]`` (one more than ``actions``).
        actions: The agent's actions.
        rewards: Per-step rewards.
        infos: Per-step infos (reset info first).
        terminated, truncated: How it ended.
        steps: Number of steps.
        total_reward: Sum of rewards (the undiscounted return).
        success: ``info["success"]`` of the last step.
        seconds: Wall time of the episode, env and agent together.
    """

    def __init__(self) -> None:
        self.observations: list[str] = []
        self.actions: list[str] = []
        self.rewards: list[float] = []
        self.infos: list[dict[str, Any]] = []
        self.terminated = False
        self.truncated = False
        self.seconds = 0.0

    @property
    def steps(self) -> int:
        return len(self.actions)

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))

    @property
    def success(self) -> bool:
        return bool(self.infos[-1].get("success", False)) if len(self.infos) > 1 else False


def run_episode(
    env: gym.Env,
    agent: Agent,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    max_steps: int = 1_000,
) -> Episode:
    """Play one episode of ``agent`` in ``env``.

    Args:
        env: Any arl-envs env (wrapped or not).
        agent: The agent.
        seed: Passed to ``env.reset`` and ``agent.reset``.
        options: Passed to ``env.reset``.
        max_steps: Safety cap on steps (the env truncates itself well before it).

    Returns:
        The :class:`Episode`.
    """
    import time

    ep = Episode()
    start = time.perf_counter()
    agent.reset(seed)
    obs, info = env.reset(seed=seed, options=options)
    ep.observations.append(obs)
    ep.infos.append(info)
    for _ in range(max_steps):
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        ep.actions.append(action)
        ep.observations.append(obs)
        ep.rewards.append(float(reward))
        ep.infos.append(info)
        if terminated or truncated:
            ep.terminated, ep.truncated = bool(terminated), bool(truncated)
            break
    ep.seconds = time.perf_counter() - start
    return ep
