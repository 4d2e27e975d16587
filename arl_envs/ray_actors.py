"""The driver's side of the actor transport of :class:`~arl_envs.ray_vector.RayVectorEnv`: :class:`ActorPool`.

An :class:`ActorPool` starts the env actors (:class:`~arl_envs.ray_worker.EnvWorker`, actor ``k`` holding sub-envs
``slices[k]``) and, for search ids, the per-node retriever services they use; sends each actor one packed call
(through Ray, or down the actor's step socket with ``transport="socket"``) and collects the answers, telling a dead
actor (its exception in place of the answer) from an env's error (raised); kills actors that do not answer; and
replaces a dead actor by a fresh one built from the same arguments (a new step socket too), at most
``max_restarts`` times per actor slot. The vector state (seeds, autoreset, counters) stays with the vector env.
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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arl_envs.core.errors import ArlError
from arl_envs.ray_retriever import start_node_services
from arl_envs.ray_worker import _CLOSE_MESSAGE, EnvWorker

#: Seconds :meth:`ActorPool.close` waits for actors to close their envs before killing them.
CLOSE_TIMEOUT_S = 30.0
#: Seconds the driver waits for the TCP connection to an actor's step socket before giving up.
CONNECT_TIMEOUT_S = 30.0
#: While waiting on step sockets, ask Ray every this many seconds whether a silent actor is still alive (a lost
#: node may leave its TCP connection open without a reset).
LIVENESS_CHECK_S = 5.0


class ActorRestartsExhausted(ArlError):
    """An env actor slot died more than ``max_restarts`` times (or could not be rebuilt); the vector env stops."""


class _ActorLost(ConnectionError):
    """An env actor's step socket closed or its ``serve`` ended: the actor is treated as dead."""


@dataclasses.dataclass
class _Pending:
    """A call sent to every actor and not yet collected."""

    kind: str  # "reset" | "step"
    calls: list[Any]  # per actor, what ActorPool.submit returned
    context: Any  # what the caller needs with the answers
    got: dict[int, Any] = dataclasses.field(default_factory=dict)  # answers read before a timeout


