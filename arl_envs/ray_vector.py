"""Env instances inside Ray actors: :class:`RayVectorEnv` (``make_vec(..., mode="ray")``), for rollouts on many machines.

Each actor (:class:`EnvWorker`) builds ``envs_per_actor`` sub-envs with ``gym.make`` *inside* the actor process, so
sandboxes, browsers and retrievers start where the env runs and nothing heavy crosses the wire: a step ships the
actions there and the ``(obs, reward, terminated, truncated, info)`` tuples back (one call per actor and step: a
Ray actor call carrying one pickled ``bytes`` each way, or with ``transport="socket"`` one message each way over a
direct, authenticated TCP connection to the actor, for a sub-millisecond hop).
The driver keeps all vector state (autoreset flags, seeds, episode counters) and merges infos with Gymnasium's own
``VectorEnv._add_info``, so observations, rewards, flags and infos equal :class:`gymnasium.vector.SyncVectorEnv`'s
for the same seeds and actions (tested across episode boundaries for math, code, search, web and multi-agent ids).

Fault tolerance: an actor that dies (``ray.kill``, a crashed worker process, a lost node) is replaced by the driver
with a fresh actor built from the same arguments (Ray's own ``max_restarts`` is not used: ``ray.kill`` with its
default ``no_restart=True`` and node loss would defeat it). The dead actor's sub-envs that were mid-episode return,
for that one step, their last observation, reward 0, ``terminated=False``, ``truncated=True`` and
``info["env_error"]``; the next step resets them (Gymnasium's next-step autoreset) with a seed derived from their
last reset seed and their restart count. Sub-envs whose step was an autoreset anyway are reset on the new actor in
the same step (no episode was in progress, so none is cut). Other actors' sub-envs are not touched.
:meth:`RayVectorEnv.episode_counters` and :meth:`RayVectorEnv.worker_counters` let a test prove that no episode or
step is lost or applied twice.

Shared retriever (``shared_retriever=True``, search ids; :mod:`arl_envs.ray_retriever`): one
:class:`~arl_envs.ray_retriever.RetrieverService` actor per node, pinned with
``NodeAffinitySchedulingStrategy``, runs the suite's Search-R1 HTTP server (:mod:`arl_envs.envs.search.server`) on
that node's loopback; every search env on the node uses it as ``retriever="remote"``. The index is built once per
node instead of once per env. Services are started on the nodes alive at construction and, before each replacement
actor, on nodes that joined since (a node lost and replaced). An actor that lands on a node with no service (one
the autoscaler adds *for* that actor, after the check) builds its envs' own index: same results, not shared.

Source of the protocol: Gymnasium 1.x ``SyncVectorEnv``/``AsyncVectorEnv`` (``reset``/``step``,
``step_async``/``step_wait``, ``call``/``get_attr``/``set_attr``, the ``_key`` info masks, autoreset modes); Ray's
actor API (https://docs.ray.io/en/latest/ray-core/actors.html).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import socket
import time
import warnings
from collections.abc import Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from arl_envs.core.errors import ArlError, DependencyNotInstalled
from arl_envs.ray_retriever import (  # noqa: F401 - RetrieverService, DEFAULT_RETRIEVER_CPUS: public names kept here
    DEFAULT_RETRIEVER_CPUS,
    RetrieverService,
    node_retriever_url,
    shared_retriever_config,
    start_node_services,
)

#: The install step named when Ray is missing.
RAY_INSTALL_HINT = "pip install 'arl-envs[ray]'"
#: CPUs reserved per env actor unless ``actor_options`` says otherwise (Ray's scheduling unit).
DEFAULT_ACTOR_CPUS = 1.0
#: Replacements of one actor slot before the vector env gives up and raises :class:`ActorRestartsExhausted`.
DEFAULT_MAX_RESTARTS = 8
#: Seconds :meth:`RayVectorEnv.close` waits for actors to close their envs before killing them.
CLOSE_TIMEOUT_S = 30.0
#: Seconds an actor waits for the driver to connect to its step socket (``transport="socket"``).
ACCEPT_TIMEOUT_S = 120.0
#: Seconds the driver waits for the TCP connection to an actor's step socket before giving up.
CONNECT_TIMEOUT_S = 30.0
#: Seconds :meth:`RayVectorEnv.step` waits for every actor before it kills the ones that have not answered (a hung
#: actor process: its sub-envs are cut with ``env_error`` and the actor replaced, as after a crash). Each sub-env's
#: own step is bounded by its env's deadlines (``arl_envs/CONTRACT.md``); this bounds the actor around them.
DEFAULT_ACTOR_TIMEOUT_S = 900.0
#: While waiting on step sockets, ask Ray every this many seconds whether a silent actor is still alive (a lost
#: node may leave its TCP connection open without a reset).
LIVENESS_CHECK_S = 5.0
#: Ways the driver talks to its actors per call (see :class:`RayVectorEnv`); the first is the default.
TRANSPORTS = ("ray", "socket")
#: The worker methods a packed call may name.
_WORKER_CALLS = frozenset({"reset", "step", "step_same", "call", "set_attr", "counters", "close", "spaces"})
#: The packed ``close`` call: after answering it, :meth:`EnvWorker.serve` returns.
_CLOSE_MESSAGE = pickle.dumps(("close", ()), protocol=pickle.HIGHEST_PROTOCOL)


class ActorRestartsExhausted(ArlError):
    """An env actor slot died more than ``max_restarts`` times (or could not be rebuilt); the vector env stops."""


def import_ray() -> Any:
    """Import Ray, or raise :class:`DependencyNotInstalled` naming the ``ray`` extra."""
    try:
        import ray
    except ImportError as exc:
        raise DependencyNotInstalled(f"make_vec(mode='ray') needs Ray: {RAY_INSTALL_HINT}") from exc
    return ray


# ----------------------------------------------------------------------------------------------- actors (remote side)
class EnvWorker:
    """Several sub-envs in one process (run as a Ray actor by :class:`RayVectorEnv`).

    The worker holds no vector state: each call says which of its envs reset first (autoreset) and with what
    seed. It counts ``reset``/``step`` calls per env since it was built (:meth:`counters`).

    Args:
        env_id: A registered id (``arl_envs:`` prefix allowed).
        n_envs: Envs in this worker (>= 1).
        env_kwargs: Constructor kwargs for every env.
        retriever_name: Name of a :class:`RetrieverService` family; the worker looks up the one on its own node
            and points its envs at it (``retriever="remote"``). None, or no service on this node: the env's own.
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


