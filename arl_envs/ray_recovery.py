"""What a :class:`~arl_envs.ray_vector.RayVectorEnv` does to the sub-envs of an env actor that died.

:class:`ActorRecovery` (a base class of ``RayVectorEnv``) has the actor replaced (:meth:`ActorPool.replace
<arl_envs.ray_actors.ActorPool.replace>`) and then: sub-envs that were mid-episode end that step with their last
observation, reward 0, ``truncated=True`` and ``info["env_error"]``, and their next reset gets a seed derived from
their last reset seed and their restart count; sub-envs whose step was an autoreset are reset on the new actor in
the same step; with same-step autoreset every sub-env of the actor is cut and reset at once. A reset that meets a
dead actor is repeated on the replacement with the same seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from arl_envs.ray_actors import ActorPool


class ActorRecovery:
    """The dead-actor paths of :class:`~arl_envs.ray_vector.RayVectorEnv` (its base class); they use its vector
    state (``_slices``, seeds, counters, last observations and infos) and its ``_reset_call``/``_record_reset``."""

    _pool: ActorPool
    _slices: list[list[int]]
    num_envs: int
    autoreset_mode: AutoresetMode
    actor_timeout_s: float | None
    max_restarts: int
    _env_obs: list[Any]
    _last_info: list[dict[str, Any]]
    _reset_seeds: list[int | None]
    _episode_seeds: list[int | None]
    _env_errors: np.ndarray
    _env_restarts: np.ndarray
    _worker_resets: np.ndarray
    _worker_steps: np.ndarray

    def _on_actor_replaced(self, k: int) -> None:
        """Actor ``k`` was replaced by a new one: its sub-envs count one more restart and nothing done there yet."""
        for i in self._slices[k]:
            self._env_restarts[i] += 1
            self._worker_resets[i] = 0
            self._worker_steps[i] = 0

    def _restart_seed(self, i: int) -> int | None:
        """Seed for sub-env ``i``'s first reset on a replacement actor: derived from its last reset seed and its
        restart count (deterministic), None if it was reset without a seed."""
        base = self._episode_seeds[i]
        if base is None:
            return None
        seq = np.random.SeedSequence([int(base) & 0xFFFFFFFF, int(self._env_restarts[i])])
        return int(seq.generate_state(1, dtype=np.uint32)[0])

    def _reset_until_alive(self, k: int, res: Any, seeds: list[int | None], options: dict[str, Any] | None,
                           mask: np.ndarray) -> list[Any]:
        """``res`` (actor ``k``'s reset results), or, while it is a dead actor's error, the same reset on a
        replacement actor (bounded by ``max_restarts``)."""
        while isinstance(res, BaseException):
            self._pool.replace(k, res, self.max_restarts)
            res = self._pool.collect([self._reset_call(k, seeds, options, mask)])[0]
        return res

    def _recover_step(self, k: int, exc: BaseException, reset_first: np.ndarray,
                      per_env: list[Any]) -> None:
        """Actor ``k`` died during a step: replace it; its mid-episode sub-envs end with ``env_error``."""
        self._pool.replace(k, exc, self.max_restarts)
        why = (f"did not answer within {self.actor_timeout_s:g} s and was killed" if k in self._pool.silenced
               else f"died ({type(exc).__name__})")
        self._pool.silenced.discard(k)
        message = (f"env actor {k} {why}; replaced by a fresh actor, the episode is cut "
                   f"and the next step resets this sub-env")
        for i in self._slices[k]:
            self._reset_seeds[i] = self._restart_seed(i)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._recover_same_step(k, message, per_env)
            return
        to_reset = [i for i in self._slices[k] if reset_first[i]]
        if to_reset:  # no episode was in progress: reset on the new actor now, as the step would have
            seeds = list(self._reset_seeds)
            mask = np.zeros(self.num_envs, dtype=np.bool_)
            mask[to_reset] = True
            res = self._reset_until_alive(k, self._pool.collect([self._reset_call(k, seeds, None, mask)])[0], seeds, None,
                                          mask)
            for j, i in enumerate(self._slices[k]):
                if res[j] is not None:
                    obs, info = res[j]
                    self._record_reset(i, info, seeds[i])
                    per_env[i] = (obs, 0.0, False, False, info)
        for i in self._slices[k]:
            if per_env[i] is not None:
                continue
            info = self._cut_info(i, message)
            self._env_errors[i] += 1
            per_env[i] = (self._env_obs[i], 0.0, False, True, info)

    def _cut_info(self, i: int, message: str) -> dict[str, Any]:
        last = self._last_info[i]
        return {"task_id": last.get("task_id"), "turn": int(last.get("turn", 0)) + 1, "reward_components": {},
                "action_error": None, "tool_calls": [], "success": False, "env_error": message}

    def _recover_same_step(self, k: int, message: str, per_env: list[Any]) -> None:
        """Same-step autoreset: every sub-env of the dead actor ``k`` was mid-episode; each ends truncated (its
        ``final_obs`` the last observation, ``final_info`` saying ``env_error``) and is reset on the new actor in
        this same step (``info`` is the reset's, with ``env_error`` added so the cut shows at the top level)."""
        seeds = list(self._reset_seeds)
        mask = np.zeros(self.num_envs, dtype=np.bool_)
        mask[self._slices[k]] = True
        res = self._reset_until_alive(k, self._pool.collect([self._reset_call(k, seeds, None, mask)])[0], seeds, None,
                                      mask)
        for j, i in enumerate(self._slices[k]):
            obs, info = res[j]
            final = (self._env_obs[i], self._cut_info(i, message))
            self._env_errors[i] += 1
            self._record_reset(i, info, seeds[i])
            per_env[i] = (obs, 0.0, False, True, {**info, "env_error": message}, final)
