"""The remote side of :class:`~arl_envs.ray_vector.RayVectorEnv`: :class:`EnvWorker`, the sub-envs of one Ray actor.

An :class:`EnvWorker` builds its sub-envs with ``gym.make`` in the actor's process and answers packed calls
(``pickle`` of ``(method name, args)``, one ``bytes`` each way): through Ray (:meth:`EnvWorker.rpc`) or over one
direct TCP connection to the driver (:meth:`EnvWorker.listen` + :meth:`EnvWorker.serve`;
:mod:`multiprocessing.connection` framing, HMAC-authenticated both ways). The driver's side of these calls is
:class:`~arl_envs.ray_actors.ActorPool`.
"""

from __future__ import annotations

import os
import pickle
import socket
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from arl_envs.core.errors import DependencyNotInstalled
from arl_envs.ray_retriever import node_retriever_url

#: The install step named when Ray is missing.
RAY_INSTALL_HINT = "pip install 'arl-envs[ray]'"
#: Seconds an actor waits for the driver to connect to its step socket (``transport="socket"``).
ACCEPT_TIMEOUT_S = 120.0
#: The worker methods a packed call may name.
_WORKER_CALLS = frozenset({"reset", "step", "step_same", "call", "set_attr", "counters", "close", "spaces"})
#: The packed ``close`` call: after answering it, :meth:`EnvWorker.serve` returns.
_CLOSE_MESSAGE = pickle.dumps(("close", ()), protocol=pickle.HIGHEST_PROTOCOL)


def import_ray() -> Any:
    """Import Ray, or raise :class:`DependencyNotInstalled` naming the ``ray`` extra."""
    try:
        import ray
    except ImportError as exc:
        raise DependencyNotInstalled(f"make_vec(mode='ray') needs Ray: {RAY_INSTALL_HINT}") from exc
    return ray