# ----------------------------------------------------------------------------------------------- driver
class _ActorLost(ConnectionError):
    """An env actor's step socket closed or its ``serve`` ended: the actor is treated as dead."""


@dataclasses.dataclass
class _Pending:
    """A reset or step sent to every actor and not yet collected."""

    kind: str  # "reset" | "step"
    calls: list[Any]  # per actor, what _submit returned
    context: Any  # what _finish_reset / _finish_step need
    got: dict[int, Any] = dataclasses.field(default_factory=dict)  # answers read before a timeout


class RayVectorEnv(gym.vector.VectorEnv):
    """A vector env whose sub-envs live in Ray actors, several per actor; same API as Gymnasium's vector envs.

    Sub-env ``i`` lives in actor ``i // envs_per_actor``. ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i``
    (a list gives one seed per sub-env); autoreset is Gymnasium's default (next-step: the step after a finished
    one resets that sub-env and returns reward 0 and False flags), exactly as :class:`gymnasium.vector.SyncVectorEnv`;
    ``autoreset_mode="same_step"`` resets a finished sub-env in the step that ended it, with ``info["final_obs"]``
    and ``info["final_info"]``, as ``SyncVectorEnv(autoreset_mode=AutoresetMode.SAME_STEP)`` (``disabled`` is not
    offered). Observations come back as a ``tuple[str, ...]``
    (``num_envs`` entries), rewards as ``float64[num_envs]``, flags as ``bool[num_envs]``, infos as Gymnasium's
    dict of arrays with ``_key`` masks.

    ``step_async(actions)`` + ``step_wait()`` (and ``reset_async``/``reset_wait``) let a trainer generate the next
    actions while envs step; ``await venv.astep(actions)`` / ``await venv.areset(...)`` do the same in asyncio.

    Args:
        env_id: A registered id, e.g. ``"arl/code.functions-v0"``; every node needs arl-envs installed.
        num_envs: Number of sub-envs (>= 1).
        envs_per_actor: Sub-envs per actor (>= 1); the last actor may hold fewer.
        actor_options: Passed to ``ActorClass.options(...)`` for every env actor: ``num_cpus`` (default
            :data:`DEFAULT_ACTOR_CPUS`), ``num_gpus``, ``memory`` (bytes), ``resources``, ``runtime_env``,
            ``scheduling_strategy``... ``max_restarts``/``max_task_retries`` are forced to 0 (the driver replaces
            dead actors itself).
        shared_retriever: Search ids only: one retrieval server per node (see the module docstring).
        retriever_options: ``.options(...)`` of the retriever actors (default ``num_cpus=``
            :data:`DEFAULT_RETRIEVER_CPUS`).
        max_restarts: Replacements allowed per actor slot before :class:`ActorRestartsExhausted` is raised.
        copy: Return a deep copy of the observations (as ``SyncVectorEnv(copy=True)``).
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``SAME_STEP`` (or their strings). With same-step,
            a sub-env cut by a dead actor ends truncated in that step and is reset on the replacement at once:
            ``final_info["env_error"]`` says why (also copied into that step's ``info["env_error"]``).
        transport: How each call (step, reset, ...) reaches the actors. ``"ray"`` (default): an actor method call
            through Ray, one packed ``bytes`` each way. ``"socket"``: Ray still places, starts, watches and
            replaces the actors, but the calls travel over one TCP connection per actor (to the actor's node IP,
            an ephemeral port; :mod:`multiprocessing.connection` framing, HMAC-authenticated in both directions
            with a per-vector-env random key sent through Ray), answered on the actor's own thread. It skips Ray's
            per-call task machinery: a hop of ~0.6 ms per batched step instead of ~2-3 ms on a loaded 2-core
            machine (``benchmarks/RESULTS.md``). It needs the driver to reach the actors' nodes on any port (not through
            Ray Client). A death shows as the socket closing (the process is gone) or, for a silent peer, Ray
            reporting the actor dead within :data:`LIVENESS_CHECK_S`. A step sent right after ``ray.kill`` may be
            answered by the dying actor (its death then shows on the next call, nothing lost) with either
            transport, far more often with the socket (``benchmarks/ray_kill_race.py``).
        actor_timeout_s: Seconds :meth:`step` waits for every actor (default :data:`DEFAULT_ACTOR_TIMEOUT_S`);
            then it kills the actors that have not answered (a hung process; ``SIGKILL`` ends a stopped one too),
            and their sub-envs end that step truncated with ``info["env_error"]``, on a replacement actor. None:
            no deadline. ``step_wait(timeout=)`` keeps Gymnasium's meaning (a ``TimeoutError``, the step pending).
        **env_kwargs: Constructor kwargs for every sub-env.

    Raises:
        DependencyNotInstalled: Ray is not installed (``pip install 'arl-envs[ray]'``).
        ValueError: ``num_envs`` or ``envs_per_actor`` < 1, an unknown ``transport``, or ``shared_retriever``
            with a non-search id.
        ConnectionError: ``transport="socket"`` and an actor's port cannot be reached (use ``"ray"``).
        RuntimeError: Actors disagree on spaces. Env construction errors inside an actor are re-raised
            (as Ray's ``RayActorError`` carrying the cause); what a sub-env raises in a later call (step, reset,
            ``call``) is re-raised by that call on the driver as is.

    Example::

        import ray, arl_envs
        ray.init(address="auto")              # or nothing: a local Ray starts on first use
        venv = arl_envs.make_vec("arl/math.arithmetic-v1", 64, mode="ray", envs_per_actor=16,
                                 actor_options={"num_cpus": 1})
        obs, info = venv.reset(seed=0)
        venv.step_async(actions); ...; obs, rew, term, trunc, info = venv.step_wait()
        # cheap envs, driver able to reach the workers' nodes: steps over direct sockets (hop < 1 ms)
        fast = arl_envs.make_vec("arl/math.arithmetic-v1", 64, mode="ray", envs_per_actor=64, transport="socket")
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        *,
        envs_per_actor: int = 1,
        actor_options: dict[str, Any] | None = None,
        shared_retriever: bool = False,
        retriever_options: dict[str, Any] | None = None,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        copy: bool = True,
        transport: str = "ray",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        actor_timeout_s: float | None = DEFAULT_ACTOR_TIMEOUT_S,
        **env_kwargs: Any,
    ) -> None:
        ray = import_ray()
        super().__init__()
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if envs_per_actor < 1:
            raise ValueError(f"envs_per_actor must be >= 1, got {envs_per_actor}")
        if max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, got {max_restarts}")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {transport!r}")
        if actor_timeout_s is not None and not actor_timeout_s > 0:
            raise ValueError(f"actor_timeout_s must be > 0 or None, got {actor_timeout_s!r}")
        self.actor_timeout_s = None if actor_timeout_s is None else float(actor_timeout_s)
        self._silenced: set[int] = set()  # actors killed by the step deadline, until their replacement
        self.transport = transport
        from arl_envs.vector_modes import as_autoreset_mode

        autoreset_mode = as_autoreset_mode(autoreset_mode)
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be next_step or same_step, got {autoreset_mode}")
        self._authkey = os.urandom(32)
        self._ray = ray
        if not ray.is_initialized():
            ray.init()
        if not env_id.startswith("arl_envs:") and env_id.startswith("arl/"):
            env_id = f"arl_envs:{env_id}"
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self.num_envs = num_envs
        self.envs_per_actor = envs_per_actor
        self.autoreset_mode = autoreset_mode
        self.copy = copy
        self.max_restarts = max_restarts
        self.actor_options = {"num_cpus": DEFAULT_ACTOR_CPUS, **(actor_options or {}),
                              "max_restarts": 0, "max_task_retries": 0}
        self._slices = [list(range(start, min(start + envs_per_actor, num_envs)))
                        for start in range(0, num_envs, envs_per_actor)]
        self._actor_of = np.repeat(np.arange(len(self._slices)), [len(s) for s in self._slices])

        self._retrievers: list[Any] = []
        self._retriever_nodes: set[str] = set()  # nodes given a retriever service by this vector env
        self._retriever_name: str | None = None
        if shared_retriever:
            from arl_envs.registration import register_all

            register_all()  # the id table, to read the search env's defaults

            self._start_retrievers(shared_retriever_config(env_id.removeprefix("arl_envs:"), self.env_kwargs),
                                   retriever_options)

        self._worker_cls = ray.remote(EnvWorker)
        self._actors: list[Any] = [self._new_actor(k) for k in range(len(self._slices))]
        self.actor_restarts = np.zeros(len(self._slices), dtype=np.int64)
        self._links: list[Any] = [None] * len(self._slices)  # per actor: its step socket (transport="socket")
        self._serve_refs: list[Any] = [None] * len(self._slices)  # per actor: its running EnvWorker.serve
        spaces = ray.get([a.spaces.remote() for a in self._actors])
        if transport == "socket":
            self._open_links(range(len(self._slices)))
        obs_space, act_space, metadata, render_mode = spaces[0]
        for other in spaces[1:]:
            if other[0] != obs_space or other[1] != act_space:
                raise RuntimeError("actors report different observation/action spaces")
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, num_envs)
        self.action_space = batch_space(act_space, num_envs)
        self.metadata = dict(metadata)
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = render_mode

        self._env_obs: list[Any] = [None] * num_envs
        self._observations = create_empty_array(obs_space, n=num_envs, fn=np.zeros)
        self._autoreset_envs = np.zeros(num_envs, dtype=np.bool_)
        self._reset_seeds: list[int | None] = [None] * num_envs  # seeds of the pending autoresets
        self._episode_seeds: list[int | None] = [None] * num_envs  # seed of each sub-env's last explicit reset
        self._last_info: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self._pending: _Pending | None = None
        # Counters (driver side): what the trainer was shown; and what the live worker must have done.
        self._started = np.zeros(num_envs, dtype=np.int64)
        self._finished = np.zeros(num_envs, dtype=np.int64)
        self._env_errors = np.zeros(num_envs, dtype=np.int64)
        self._env_restarts = np.zeros(num_envs, dtype=np.int64)
        self._worker_resets = np.zeros(num_envs, dtype=np.int64)
        self._worker_steps = np.zeros(num_envs, dtype=np.int64)
        self.closed = False

    # ------------------------------------------------------------------ actors
    def _new_actor(self, k: int) -> Any:
        return self._worker_cls.options(**self.actor_options).remote(
            self.env_id, len(self._slices[k]), self.env_kwargs, self._retriever_name)

    def _start_retrievers(self, config: dict[str, Any], options: dict[str, Any] | None) -> None:
        digest = hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
        self._retriever_name = f"arl-retriever-{digest}"
        self._retriever_config, self._retriever_options = config, options
        self._retrievers.extend(start_node_services(
            self._ray, self._retriever_name, config, options, self._retriever_nodes))

    def _open_links(self, ks: Sequence[int]) -> None:
        """Connect to the step sockets of actors ``ks`` (``transport="socket"``); see :meth:`EnvWorker.serve`.

        Raises:
            RayActorError: An actor died before listening (its constructor failed, or it was killed).
            ConnectionError: The actor's node IP and port cannot be reached from this process (a firewall between
                nodes, or a Ray Client driver outside the cluster): use ``transport="ray"``.
        """
        from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

        ray = self._ray
        addresses = ray.get([self._actors[k].listen.remote() for k in ks])
        for k, address in zip(ks, addresses, strict=True):
            self._serve_refs[k] = self._actors[k].serve.remote(self._authkey)
            try:
                sock = socket.create_connection(tuple(address), timeout=CONNECT_TIMEOUT_S)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                link = Connection(sock.detach())
                answer_challenge(link, self._authkey)
                deliver_challenge(link, self._authkey)
            except (OSError, EOFError) as exc:
                done, _ = ray.wait([self._serve_refs[k]], timeout=CONNECT_TIMEOUT_S)
                if done:  # it died after listening: a death like any other
                    raise _ActorLost(f"env actor {k} died while connecting: {self._serve_outcome(done[0])}") from exc
                raise ConnectionError(f"cannot reach env actor {k}'s step socket at {address[0]}:{address[1]} "
                                      f"({exc}); pass transport='ray' to step through Ray's own calls") from exc
            self._links[k] = link

    def _close_link(self, k: int) -> None:
        link, self._links[k] = self._links[k], None
        if link is not None:
            with contextlib.suppress(OSError):
                link.close()

    def _replace_actor(self, k: int, cause: BaseException) -> None:
        """Kill what is left of actor ``k`` and start a new one (same arguments); a replacement that dies before
        it answers counts as one more restart."""
        while True:
            if self.actor_restarts[k] >= self.max_restarts:
                raise ActorRestartsExhausted(
                    f"env actor {k} (sub-envs {self._slices[k]}) died {self.actor_restarts[k] + 1} times; "
                    f"max_restarts={self.max_restarts}. Last error: {cause}") from cause
            self._close_link(k)
            with contextlib.suppress(Exception):  # already gone is fine
                self._ray.kill(self._actors[k], no_restart=True)
            if self._retriever_name is not None:  # nodes that joined since: give them a service first
                try:
                    self._start_retrievers(self._retriever_config, self._retriever_options)
                except Exception as exc:  # noqa: BLE001 - without one, the new actor's envs use their own index
                    warnings.warn(f"could not start a shared retriever on a new node: {exc}", stacklevel=2)
            self._actors[k] = self._new_actor(k)
            self.actor_restarts[k] += 1
            for i in self._slices[k]:
                self._env_restarts[i] += 1
                self._worker_resets[i] = 0
                self._worker_steps[i] = 0
            if self.transport != "socket":
                return
            try:
                self._open_links([k])
                return
            except (self._ray.exceptions.RayActorError, _ActorLost) as exc:
                cause = exc

    def _restart_seed(self, i: int) -> int | None:
        """Seed for sub-env ``i``'s first reset on a replacement actor: derived from its last reset seed and its
        restart count (deterministic), None if it was reset without a seed."""
        base = self._episode_seeds[i]
        if base is None:
            return None
        seq = np.random.SeedSequence([int(base) & 0xFFFFFFFF, int(self._env_restarts[i])])
        return int(seq.generate_state(1, dtype=np.uint32)[0])

    # ------------------------------------------------------------------ calls (one per actor)
    def _submit(self, k: int, name: str, *args: Any) -> Any:
        """Send one worker call to actor ``k`` without waiting: a Ray ref (``transport="ray"``), the actor index
        (the call went down its socket) or the exception that says the actor is gone."""
        message = pickle.dumps((name, args), protocol=pickle.HIGHEST_PROTOCOL)
        link = self._links[k]
        if link is None:
            return self._actors[k].rpc.remote(message)
        try:
            link.send_bytes(message)
        except OSError as exc:  # the actor's end is closed: it died
            return _ActorLost(f"env actor {k}'s step socket is closed ({exc})")
        return k

    def _collect(self, calls: list[Any], timeout: float | None = None, got: dict[int, Any] | None = None) -> list[Any]:
        """Wait for the answers to ``calls`` (from :meth:`_submit`, one per actor, in order).

        Returns:
            Per call its result, or, where the actor died, the exception saying so (RayActorError or
            :class:`_ActorLost`).

        Raises:
            TimeoutError: Not every call was answered within ``timeout`` seconds; the answers that did come are kept
                in ``got`` (call index -> packed reply) for the next try.
            Exception: What an env raised inside an actor (after every answer is read, so no socket is left with
                an unread reply).
        """
        got = {} if got is None else got
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.transport == "ray":
            refs = [c for i, c in enumerate(calls) if i not in got and not isinstance(c, BaseException)]
            if deadline is not None and refs:
                ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=timeout)
                if len(ready) < len(refs):
                    raise TimeoutError(f"{len(refs) - len(ready)} env actors did not answer in {timeout} s")
            raw = self._ray_get_each(calls, got)
        else:
            raw = self._socket_wait(calls, deadline, got)
        return self._unpack(raw)

    def _ray_get_each(self, calls: list[Any], got: dict[int, Any]) -> list[Any]:
        todo = [i for i, c in enumerate(calls) if i not in got and not isinstance(c, BaseException)]
        try:
            for i, packed in zip(todo, self._ray.get([calls[i] for i in todo]), strict=True):
                got[i] = packed  # one blocking call in the common case
        except self._ray.exceptions.RayActorError:
            for i in todo:
                try:
                    got[i] = self._ray.get(calls[i])
                except self._ray.exceptions.RayActorError as exc:
                    got[i] = exc
        return [c if isinstance(c, BaseException) else got[i] for i, c in enumerate(calls)]

    def _socket_wait(self, calls: list[Any], deadline: float | None, got: dict[int, Any]) -> list[Any]:
        from multiprocessing.connection import wait

        waiting = {self._links[c]: i for i, c in enumerate(calls)
                   if i not in got and not isinstance(c, BaseException)}
        while waiting:
            left = LIVENESS_CHECK_S if deadline is None else min(LIVENESS_CHECK_S, deadline - time.monotonic())
            ready = wait(list(waiting), timeout=max(left, 0.0))
            for link in ready:
                i = waiting.pop(link)
                try:
                    got[i] = link.recv_bytes()
                except (EOFError, OSError) as exc:  # the process is gone: the kernel closed its end
                    got[i] = _ActorLost(f"env actor {calls[i]}'s step socket closed ({type(exc).__name__})")
            if ready or not waiting:
                continue
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{len(waiting)} env actors did not answer in time")
            # Silent for LIVENESS_CHECK_S: a lost node can leave the connection open. Ray knows whether it died.
            for link, i in list(waiting.items()):
                done, _ = self._ray.wait([self._serve_refs[calls[i]]], timeout=0)
                if done:
                    waiting.pop(link)
                    got[i] = _ActorLost(f"env actor {calls[i]} stopped serving: {self._serve_outcome(done[0])}")
        return [c if isinstance(c, BaseException) else got[i] for i, c in enumerate(calls)]

    def _serve_outcome(self, ref: Any) -> str:
        try:
            return f"served {self._ray.get(ref)} calls"
        except Exception as exc:  # noqa: BLE001 - the actor's death, as Ray reports it
            return f"{type(exc).__name__}: {exc}"

    @staticmethod
    def _unpack(raw: list[Any]) -> list[Any]:
        out, error = [], None
        for packed in raw:
            if isinstance(packed, BaseException):
                out.append(packed)
                continue
            ok, value = pickle.loads(packed)
            if not ok and error is None:
                error = value
            out.append(value)
        if error is not None:
            raise error
        return out

    async def _acollect(self, calls: list[Any]) -> list[Any]:
        """Awaitable :meth:`_collect`: Ray refs are awaited; sockets are waited on in a worker thread."""
        if self.transport == "socket":
            return await asyncio.get_running_loop().run_in_executor(None, self._collect, calls)
        waiting = [c for c in calls if not isinstance(c, BaseException)]
        answers = iter(await asyncio.gather(*waiting, return_exceptions=True))
        raw = []
        for c in calls:
            res = c if isinstance(c, BaseException) else next(answers)
            if isinstance(res, BaseException) and not isinstance(res, self._ray.exceptions.RayActorError):
                raise res
            raw.append(res)
        return self._unpack(raw)

    # ------------------------------------------------------------------ reset
    def reset_async(self, seed: int | Sequence[int | None] | None = None,
                    options: dict[str, Any] | None = None) -> None:
        """Send a reset to every actor (or to the sub-envs of ``options["reset_mask"]``); collect it with
        :meth:`reset_wait`. Seeds as :meth:`reset`.

        Raises:
            RuntimeError: A call is already pending.
            ValueError, TypeError: A seed list of the wrong length, or a malformed ``reset_mask`` (as Gymnasium).
        """
        self._check_idle()
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"If seeds are passed as a list the length must match num_envs={self.num_envs} but "
                             f"got length={len(seeds)}.")
        options = dict(options) if options is not None else None
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
            if mask.shape != (self.num_envs,):
                raise ValueError(f"`options['reset_mask']` must have shape `({self.num_envs},)`, got {mask.shape}")
            if mask.dtype != np.bool_:
                raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
            if not np.any(mask):
                raise ValueError("`options['reset_mask']` must contain a boolean array with at least one True value")
        calls = [self._reset_call(k, seeds, options, mask) for k in range(len(self._slices))]
        self._pending = _Pending("reset", calls, (seeds, options, mask))

    def _reset_call(self, k: int, seeds: list[int | None], options: dict[str, Any] | None, mask: np.ndarray) -> Any:
        idx = self._slices[k]
        return self._submit(k, "reset", [seeds[i] for i in idx], options, [bool(mask[i]) for i in idx])

    def _reset_until_alive(self, k: int, res: Any, seeds: list[int | None], options: dict[str, Any] | None,
                           mask: np.ndarray) -> list[Any]:
        """``res`` (actor ``k``'s reset results), or, while it is a dead actor's error, the same reset on a
        replacement actor (bounded by ``max_restarts``)."""
        while isinstance(res, BaseException):
            self._replace_actor(k, res)
            res = self._collect([self._reset_call(k, seeds, options, mask)])[0]
        return res

    def reset_wait(self) -> tuple[Any, dict[str, Any]]:
        """Results of :meth:`reset_async`: ``(observations, infos)``.

        A reset that meets a dead actor replaces it and resets again with the same seeds (nothing was shown yet).

        Raises:
            RuntimeError: No reset pending. ActorRestartsExhausted: See ``max_restarts``.
        """
        return self._finish_reset(self._wait_pending("reset"))

    async def areset(self, seed: int | Sequence[int | None] | None = None,
                     options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Awaitable :meth:`reset` (the actors' results are awaited, not blocked on)."""
        self.reset_async(seed=seed, options=options)
        return self._finish_reset(await self._await_pending("reset"))

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the sub-envs (all, or those of ``options["reset_mask"]``) and return ``(observations, infos)``.

        Args:
            seed: None (random), an int ``s`` (sub-env ``i`` gets ``s + i``) or one seed per sub-env.
            options: Passed to every sub-env's ``reset`` (``reset_mask`` is the vector env's own, as Gymnasium).
        """
        self.reset_async(seed=seed, options=options)
        return self.reset_wait()

    def _finish_reset(self, results: list[Any]) -> tuple[Any, dict[str, Any]]:
        seeds, options, mask = self._context
        results = [self._reset_until_alive(k, res, seeds, options, mask) for k, res in enumerate(results)]
        infos: dict[str, Any] = {}
        for k, res in enumerate(results):
            for j, i in enumerate(self._slices[k]):
                if res[j] is None:
                    continue
                self._env_obs[i], env_info = res[j]
                infos = self._add_info(infos, env_info, i)
                self._record_reset(i, env_info, seeds[i], explicit=True)
                self._autoreset_envs[i] = False
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return (deepcopy(self._observations) if self.copy else self._observations), infos

    def _record_reset(self, i: int, info: dict[str, Any], seed: int | None, explicit: bool = False) -> None:
        """Count a reset shown for sub-env ``i``; an explicit or restart seed becomes the base of later restart
        seeds (a plain autoreset, seed None, keeps the previous base)."""
        self._started[i] += 1
        self._worker_resets[i] += 1
        if explicit or seed is not None:
            self._episode_seeds[i] = seed
        self._reset_seeds[i] = None
        self._last_info[i] = info

    # ------------------------------------------------------------------ step
    def step_async(self, actions: Any) -> None:
        """Send one step to every actor; collect it with :meth:`step_wait`.

        Args:
            actions: One action per sub-env (any sequence of ``num_envs`` strings).

        Raises:
            RuntimeError: A call is already pending. ValueError: Wrong number of actions.
        """
        self._check_idle()
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            reset_first = np.zeros(self.num_envs, dtype=np.bool_)
            calls = [self._submit(k, "step_same", [actions[i] for i in idx], [self._reset_seeds[i] for i in idx])
                     for k, idx in enumerate(self._slices)]
        else:
            reset_first = self._autoreset_envs.copy()
            calls = [self._submit(k, "step", [actions[i] for i in idx], [bool(reset_first[i]) for i in idx],
                                  [self._reset_seeds[i] for i in idx])
                     for k, idx in enumerate(self._slices)]
        self._pending = _Pending("step", calls, reset_first)

    def step_wait(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Results of :meth:`step_async`: ``(observations, rewards, terminations, truncations, infos)``.

        Args:
            timeout: Seconds to wait for all actors; None waits as long as it takes.

        Raises:
            TimeoutError: Not every actor answered within ``timeout`` (the step stays pending; call again).
            RuntimeError: No step pending. ActorRestartsExhausted: See ``max_restarts``.
        """
        return self._finish_step(self._wait_pending("step", timeout))

    async def astep(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Awaitable :meth:`step`: other coroutines (generation, other vector envs) run while the actors step."""
        self.step_async(actions)
        return self._finish_step(await self._await_pending("step"))

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every sub-env (next-step autoreset); see :meth:`step_async` for ``actions``. Actors that do not
        answer within ``actor_timeout_s`` are killed: their sub-envs are cut with ``env_error``."""
        self.step_async(actions)
        if self.actor_timeout_s is None:
            return self.step_wait()
        try:
            return self.step_wait(self.actor_timeout_s)
        except TimeoutError:
            self._kill_silent_actors()
            return self.step_wait()

    def _kill_silent_actors(self) -> None:
        """Kill every actor whose pending call has not been answered (call ``k`` went to actor ``k``): the next
        wait then sees them dead and replaces them (:meth:`_recover_step`)."""
        pending = self._check_pending("step")
        waiting = {k: c for k, c in enumerate(pending.calls) if k not in pending.got and not isinstance(c, BaseException)}
        if self.transport == "ray" and waiting:
            ready, _ = self._ray.wait(list(waiting.values()), num_returns=len(waiting), timeout=0)
            waiting = {k: c for k, c in waiting.items() if c not in ready}
        for k in waiting:
            self._silenced.add(k)
            with contextlib.suppress(Exception):  # already gone is fine
                self._ray.kill(self._actors[k], no_restart=True)

    def _finish_step(self, results: list[Any]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        reset_first = self._context
        n = self.num_envs
        rewards = np.zeros(n, dtype=np.float64)
        terms = np.zeros(n, dtype=np.bool_)
        truncs = np.zeros(n, dtype=np.bool_)
        per_env: list[tuple[Any, float, bool, bool, dict[str, Any]] | None] = [None] * n
        for k, res in enumerate(results):
            if isinstance(res, BaseException):
                self._recover_step(k, res, reset_first, per_env)
                continue
            for j, i in enumerate(self._slices[k]):
                per_env[i] = res[j]
                if reset_first[i]:
                    self._record_reset(i, res[j][4], self._reset_seeds[i])
                else:
                    self._worker_steps[i] += 1
                    if len(res[j]) > 5 and res[j][5] is not None:  # same-step autoreset: reset in this step
                        self._record_reset(i, res[j][4], self._reset_seeds[i])
        infos: dict[str, Any] = {}
        for i, entry in enumerate(per_env):
            assert entry is not None
            self._env_obs[i], rewards[i], terms[i], truncs[i], env_info = entry[:5]
            if len(entry) > 5 and entry[5] is not None:  # as SyncVectorEnv(autoreset_mode=SAME_STEP)
                infos = self._add_info(infos, {"final_obs": entry[5][0], "final_info": entry[5][1]}, i)
            infos = self._add_info(infos, env_info, i)
            self._last_info[i] = env_info
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        done = np.logical_or(terms, truncs)
        self._finished += done
        self._autoreset_envs = done
        return ((deepcopy(self._observations) if self.copy else self._observations),
                rewards, terms, truncs, infos)

    def _recover_step(self, k: int, exc: BaseException, reset_first: np.ndarray,
                      per_env: list[Any]) -> None:
        """Actor ``k`` died during a step: replace it; its mid-episode sub-envs end with ``env_error``."""
        self._replace_actor(k, exc)
        why = (f"did not answer within {self.actor_timeout_s:g} s and was killed" if k in self._silenced
               else f"died ({type(exc).__name__})")
        self._silenced.discard(k)
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
            res = self._reset_until_alive(k, self._collect([self._reset_call(k, seeds, None, mask)])[0], seeds, None,
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
        res = self._reset_until_alive(k, self._collect([self._reset_call(k, seeds, None, mask)])[0], seeds, None, mask)
        for j, i in enumerate(self._slices[k]):
            obs, info = res[j]
            final = (self._env_obs[i], self._cut_info(i, message))
            self._env_errors[i] += 1
            self._record_reset(i, info, seeds[i])
            per_env[i] = (obs, 0.0, False, True, {**info, "env_error": message}, final)

    # ------------------------------------------------------------------ helpers
    def _check_idle(self) -> None:
        if self.closed:
            raise RuntimeError("the vector env is closed")
        if self._pending is not None:
            raise RuntimeError(f"a {self._pending.kind} is pending: call {self._pending.kind}_wait() first")

    def _check_pending(self, kind: str) -> _Pending:
        if self._pending is None or self._pending.kind != kind:
            raise RuntimeError(f"no {kind} pending: call {kind}_async() first")
        return self._pending

    def _wait_pending(self, kind: str, timeout: float | None = None) -> list[Any]:
        """The answers to the pending ``kind`` call; its context goes to ``self._context``. A timeout leaves it
        pending (answers already read are kept); anything else ends it."""
        pending = self._check_pending(kind)
        try:
            results = self._collect(pending.calls, timeout, pending.got)
        except TimeoutError:
            raise
        except BaseException:
            self._pending = None
            raise
        self._pending, self._context = None, pending.context
        return results

    async def _await_pending(self, kind: str) -> list[Any]:
        pending = self._check_pending(kind)
        try:
            results = await self._acollect(pending.calls)
        finally:
            self._pending = None
        self._context = pending.context
        return results

    def _call_all(self, name: str, per_actor_args: list[tuple]) -> list[Any]:
        """One worker call per actor, waited for; a dead actor raises (outside the step/reset paths no
        replacement is made: the next step or reset does that)."""
        self._check_idle()
        results = self._collect([self._submit(k, name, *args) for k, args in enumerate(per_actor_args)])
        for res in results:
            if isinstance(res, BaseException):
                raise res
        return results

    # ------------------------------------------------------------------ counters, attributes
    def episode_counters(self) -> dict[str, np.ndarray]:
        """Per sub-env (``int64[num_envs]``): ``started`` (resets shown), ``finished`` (episodes ended by a flag),
        ``env_errors`` (steps cut by a dead actor), ``restarts`` (actor replacements of its slot)."""
        return {"started": self._started.copy(), "finished": self._finished.copy(),
                "env_errors": self._env_errors.copy(), "restarts": self._env_restarts.copy()}

    def worker_counters(self) -> dict[str, np.ndarray]:
        """What the live actors did vs what the driver expects, per sub-env (``int64[num_envs]``):
        ``resets``/``steps`` counted by the actor since it was built and ``expected_resets``/``expected_steps``
        counted by the driver since that actor's start; ``pid`` of the actor process. Equal pairs mean no step
        was lost or applied twice."""
        rows = self._call_all("counters", [()] * len(self._actors))
        out = {key: np.concatenate([np.asarray(r[key], dtype=np.int64) for r in rows]) for key in ("resets", "steps", "pid")}
        out["expected_resets"] = self._worker_resets.copy()
        out["expected_steps"] = self._worker_steps.copy()
        return out

    def actor_busy_s(self) -> np.ndarray:
        """Seconds each live actor spent inside its calls since it was built (``float64[num_actors]``): unpacking
        the call, the env work, packing the answer. Wall time of a step minus this is what the hop costs."""
        rows = self._call_all("counters", [()] * len(self._actors))
        return np.asarray([r["busy_s"] for r in rows], dtype=np.float64)

    @property
    def actors(self) -> list[Any]:
        """The live env actor handles (actor ``k`` holds sub-envs ``k * envs_per_actor ...``)."""
        return list(self._actors)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``getattr(env, name)(*args, **kwargs)`` on every sub-env (the attribute if not callable), in order."""
        rows = self._call_all("call", [(name, args, kwargs)] * len(self._actors))
        return tuple(x for row in rows for x in row)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every sub-env, in order."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set ``name`` on every sub-env: one value per sub-env, or one value for all."""
        self._check_idle()
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"values must have length num_envs={self.num_envs}, got {len(values)}")
        self._call_all("set_attr", [(name, [values[i] for i in idx]) for idx in self._slices])

    def render(self) -> tuple[Any, ...] | None:
        """Every sub-env's ``render()``, in order."""
        return self.call("render")

    def close_extras(self, **kwargs: Any) -> None:
        """Close the envs inside the actors (sandboxes, browsers), then kill the actors and retrievers."""
        ray = self._ray
        self._pending = None
        with contextlib.suppress(Exception):  # a dead actor has nothing left to close
            if self.transport == "socket":  # each serve() answers the close, then returns
                for link in self._links:
                    with contextlib.suppress(OSError, AttributeError):  # None: a slot left without a link
                        link.send_bytes(_CLOSE_MESSAGE)
                waits = [ref for ref in self._serve_refs if ref is not None]
            else:
                waits = [a.rpc.remote(_CLOSE_MESSAGE) for a in self._actors]
            ray.wait(waits, num_returns=len(waits), timeout=CLOSE_TIMEOUT_S)
        for k in range(len(self._links)):
            self._close_link(k)
        for handle in [*self._actors, *self._retrievers]:
            with contextlib.suppress(Exception):
                ray.kill(handle, no_restart=True)
        self._actors, self._retrievers = [], []
