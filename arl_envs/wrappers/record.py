"""Record episodes to JSONL: one line per finished episode (a trajectory)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import gymnasium as gym


class RecordEpisodes(gym.Wrapper[str, str, str, str]):
    """Append each finished episode to a JSONL file.

    Each line: ``{"env_id", "task_id", "seed", "observations": [...], "actions": [...], "rewards": [...],
    "reward_components": [...], "steps": [...], "terminated", "truncated", "success", "return"}``. ``steps[t]`` holds
    the step's ``action_error``, ``env_error`` and ``tool_calls`` from ``info`` (what ``arl-envs view`` marks). When the
    env puts PNG bytes in ``info["screenshot"]`` (web ids with ``obs_mode="axtree+screenshot"``), the line also has
    ``"screenshots"``: one base64 PNG string (or None) per observation. Lines are written when an episode ends
    (terminated or truncated); an episode still running at ``close()`` is written with both flags False.

    Args:
        env: Any arl-envs env.
        path: JSONL file (created with parent directories; appended to).
    """

    def __init__(self, env: gym.Env[str, str], path: str | Path):
        super().__init__(env)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._episode: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self._flush()
        obs, info = self.env.reset(seed=seed, options=options)
        spec = self.env.spec
        self._episode = {
            "env_id": spec.id if spec else type(self.env.unwrapped).__name__,
            "task_id": info.get("task_id"),
            "seed": seed,
            "observations": [obs],
            "actions": [],
            "rewards": [],
            "reward_components": [],
            "steps": [],
            "terminated": False,
            "truncated": False,
            "success": False,
        }
        self._screenshot(info)
        return obs, info

    def _screenshot(self, info: dict[str, Any]) -> None:
        """Keep ``info["screenshot"]`` (PNG bytes) as base64, aligned with the observations."""
        ep = self._episode
        png = info.get("screenshot")
        if ep is None or (png is None and "screenshots" not in ep):
            return
        shots = ep.setdefault("screenshots", [None] * (len(ep["observations"]) - 1))
        shots.append(base64.b64encode(png).decode("ascii") if isinstance(png, (bytes, bytearray)) else None)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        ep = self._episode
        if ep is not None:
            ep["observations"].append(obs)
            ep["actions"].append(action)
            ep["rewards"].append(reward)
            ep["reward_components"].append(info.get("reward_components", {}))
            ep["steps"].append(
                {
                    "action_error": info.get("action_error"),
                    "env_error": info.get("env_error"),
                    "tool_calls": info.get("tool_calls") or [],
                }
            )
            self._screenshot(info)
            if terminated or truncated:
                ep.update(terminated=terminated, truncated=truncated, success=bool(info.get("success", False)))
                self._flush()
        return obs, reward, terminated, truncated, info

    def _flush(self) -> None:
        if self._episode is None:
            return
        ep, self._episode = self._episode, None
        ep["return"] = float(sum(ep["rewards"]))
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(ep) + "\n")  # ASCII escapes: lone surrogates in model text survive

    def close(self) -> None:
        self._flush()
        super().close()
