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

Modules: :mod:`arl_envs.ray_worker` (the actors' side, :class:`EnvWorker`), :mod:`arl_envs.ray_actors` (the driver's
side of the transport: start, call, kill and replace actors, :class:`~arl_envs.ray_actors.ActorPool`),
:mod:`arl_envs.ray_recovery` (what happens to the sub-envs of a dead actor); this module keeps the vector state.

Source of the protocol: Gymnasium 1.x ``SyncVectorEnv``/``AsyncVectorEnv`` (``reset``/``step``,
``step_async``/``step_wait``, ``call``/``get_attr``/``set_attr``, the ``_key`` info masks, autoreset modes); Ray's
actor API (https://docs.ray.io/en/latest/ray-core/actors.html).
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from arl_envs.ray_actors import (  # noqa: F401 - the transport's names, importable from here too
    CLOSE_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    LIVENESS_CHECK_S,
    ActorPool,
    ActorRestartsExhausted,
    _ActorLost,
)
from arl_envs.ray_recovery import ActorRecovery
from arl_envs.ray_retriever import (  # noqa: F401 - RetrieverService, DEFAULT_RETRIEVER_CPUS: public names kept here
    DEFAULT_RETRIEVER_CPUS,
    RetrieverService,
    shared_retriever_config,
)
from arl_envs.ray_worker import (  # noqa: F401 - the worker's names, importable from here too
    _CLOSE_MESSAGE,
    _WORKER_CALLS,
    ACCEPT_TIMEOUT_S,
    RAY_INSTALL_HINT,
    EnvWorker,
    import_ray,
)

#: CPUs reserved per env actor unless ``actor_options`` says otherwise (Ray's scheduling unit).
DEFAULT_ACTOR_CPUS = 1.0
#: Replacements of one actor slot before the vector env gives up and raises :class:`ActorRestartsExhausted`.
DEFAULT_MAX_RESTARTS = 8
#: Seconds :meth:`RayVectorEnv.step` waits for every actor before it kills the ones that have not answered (a hung
#: actor process: its sub-envs are cut with ``env_error`` and the actor replaced, as after a crash). Each sub-env's
#: own step is bounded by its env's deadlines (``arl_envs/CONTRACT.md``); this bounds the actor around them.
DEFAULT_ACTOR_TIMEOUT_S = 900.0
#: Ways the driver talks to its actors per call (see :class:`RayVectorEnv`); the first is the default.
TRANSPORTS = ("ray", "socket")


def reset_arguments(seed: int | Sequence[int | None] | None, options: dict[str, Any] | None,
                    num_envs: int) -> tuple[list[int | None], dict[str, Any] | None, np.ndarray]:
    """A vector reset's ``(seeds, options, mask)``: one seed per sub-env (None, ``seed + i``, or the list given),
    a copy of ``options`` without ``reset_mask``, and that mask (all True without one), checked as Gymnasium does.

    Raises:
        ValueError, TypeError: A seed list of the wrong length, or a malformed ``reset_mask``.
    """
    if seed is None:
        seeds: list[int | None] = [None] * num_envs
    elif isinstance(seed, int):
        seeds = [seed + i for i in range(num_envs)]
    else:
        seeds = list(seed)
    if len(seeds) != num_envs:
        raise ValueError(f"If seeds are passed as a list the length must match num_envs={num_envs} but "
                         f"got length={len(seeds)}.")
    options = dict(options) if options is not None else None
    mask = np.ones(num_envs, dtype=np.bool_)
    if options is not None and "reset_mask" in options:
        mask = options.pop("reset_mask")
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
        if mask.shape != (num_envs,):
            raise ValueError(f"`options['reset_mask']` must have shape `({num_envs},)`, got {mask.shape}")
        if mask.dtype != np.bool_:
            raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
        if not np.any(mask):
            raise ValueError("`options['reset_mask']` must contain a boolean array with at least one True value")
    return seeds, options, mask


class RayVectorEnv(ActorRecovery, gym.vector.VectorEnv):
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
        self.transport = transport
        from arl_envs.vector_modes import as_autoreset_mode

        autoreset_mode = as_autoreset_mode(autoreset_mode)
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be next_step or same_step, got {autoreset_mode}")
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

        self._pool = ActorPool(ray, env_id, self.env_kwargs, self._slices, self.actor_options, transport=transport,
                               on_replace=self._on_actor_replaced)
        if shared_retriever:
            from arl_envs.registration import register_all

            register_all()  # the id table, to read the search env's defaults

            self._pool.start_retrievers(shared_retriever_config(env_id.removeprefix("arl_envs:"), self.env_kwargs),
                                        retriever_options)
        spaces = self._pool.start()
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
        # Counters (driver side): what the trainer was shown; and what the live worker must have done.
        self._started = np.zeros(num_envs, dtype=np.int64)
        self._finished = np.zeros(num_envs, dtype=np.int64)
        self._env_errors = np.zeros(num_envs, dtype=np.int64)
        self._env_restarts = np.zeros(num_envs, dtype=np.int64)
        self._worker_resets = np.zeros(num_envs, dtype=np.int64)
        self._worker_steps = np.zeros(num_envs, dtype=np.int64)
        self.closed = False

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
        seeds, options, mask = reset_arguments(seed, options, self.num_envs)
        calls = [self._reset_call(k, seeds, options, mask) for k in range(len(self._slices))]
        self._pool.send_all("reset", calls, (seeds, options, mask))

    def _reset_call(self, k: int, seeds: list[int | None], options: dict[str, Any] | None, mask: np.ndarray) -> Any:
        idx = self._slices[k]
        return self._pool.submit(k, "reset", [seeds[i] for i in idx], options, [bool(mask[i]) for i in idx])

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
            calls = [self._pool.submit(k, "step_same", [actions[i] for i in idx], [self._reset_seeds[i] for i in idx])
                     for k, idx in enumerate(self._slices)]
        else:
            reset_first = self._autoreset_envs.copy()
            calls = [self._pool.submit(k, "step", [actions[i] for i in idx], [bool(reset_first[i]) for i in idx],
                                  [self._reset_seeds[i] for i in idx])
                     for k, idx in enumerate(self._slices)]
        self._pool.send_all("step", calls, reset_first)

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
        except TimeoutError:  # kill the actors that have not answered: the wait sees them dead (_recover_step)
            pending = self._pool.check_pending("step")
            self._pool.kill_silent(pending.calls, pending.got)
            return self.step_wait()

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

    # ------------------------------------------------------------------ helpers
    def _check_idle(self) -> None:
        if self.closed:
            raise RuntimeError("the vector env is closed")
        self._pool.check_idle()

    def _wait_pending(self, kind: str, timeout: float | None = None) -> list[Any]:
        """The answers to the pending ``kind`` call (see :meth:`ActorPool.wait_pending`); its context goes to
        ``self._context``."""
        results, self._context = self._pool.wait_pending(kind, timeout)
        return results

    async def _await_pending(self, kind: str) -> list[Any]:
        results, self._context = await self._pool.await_pending(kind)
        return results

    def _call_all(self, name: str, per_actor_args: list[tuple]) -> list[Any]:
        self._check_idle()
        return self._pool.call_all(name, per_actor_args)

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
        rows = self._call_all("counters", [()] * len(self._pool.actors))
        out = {key: np.concatenate([np.asarray(r[key], dtype=np.int64) for r in rows]) for key in ("resets", "steps", "pid")}
        out["expected_resets"] = self._worker_resets.copy()
        out["expected_steps"] = self._worker_steps.copy()
        return out

    def actor_busy_s(self) -> np.ndarray:
        """Seconds each live actor spent inside its calls since it was built (``float64[num_actors]``): unpacking
        the call, the env work, packing the answer. Wall time of a step minus this is what the hop costs."""
        rows = self._call_all("counters", [()] * len(self._pool.actors))
        return np.asarray([r["busy_s"] for r in rows], dtype=np.float64)

    @property
    def actors(self) -> list[Any]:
        """The live env actor handles (actor ``k`` holds sub-envs ``k * envs_per_actor ...``)."""
        return list(self._pool.actors)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``getattr(env, name)(*args, **kwargs)`` on every sub-env (the attribute if not callable), in order."""
        rows = self._call_all("call", [(name, args, kwargs)] * len(self._pool.actors))
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

    @property
    def actor_restarts(self) -> np.ndarray:
        """Replacements so far per actor slot (``int64[num_actors]``)."""
        return self._pool.restarts

    def close_extras(self, **kwargs: Any) -> None:
        """Close the envs inside the actors (sandboxes, browsers), then kill the actors and retrievers."""
        self._pool.close()