class ActorPool:
    """The env actors of one vector env and the calls to them (see the module docstring).

    Args:
        ray: The imported ``ray`` module (initialised).
        env_id: The registered id every actor builds (``arl_envs:`` prefix).
        env_kwargs: Constructor kwargs for every sub-env.
        slices: Sub-env indices per actor (actor ``k`` holds ``slices[k]``).
        actor_options: ``ActorClass.options(...)`` of every env actor.
        transport: ``"ray"`` or ``"socket"`` (see :class:`~arl_envs.ray_vector.RayVectorEnv`).
        on_replace: Called with ``k`` each time actor ``k`` is replaced by a new one (before it is reached).

    Attributes:
        actors: The live actor handles. restarts: Replacements per actor slot (``int64``). retrievers: The
        retriever service actors this pool started. silenced: Actors killed for not answering, until replaced.
        pending: The call sent to every actor (a reset or step) and not yet collected, or None.
    """

    def __init__(self, ray: Any, env_id: str, env_kwargs: dict[str, Any], slices: list[list[int]],
                 actor_options: dict[str, Any], *, transport: str, on_replace: Callable[[int], None]) -> None:
        self.ray = ray
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self.slices = slices
        self.actor_options = actor_options
        self.transport = transport
        self.on_replace = on_replace
        self.authkey = os.urandom(32)
        self.silenced: set[int] = set()  # actors killed by the step deadline, until their replacement
        self.retrievers: list[Any] = []
        self.retriever_nodes: set[str] = set()  # nodes given a retriever service by this pool
        self.retriever_name: str | None = None
        self.actors: list[Any] = []
        self.restarts = np.zeros(len(slices), dtype=np.int64)
        self.links: list[Any] = [None] * len(slices)  # per actor: its step socket (transport="socket")
        self.serve_refs: list[Any] = [None] * len(slices)  # per actor: its running EnvWorker.serve
        self.pending: _Pending | None = None  # the one call sent to every actor and not yet collected
        self._worker_cls = ray.remote(EnvWorker)

    def start(self) -> list[Any]:
        """Start every env actor (and, with ``transport="socket"``, connect to it).

        Returns:
            Per actor ``(observation_space, action_space, metadata, render_mode)`` (:meth:`EnvWorker.spaces`).
        """
        self.actors = [self.new_actor(k) for k in range(len(self.slices))]
        spaces = self.ray.get([a.spaces.remote() for a in self.actors])
        if self.transport == "socket":
            self.open_links(range(len(self.slices)))
        return spaces

    # ------------------------------------------------------------------ actors
    def new_actor(self, k: int) -> Any:
        return self._worker_cls.options(**self.actor_options).remote(
            self.env_id, len(self.slices[k]), self.env_kwargs, self.retriever_name)

    def start_retrievers(self, config: dict[str, Any], options: dict[str, Any] | None) -> None:
        """Start a retriever service serving ``config`` on every alive node that has none from this pool."""
        digest = hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
        self.retriever_name = f"arl-retriever-{digest}"
        self._retriever_config, self._retriever_options = config, options
        self.retrievers.extend(start_node_services(
            self.ray, self.retriever_name, config, options, self.retriever_nodes))

    def open_links(self, ks: Sequence[int]) -> None:
        """Connect to the step sockets of actors ``ks`` (``transport="socket"``); see :meth:`EnvWorker.serve`.

        Raises:
            RayActorError: An actor died before listening (its constructor failed, or it was killed).
            ConnectionError: The actor's node IP and port cannot be reached from this process (a firewall between
                nodes, or a Ray Client driver outside the cluster): use ``transport="ray"``.
        """
        from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

        ray = self.ray
        addresses = ray.get([self.actors[k].listen.remote() for k in ks])
        for k, address in zip(ks, addresses, strict=True):
            self.serve_refs[k] = self.actors[k].serve.remote(self.authkey)
            try:
                sock = socket.create_connection(tuple(address), timeout=CONNECT_TIMEOUT_S)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                link = Connection(sock.detach())
                answer_challenge(link, self.authkey)
                deliver_challenge(link, self.authkey)
            except (OSError, EOFError) as exc:
                done, _ = ray.wait([self.serve_refs[k]], timeout=CONNECT_TIMEOUT_S)
                if done:  # it died after listening: a death like any other
                    raise _ActorLost(f"env actor {k} died while connecting: {self._serve_outcome(done[0])}") from exc
                raise ConnectionError(f"cannot reach env actor {k}'s step socket at {address[0]}:{address[1]} "
                                      f"({exc}); pass transport='ray' to step through Ray's own calls") from exc
            self.links[k] = link

    def close_link(self, k: int) -> None:
        link, self.links[k] = self.links[k], None
        if link is not None:
            with contextlib.suppress(OSError):
                link.close()

    def replace(self, k: int, cause: BaseException, max_restarts: int) -> None:
        """Kill what is left of actor ``k`` and start a new one (same arguments); a replacement that dies before
        it answers counts as one more restart.

        Raises:
            ActorRestartsExhausted: Slot ``k`` has been replaced ``max_restarts`` times already.
        """
        while True:
            if self.restarts[k] >= max_restarts:
                raise ActorRestartsExhausted(
                    f"env actor {k} (sub-envs {self.slices[k]}) died {self.restarts[k] + 1} times; "
                    f"max_restarts={max_restarts}. Last error: {cause}") from cause
            self.close_link(k)
            with contextlib.suppress(Exception):  # already gone is fine
                self.ray.kill(self.actors[k], no_restart=True)
            if self.retriever_name is not None:  # nodes that joined since: give them a service first
                try:
                    self.start_retrievers(self._retriever_config, self._retriever_options)
                except Exception as exc:  # noqa: BLE001 - without one, the new actor's envs use their own index
                    warnings.warn(f"could not start a shared retriever on a new node: {exc}", stacklevel=2)
            self.actors[k] = self.new_actor(k)
            self.restarts[k] += 1
            self.on_replace(k)
            if self.transport != "socket":
                return
            try:
                self.open_links([k])
                return
            except (self.ray.exceptions.RayActorError, _ActorLost) as exc:
                cause = exc

    def kill_silent(self, calls: list[Any], got: dict[int, Any]) -> None:
        """Kill every actor whose call (call ``k`` went to actor ``k``) has not been answered: the next wait then
        sees them dead."""
        waiting = {k: c for k, c in enumerate(calls) if k not in got and not isinstance(c, BaseException)}
        if self.transport == "ray" and waiting:
            ready, _ = self.ray.wait(list(waiting.values()), num_returns=len(waiting), timeout=0)
            waiting = {k: c for k, c in waiting.items() if c not in ready}
        for k in waiting:
            self.silenced.add(k)
            with contextlib.suppress(Exception):  # already gone is fine
                self.ray.kill(self.actors[k], no_restart=True)

    def close(self) -> None:
        """Close the envs inside the actors (sandboxes, browsers), then kill the actors and retrievers."""
        ray = self.ray
        self.pending = None
        with contextlib.suppress(Exception):  # a dead actor has nothing left to close
            if self.transport == "socket":  # each serve() answers the close, then returns
                for link in self.links:
                    with contextlib.suppress(OSError, AttributeError):  # None: a slot left without a link
                        link.send_bytes(_CLOSE_MESSAGE)
                waits = [ref for ref in self.serve_refs if ref is not None]
            else:
                waits = [a.rpc.remote(_CLOSE_MESSAGE) for a in self.actors]
            ray.wait(waits, num_returns=len(waits), timeout=CLOSE_TIMEOUT_S)
        for k in range(len(self.links)):
            self.close_link(k)
        for handle in [*self.actors, *self.retrievers]:
            with contextlib.suppress(Exception):
                ray.kill(handle, no_restart=True)
        self.actors, self.retrievers = [], []

    # ------------------------------------------------------------------ calls (one per actor)
    def submit(self, k: int, name: str, *args: Any) -> Any:
        """Send one worker call to actor ``k`` without waiting: a Ray ref (``transport="ray"``), the actor index
        (the call went down its socket) or the exception that says the actor is gone."""
        message = pickle.dumps((name, args), protocol=pickle.HIGHEST_PROTOCOL)
        link = self.links[k]
        if link is None:
            return self.actors[k].rpc.remote(message)
        try:
            link.send_bytes(message)
        except OSError as exc:  # the actor's end is closed: it died
            return _ActorLost(f"env actor {k}'s step socket is closed ({exc})")
        return k

    def collect(self, calls: list[Any], timeout: float | None = None, got: dict[int, Any] | None = None) -> list[Any]:
        """Wait for the answers to ``calls`` (from :meth:`submit`, one per actor, in order).

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
                ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=timeout)
                if len(ready) < len(refs):
                    raise TimeoutError(f"{len(refs) - len(ready)} env actors did not answer in {timeout} s")
            raw = self._ray_get_each(calls, got)
        else:
            raw = self._socket_wait(calls, deadline, got)
        return self._unpack(raw)

    def _ray_get_each(self, calls: list[Any], got: dict[int, Any]) -> list[Any]:
        todo = [i for i, c in enumerate(calls) if i not in got and not isinstance(c, BaseException)]
        try:
            for i, packed in zip(todo, self.ray.get([calls[i] for i in todo]), strict=True):
                got[i] = packed  # one blocking call in the common case
        except self.ray.exceptions.RayActorError:
            for i in todo:
                try:
                    got[i] = self.ray.get(calls[i])
                except self.ray.exceptions.RayActorError as exc:
                    got[i] = exc
        return [c if isinstance(c, BaseException) else got[i] for i, c in enumerate(calls)]

    def _socket_wait(self, calls: list[Any], deadline: float | None, got: dict[int, Any]) -> list[Any]:
        from multiprocessing.connection import wait

        waiting = {self.links[c]: i for i, c in enumerate(calls)
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
                done, _ = self.ray.wait([self.serve_refs[calls[i]]], timeout=0)
                if done:
                    waiting.pop(link)
                    got[i] = _ActorLost(f"env actor {calls[i]} stopped serving: {self._serve_outcome(done[0])}")
        return [c if isinstance(c, BaseException) else got[i] for i, c in enumerate(calls)]

    def _serve_outcome(self, ref: Any) -> str:
        try:
            return f"served {self.ray.get(ref)} calls"
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

    async def acollect(self, calls: list[Any]) -> list[Any]:
        """Awaitable :meth:`collect`: Ray refs are awaited; sockets are waited on in a worker thread."""
        if self.transport == "socket":
            return await asyncio.get_running_loop().run_in_executor(None, self.collect, calls)
        waiting = [c for c in calls if not isinstance(c, BaseException)]
        answers = iter(await asyncio.gather(*waiting, return_exceptions=True))
        raw = []
        for c in calls:
            res = c if isinstance(c, BaseException) else next(answers)
            if isinstance(res, BaseException) and not isinstance(res, self.ray.exceptions.RayActorError):
                raise res
            raw.append(res)
        return self._unpack(raw)

    # ------------------------------------------------------------------ the pending call to every actor
    def check_idle(self) -> None:
        """Raises RuntimeError: a call is pending."""
        if self.pending is not None:
            raise RuntimeError(f"a {self.pending.kind} is pending: call {self.pending.kind}_wait() first")

    def send_all(self, kind: str, calls: list[Any], context: Any) -> None:
        """Keep ``calls`` (one per actor, from :meth:`submit`) as the pending ``kind`` call, with ``context``."""
        self.pending = _Pending(kind, calls, context)

    def check_pending(self, kind: str) -> _Pending:
        """The pending ``kind`` call. Raises RuntimeError: none is pending."""
        if self.pending is None or self.pending.kind != kind:
            raise RuntimeError(f"no {kind} pending: call {kind}_async() first")
        return self.pending

    def wait_pending(self, kind: str, timeout: float | None = None) -> tuple[list[Any], Any]:
        """``(answers, context)`` of the pending ``kind`` call. A timeout leaves it pending (answers already read
        are kept); anything else ends it."""
        pending = self.check_pending(kind)
        try:
            results = self.collect(pending.calls, timeout, pending.got)
        except TimeoutError:
            raise
        except BaseException:
            self.pending = None
            raise
        self.pending = None
        return results, pending.context

    async def await_pending(self, kind: str) -> tuple[list[Any], Any]:
        """Awaitable :meth:`wait_pending` (no timeout)."""
        pending = self.check_pending(kind)
        try:
            results = await self.acollect(pending.calls)
        finally:
            self.pending = None
        return results, pending.context

    def call_all(self, name: str, per_actor_args: list[tuple]) -> list[Any]:
        """One worker call per actor, waited for; a dead actor raises (no replacement is made here: the vector
        env's next step or reset does that)."""
        self.check_idle()
        results = self.collect([self.submit(k, name, *args) for k, args in enumerate(per_actor_args)])
        for res in results:
            if isinstance(res, BaseException):
                raise res
        return results
