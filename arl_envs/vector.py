"""Vectorised text envs that keep every sub-env's observation intact.

Gymnasium's ``AsyncVectorEnv`` defaults to shared memory, which only numeric spaces support; text must travel
through the pipes instead. :func:`make_vec` builds either vector env with the right settings, or (``mode="ray"``)
a :class:`~arl_envs.ray_vector.RayVectorEnv` whose sub-envs live in Ray actors (``arl-envs[ray]``; imported only
then, also reachable as ``arl_envs.vector.RayVectorEnv``). Observations come
back as a ``tuple[str, ...]`` with one entry per sub-env, in sub-env order; actions are any sequence of ``str``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from arl_envs.vector_modes import as_autoreset_mode

VECTOR_MODES = ("sync", "async", "ray", "remote")


class BatchSyncVectorEnv(gym.vector.SyncVectorEnv):
    """``SyncVectorEnv`` that lets sub-envs prepare a batch before it is stepped in turn.

    If the sub-envs' class has a static ``prepare_batch(envs, actions)`` (the math envs grade the whole batch's
    answers concurrently with it), it runs on the unwrapped sub-envs first; stepping is then Gymnasium's own.
    """

    def step(self, actions: Any) -> Any:
        prepare = getattr(type(self.envs[0].unwrapped), "prepare_batch", None)
        if prepare is not None:
            prepare([env.unwrapped for env in self.envs], list(actions))
        return super().step(actions)


def make_vec(env_id: str, num_envs: int, mode: str = "sync", **kwargs: Any) -> gym.vector.VectorEnv:
    """Make ``num_envs`` copies of ``env_id`` in one vector env.

    Args:
        env_id: A registered id, e.g. ``"arl/math.arithmetic-v1"`` (``"arl_envs:"`` prefix allowed).
        num_envs: Number of sub-envs (>= 1).
        mode: ``"sync"`` (one process, stepped in turn; math envs grade each batch concurrently) or ``"async"``
            (one subprocess per env, pickled text over pipes, no shared memory) or ``"ray"`` (Ray actors; also takes ``envs_per_actor``, ``actor_options``,
            ``shared_retriever``... see :class:`~arl_envs.ray_vector.RayVectorEnv`) or ``"remote"`` (sessions on an
            ``arl-envs serve`` server at ``url=``, stepped concurrently: :class:`~arl_envs.server.remote.RemoteVectorEnv`).
        **kwargs: Constructor kwargs for every sub-env (and, for ``"ray"``, the options above). ``autoreset_mode``
            (a :class:`gymnasium.vector.AutoresetMode` or its string) goes to the vector env, not the sub-envs.

    Returns:
        A Gymnasium vector env; ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i``. Autoreset follows
        Gymnasium 1.x's default (next-step).

    Raises:
        ValueError: Unknown mode, ``num_envs < 1``, or ``mode="remote"`` without ``url``.
        DependencyNotInstalled: ``mode="ray"`` without Ray (``pip install 'arl-envs[ray]'``).
    """
    if mode not in VECTOR_MODES:
        raise ValueError(f"mode must be one of {VECTOR_MODES}, got {mode!r}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if not env_id.startswith("arl_envs:") and env_id.startswith("arl/"):
        env_id = f"arl_envs:{env_id}"  # sub-processes must import arl_envs to find the id

    if mode == "remote":  # sessions on an `arl-envs serve` server: make_vec(..., mode="remote", url=...)
        from arl_envs.server.remote import make_remote_vec

        if "url" not in kwargs:
            raise ValueError('mode="remote" needs url= (an `arl-envs serve` server, e.g. "http://127.0.0.1:8000")')
        return make_remote_vec(env_id, num_envs, **kwargs)
    if mode == "ray":
        from arl_envs.ray_vector import RayVectorEnv

        return RayVectorEnv(env_id, num_envs, **kwargs)
    vector_kwargs = {}
    if "autoreset_mode" in kwargs:
        vector_kwargs["autoreset_mode"] = as_autoreset_mode(kwargs.pop("autoreset_mode"))

    def factory() -> gym.Env:
        return gym.make(env_id, **kwargs)

    fns = [factory for _ in range(num_envs)]
    if mode == "sync":
        return BatchSyncVectorEnv(fns, **vector_kwargs)
    return gym.vector.AsyncVectorEnv(fns, shared_memory=False, context="spawn", **vector_kwargs)


def __getattr__(name: str) -> Any:
    """``arl_envs.vector.RayVectorEnv`` without importing Ray until it is used."""
    if name == "RayVectorEnv":
        from arl_envs.ray_vector import RayVectorEnv

        return RayVectorEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