class EnvWorker:
    """Several sub-envs in one process (run as a Ray actor by :class:`~arl_envs.ray_vector.RayVectorEnv`).

    The worker holds no vector state: each call says which of its envs reset first (autoreset) and with what
    seed. It counts ``reset``/``step`` calls per env since it was built (:meth:`counters`).

    Args:
        env_id: A registered id (``arl_envs:`` prefix allowed).
        n_envs: Envs in this worker (>= 1).
        env_kwargs: Constructor kwargs for every env.
        retriever_name: Name of a :class:`~arl_envs.ray_retriever.RetrieverService` family; the worker looks up
            the one on its own node and points its envs at it (``retriever="remote"``). None, or no service on
            this node: the env's own.
    """

    def __init__(self, env_id: str, n_envs: int, env_kwargs: dict[str, Any], retriever_name: str | None = None):
        from arl_envs.registration import register_all

        register_all()  # the ids, in this worker process

        kwargs = dict(env_kwargs)
        self.retriever_url: str | None = None
        if retriever_name is not None:
            self.retriever_url = node_retriever_url(retriever_name)
            if self.retriever_url is not None:
                kwargs.update(retriever="remote", retriever_url=self.retriever_url)
        self.envs = [gym.make(env_id, **kwargs) for _ in range(n_envs)]
        self.resets = [0] * n_envs
        self.steps = [0] * n_envs
        self.busy_s = 0.0  # seconds inside packed calls (rpc), for utilisation and the hop benchmark

    def spaces(self) -> tuple[gym.Space, gym.Space, dict[str, Any], str | None]:
        """``(observation_space, action_space, metadata, render_mode)`` of the first env (all must agree)."""
        env = self.envs[0]
        for other in self.envs[1:]:
            if other.observation_space != env.observation_space or other.action_space != env.action_space:
                raise RuntimeError("sub-envs of one actor have different spaces")
        return env.observation_space, env.action_space, dict(env.metadata), env.render_mode

    def reset(self, seeds: Sequence[int | None], options: dict[str, Any] | None,
              mask: Sequence[bool]) -> list[tuple[str, dict[str, Any]] | None]:
        """Reset the envs where ``mask`` is True; None for the others."""
        out: list[tuple[str, dict[str, Any]] | None] = []
        for j, env in enumerate(self.envs):
            if not mask[j]:
                out.append(None)
                continue
            out.append(env.reset(seed=seeds[j], options=options))
            self.resets[j] += 1
        return out

    def step(self, actions: Sequence[Any], reset_first: Sequence[bool],
             seeds: Sequence[int | None]) -> list[tuple[Any, float, bool, bool, dict[str, Any]]]:
        """One vector step of this worker's envs.

        Args:
            actions: One action per env.
            reset_first: Envs to reset instead of stepping (next-step autoreset): reward 0, flags False.
            seeds: Seed per env for those resets (None: continue the env's own generator, as Gymnasium does).

        Returns:
            Per env ``(obs, reward, terminated, truncated, info)``.
        """
        prepare = getattr(type(self.envs[0].unwrapped), "prepare_batch", None)
        if prepare is not None:  # as BatchSyncVectorEnv: e.g. the math envs grade the batch's answers at once
            live = [j for j in range(len(self.envs)) if not reset_first[j]]
            prepare([self.envs[j].unwrapped for j in live], [actions[j] for j in live])
        out = []
        for j, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            if reset_first[j]:
                obs, info = env.reset(seed=seeds[j])
                self.resets[j] += 1
                out.append((obs, 0.0, False, False, info))
            else:
                out.append(env.step(action))
                self.steps[j] += 1
        return out

    def step_same(self, actions: Sequence[Any], seeds: Sequence[int | None]) -> list[tuple[Any, ...]]:
        """One vector step with same-step autoreset (Gymnasium's ``AutoresetMode.SAME_STEP``): an env whose step
        ends its episode is reset at once (``seeds[j]``, None: its own generator).

        Returns:
            Per env ``(obs, reward, terminated, truncated, info, final)``; ``final`` is None, or, for an env that
            was reset, ``(final_obs, final_info)`` of the step that ended the episode (``obs``/``info`` are then
            the reset's).
        """
        prepare = getattr(type(self.envs[0].unwrapped), "prepare_batch", None)
        if prepare is not None:
            prepare([env.unwrapped for env in self.envs], list(actions))
        out: list[tuple[Any, ...]] = []
        for j, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            obs, reward, terminated, truncated, info = env.step(action)
            self.steps[j] += 1
            final = None
            if terminated or truncated:
                final = (obs, info)
                obs, info = env.reset(seed=seeds[j])
                self.resets[j] += 1
            out.append((obs, reward, terminated, truncated, info, final))
        return out

    def call(self, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """``getattr(env, name)(*args, **kwargs)`` per env (or the attribute itself if not callable)."""
        out = []
        for env in self.envs:
            attr = env.get_wrapper_attr(name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return out

    def set_attr(self, name: str, values: Sequence[Any]) -> None:
        """Set ``name`` on every env (``values`` one per env)."""
        for env, value in zip(self.envs, values, strict=True):
            env.set_wrapper_attr(name, value)

    def counters(self) -> dict[str, list[int]]:
        """``{"resets": [...], "steps": [...], "pid": [...], "busy_s": s}``: calls per env since this worker was
        built, its process id, and the seconds it spent inside calls (unpacking, env work, packing)."""
        return {"resets": list(self.resets), "steps": list(self.steps), "pid": [os.getpid()] * len(self.envs),
                "busy_s": self.busy_s}

    def close(self) -> None:
        """Close every env (sandboxes, browsers, retriever clients)."""
        for env in self.envs:
            env.close()

    # ---------------------------------------------------------------- transport (one message per call)
    def rpc(self, message: bytes) -> bytes:
        """Run one packed call (``pickle`` of ``(method name, args)``); return the packed reply.

        The reply is ``pickle`` of ``(True, result)`` or ``(False, exception)``: an env's exception travels back
        to the driver, which raises it (a dead actor is the transport's error instead). One ``bytes`` each way
        is cheaper for Ray than nested lists of dicts (one buffer, no per-object serializer hooks).
        """
        start = time.perf_counter()
        try:
            name, args = pickle.loads(message)
            if name not in _WORKER_CALLS:
                raise ValueError(f"not a worker call: {name!r}")
            reply: tuple[bool, Any] = (True, getattr(self, name)(*args))
        except Exception as exc:  # noqa: BLE001 - re-raised on the driver
            reply = (False, exc)
        try:
            return pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
            return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc} (packing {reply[1]!r:.200})")),
                                protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            self.busy_s += time.perf_counter() - start

    def listen(self, host: str | None = None) -> tuple[str, int]:
        """Open a TCP listener for :meth:`serve` on ``host`` (default: this node's IP, as Ray knows it).

        Returns:
            ``(host, port)`` to connect to.
        """
        ray = import_ray()
        host = host or ray.util.get_node_ip_address()
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(ACCEPT_TIMEOUT_S)
        return host, self._listener.getsockname()[1]

    def serve(self, authkey: bytes) -> int:
        """Accept the driver's connection on :meth:`listen`'s socket and run its calls until it closes.

        The connection is :mod:`multiprocessing.connection`'s (length-prefixed messages) and authenticated with
        its HMAC challenge in both directions (``authkey``, a random secret the driver passed through Ray) before
        any message is unpickled. This method runs on the actor's own thread, so every env call is made by the
        thread that built the envs (browsers with thread affinity are safe).

        Returns:
            The number of calls served (when the driver closes the connection or sends ``close``).

        Raises:
            TimeoutError: No authenticated connection within :data:`ACCEPT_TIMEOUT_S`.
        """
        from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

        listener, self._listener = self._listener, None
        try:
            sock, _ = listener.accept()
        finally:
            listener.close()
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Connection(sock.detach())
        served = 0
        try:
            deliver_challenge(conn, authkey)
            answer_challenge(conn, authkey)
            while True:
                try:
                    message = conn.recv_bytes()
                except (EOFError, OSError):
                    return served
                conn.send_bytes(self.rpc(message))
                served += 1
                if message == _CLOSE_MESSAGE:
                    return served
        finally:
            conn.close()
