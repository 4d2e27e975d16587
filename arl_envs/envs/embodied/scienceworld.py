"""ScienceWorld (the ``scienceworld`` package) as an arl-envs text world: ``arl/embodied.scienceworld-v0``.

ScienceWorld is a text simulator of elementary-school science tasks (boiling water, growing plants, building
circuits, ...) written in Scala; the ``scienceworld`` package bundles the simulator jar and talks to a JVM through
py4j. Source: Wang et al., "ScienceWorld: Is your Agent Smarter than a 5th Grader?", EMNLP 2022;
https://github.com/allenai/ScienceWorld.

JVMs: a JVM takes seconds to start, so each env starts one at its first reset and keeps it across resets (each
reset reloads the task in it). ``close()`` hands the JVM to a small per-process pool of idle JVMs
(:data:`MAX_IDLE_JVMS`) that the next env of the process takes instead of starting its own; the pooled JVMs are
shut down at interpreter exit (and by :func:`shutdown_idle_jvms`); ``keep_jvm_warm=False`` shuts the env's JVM
down in ``close()`` instead. A JVM is only ever used by one env at a time. py4j starts the JVM with
``die_on_exit``, so it also ends when the Python process does.

Steps call the simulator's ``step``, ``getScore`` and ``getCompleted`` directly: ScienceWorld's Python
``ScienceWorldEnv.step`` additionally fetches the look/inventory/task texts and the full list of valid
action-object combinations (thousands of strings) on every step, which costs 10-100x the step itself; that list is
available here on request (``valid_actions=True`` -> ``info["valid_actions"]``).

Deadlines: every batch of calls into the simulator runs under a watchdog: a step's ``step``/``getScore``/
``getCompleted`` (and valid-action listing) ``call_timeout_s`` seconds (default :data:`DEFAULT_CALL_TIMEOUT_S`), a
reset's load and first look, the gold path's generation and the variation listing ``load_timeout_s`` (default
:data:`DEFAULT_LOAD_TIMEOUT_S`: the first load in a fresh JVM takes seconds); when it expires the JVM is killed (SIGKILL, which also ends a stopped JVM), which
breaks py4j's blocked read, and the step returns ``info["env_error"]`` with ``truncated=True`` (a reset or an
expert call raises :class:`~arl_envs.core.errors.InfrastructureError`); the next reset starts a fresh JVM. py4j's
garbage-collection calls into the JVM (made by finalizers on whatever thread collects, outside any deadline) are
switched off; the Java lists this module fetches are released explicitly under the call's deadline.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import threading
import time
from typing import Any, ClassVar

from arl_envs.core.env import Transition
from arl_envs.core.errors import DependencyNotInstalled, InfrastructureError, TaskLoadError
from arl_envs.envs.embodied.command_env import CommandEnv

#: Default task: its gold sequences are short (5-6 commands), so expert runs and conformance stay fast.
DEFAULT_TASK = "find-non-living-thing"
#: Default turn budget (ScienceWorld's own default ``envStepLimit``).
DEFAULT_MAX_TURNS = 100
#: ScienceWorld's score of a completed task (its scores are 0-100; negative means the task was failed).
COMPLETED_SCORE = 100
#: Seconds a step's simulator calls may take before the JVM is killed and the step becomes ``env_error`` (a step
#: takes milliseconds).
DEFAULT_CALL_TIMEOUT_S = 30.0
#: Seconds a reset's load (or the gold path's generation, a variation listing) may take before the JVM is killed
#: (the first load of a task in a fresh JVM takes seconds on a loaded machine; later ones well under a second).
DEFAULT_LOAD_TIMEOUT_S = 120.0
#: Idle JVMs kept per process for the next env (each holds a few hundred MB).
MAX_IDLE_JVMS = 2
#: ScienceWorld's simplifications (``ScienceWorldEnv.get_possible_simplifications()`` plus ``easy`` = all).
SIMPLIFICATIONS = ("easy", "teleportAction", "selfWateringFlowerPots", "openContainers", "openDoors",
                   "noElectricalAction")
SPLITS = ("train", "dev", "test", "all")
#: Commands this env does not pass to the simulator (``reset task`` would wipe the goal progress mid-episode).
BLOCKED_COMMANDS = ("reset task",)
_JAVA_HINT = (
    "ScienceWorld needs a Java runtime (8 or newer) on PATH: apt-get install default-jre-headless "
    "(or run .ci/system-deps)"
)
_INSTALL_HINT = "ScienceWorld needs the scienceworld package: pip install 'arl-envs[embodied]'"

#: JVM options of every simulator JVM. ScienceWorld keeps objects in hash sets keyed by identity hash codes, so
#: the order in which a room lists its contents changed between loads of the same variation (measured: 4 different
#: orders in 6 loads of one variation in one JVM), breaking "same seed, same episode". A constant identity hash
#: (HotSpot's experimental ``hashCode=2``) makes those sets iterate in insertion order: the same text every load.
JVM_OPTIONS = ("-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2")

_pool_lock = threading.Lock()
_launch_lock = threading.Lock()
_idle: list[Any] = []
_atexit_registered = False
# Per-process caches of static task facts: (task, simplification, split) -> variation indices;
# (task, simplification) -> action templates.
_VARIATIONS: dict[tuple[str, str, str], tuple[int, ...]] = {}
_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {}


def java_available() -> bool:
    """Whether a ``java`` executable is on PATH (ScienceWorld's simulator runs in a JVM)."""
    return shutil.which("java") is not None


def _import_scienceworld() -> Any:
    try:
        import scienceworld
    except ImportError as exc:
        raise DependencyNotInstalled(_INSTALL_HINT) from exc
    return scienceworld


def task_names() -> list[str]:
    """ScienceWorld's 30 task names (from the package's task table; no JVM needed)."""
    from scienceworld.constants import ID2TASK

    return list(ID2TASK.values())


def _acquire_jvm() -> Any:
    """An idle pooled ``ScienceWorldEnv`` or a freshly started one (seconds)."""
    global _atexit_registered
    with _pool_lock:
        if not _atexit_registered:  # on first use, not at import: importing the module changes nothing
            atexit.register(shutdown_idle_jvms)
            _atexit_registered = True
        while _idle:
            sw = _idle.pop()
            if _jvm_alive(sw):
                return sw
            _shutdown(sw)
    if not java_available():
        raise DependencyNotInstalled(_JAVA_HINT)
    import scienceworld.scienceworld as sw_module

    launch = sw_module.launch_gateway

    def launch_with_opts(*args: Any, **kwargs: Any) -> Any:
        kwargs["javaopts"] = list(kwargs.get("javaopts") or []) + list(JVM_OPTIONS)
        return launch(*args, **kwargs)

    # ScienceWorldEnv.__init__ starts the JVM through the module's launch_gateway; add our JVM options for this
    # one call (under the lock, so concurrent starts neither race nor see a half-swapped function).
    with _launch_lock:
        sw_module.launch_gateway = launch_with_opts
        try:
            # The step limit is ours (max_turns); ScienceWorld's own limit only applies in its Python step().
            sw = sw_module.ScienceWorldEnv("", envStepLimit=10**9)
        finally:
            sw_module.launch_gateway = launch
    _no_finalizer_calls(sw)
    return sw


def _no_finalizer_calls(sw: Any) -> None:
    """No JVM call from py4j's garbage-collection finalizers: they run on whatever thread happens to collect,
    outside every deadline, and block for good on a JVM that does not answer. New Java objects get no finalizer, and
    those of the JVM's start-up (a few gateway objects, left referenced on the Java side) lose theirs; the Java
    objects this module fetches are released explicitly, under the call's deadline (:func:`_fetch_list`)."""
    from py4j.protocol import smart_decode
    from py4j.finalizer import ThreadSafeFinalizer

    client = sw._gateway._gateway_client
    client.gateway_property.enable_memory_management = False
    prefix = smart_decode(client.address) + smart_decode(client.port)  # finalizer keys: address + port + object id
    with ThreadSafeFinalizer.lock:
        for key in [k for k in ThreadSafeFinalizer.finalizers
                    if k.startswith(prefix) and not k[len(prefix):len(prefix) + 1].isdigit()]:
            ThreadSafeFinalizer.finalizers.pop(key, None)


def _fetch_list(sw: Any, java_list: Any) -> list[str]:
    """A Java list's items as Python strings; the Java object is then released on the Java side."""
    try:
        return [str(x) for x in java_list]
    finally:
        sw._gateway.detach(java_list)


def _release_jvm(sw: Any) -> None:
    with _pool_lock:
        if len(_idle) < MAX_IDLE_JVMS and _jvm_alive(sw):
            _idle.append(sw)
            return
    _shutdown(sw)


def _jvm_alive(sw: Any) -> bool:
    proc = getattr(getattr(sw, "_gateway", None), "java_process", None)
    return proc is not None and proc.poll() is None


def _shutdown(sw: Any) -> None:
    gateway = getattr(sw, "_gateway", None)
    proc = getattr(gateway, "java_process", None)
    if proc is not None and proc.poll() is not None:
        # The JVM is already dead. Mark py4j's client disconnected instead of closing through it: otherwise each
        # Java object py4j garbage-collects later (weakref callbacks, at any GC point of the process) tries to
        # reconnect and logs a traceback, and on CPython 3.11.7 such a callback running inside an ast.parse (an
        # import) made that parse fail with "SystemError: AST constructor recursion depth mismatch".
        client = getattr(gateway, "_gateway_client", None)
        if client is not None:
            client.is_connected = False
    else:
        try:
            sw.close()
        except Exception:  # half-closed: nothing left to release
            pass
    if proc is not None and proc.poll() is None:
        try:
            proc.wait(timeout=5)  # close() asked it to exit
        except Exception:
            proc.kill()
            proc.wait(timeout=10)
    sw.close = lambda: None  # ScienceWorldEnv.__del__ calls close() again; the gateway is gone by then


class SimulatorTimeout(InfrastructureError):
    """A batch of simulator calls ran past its deadline; the JVM was killed."""


class _Deadline:
    """Kills ``sw``'s JVM if the ``with`` block runs longer than ``seconds``; raises :class:`SimulatorTimeout` on
    exit when it did (whatever the block raised or returned by then: a killed JVM's answer is not trusted).

    One watchdog thread per process (started with the first deadline) checks the armed deadlines every
    :data:`WATCHDOG_POLL_S` seconds, so arming one costs a dictionary insert, not a thread per call.
    """

    def __init__(self, sw: Any, seconds: float, what: str) -> None:
        self.proc = getattr(getattr(sw, "_gateway", None), "java_process", None)
        self.seconds, self.what, self.fired = seconds, what, False
        self._killed = threading.Event()
        self._token = -1

    def _fire(self) -> None:
        """Kill and reap the JVM (the watchdog thread, after marking ``fired`` under the watchdog lock)."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()  # SIGKILL also ends a stopped JVM; its sockets close and the blocked call returns
                try:  # reaped before the caller's clean-up, which then sees a dead JVM and never talks to it
                    self.proc.wait(timeout=10)
                except Exception:  # a kernel that takes longer to reap: _shutdown kills it again
                    pass
        finally:
            self._killed.set()

    def __enter__(self) -> _Deadline:
        global _watchdog_thread
        with _watch_lock:
            self._token = next(_watch_tokens)
            _armed[self._token] = (time.monotonic() + self.seconds, self)
            if _watchdog_thread is None:
                _watchdog_thread = threading.Thread(target=_watchdog_loop, name="arl-scienceworld-watchdog",
                                                    daemon=True)
                _watchdog_thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        with _watch_lock:
            _armed.pop(self._token, None)
            fired = self.fired
        if fired:
            self._killed.wait(15)
            raise SimulatorTimeout(
                f"ScienceWorld {self.what} did not answer within {self.seconds:g} s; the JVM was killed"
            ) from (exc[1] if exc and isinstance(exc[1], BaseException) else None)


#: Seconds between two looks of the deadline watchdog at the armed calls (a JVM is killed at most this late).
WATCHDOG_POLL_S = 0.25
_watch_lock = threading.Lock()
_watch_tokens = itertools.count()
_armed: dict[int, tuple[float, _Deadline]] = {}
_watchdog_thread: threading.Thread | None = None


def _watchdog_loop() -> None:
    while True:
        time.sleep(WATCHDOG_POLL_S)
        now = time.monotonic()
        with _watch_lock:
            due = [token for token, (deadline, _) in _armed.items() if deadline <= now]
            expired = [_armed.pop(token)[1] for token in due]
            for d in expired:
                d.fired = True
        for d in expired:
            try:
                d._fire()
            except Exception:  # noqa: BLE001 - the watchdog must outlive any one kill (the caller still raises)
                pass


def shutdown_idle_jvms() -> int:
    """Shut down every pooled idle JVM of this process; returns how many. Registered with ``atexit`` by the
    first JVM start of the process."""
    with _pool_lock:
        jvms, _idle[:] = list(_idle), []
    for sw in jvms:
        _shutdown(sw)
    return len(jvms)



class ScienceWorldEnv(CommandEnv):
    """ScienceWorld's science tasks in a partially observable text house.

    Description:
        One ScienceWorld task variation per episode: ``task`` picks the task (e.g. ``find-non-living-thing``,
        ``boil``, ``power-component``), the seed picks a variation of the ``split`` (ScienceWorld's own
        train/dev/test variation lists), ``simplification`` is ScienceWorld's simplification string. World,
        commands, parser and scoring are ScienceWorld's.
    Observation:
        First: the task description and the result of ``look around``. Then ScienceWorld's reply to each command
        (ScienceWorld describes only the agent's location and what is visible there; closed containers hide
        their contents). ``info["score"]`` is ScienceWorld's score (0-100; negative = failed).
    Action:
        Native: one command, bare (``open door to kitchen``) or in ``<action>...</action>`` (the last block
        outside ``<think>`` counts). JSON: ``act(command)``. Commands are ScienceWorld's templates
        (``info["admissible_actions"]``: ``open OBJ``, ``go OBJ``, ``pick up OBJ``, ``move OBJ to OBJ``,
        ``focus on OBJ``, ``look around``, ``wait1``, ...; objects are named as the observations name them); a
        command ScienceWorld does not understand gets its own reply ("No known action matches that input.") and
        costs a turn. ``reset task`` is refused (no state change). With ``valid_actions=True``,
        ``info["valid_actions"]`` holds ScienceWorld's full list of valid action-object combinations for the
        current state (thousands of strings; slow).
    Tools:
        ``act(command: str)``.
    Rewards:
        ``task`` (weight 1): 1 only when ScienceWorld reports the task completed with score 100; an episode that
        ends any other way (turn limit with a partial score, failure) gets 0. ``progress`` (weight 0.1):
        ScienceWorld's own score increments / 100, counted above the best score so far in the episode (losing
        score and regaining it credits nothing new; the score at the start is the baseline). ``format``
        (weight 0.1): raw -1 per malformed reply (empty, unclosed ``<action>``, several lines).
    Episode end:
        Terminated when the task is completed (score 100, ``success=True``) or failed (ScienceWorld's score
        below 0, e.g. focusing on the wrong object), or after more than ``max_invalid_actions`` (default 10)
        malformed replies. Truncated after ``max_turns`` (default 100) turns. A dead JVM, or one that does not
        answer within ``call_timeout_s`` (it is killed), is ``info["env_error"]`` (truncated; a fresh JVM at the
        next reset).
    Arguments:
        task (str, default ``"find-non-living-thing"``), simplification (str, default ``""``; comma-separated
        names from :data:`SIMPLIFICATIONS`), split (``"train"`` | ``"dev"`` | ``"test"`` | ``"all"``, default
        ``"train"``), valid_actions (bool, default False), keep_jvm_warm (bool, default True: close() returns the
        JVM to the process pool), call_timeout_s (seconds a step's simulator calls may take before the JVM is
        killed, default 30), load_timeout_s (the same for a reset's load and the gold path, default 120),
        show_admissible, action_format, reward_weights, max_turns,
        max_invalid_actions, render_mode.
    Expert:
        ScienceWorld's gold action sequence of the variation (``get_gold_action_sequence()``), generated on the
        first ``expert_action()`` of an episode (the task is reloaded with its gold path and the episode's commands
        replayed: the simulator is deterministic). It is open-loop: after the agent leaves the gold path, the
        expert keeps proposing the next gold command.
    Raises:
        DependencyNotInstalled: ``scienceworld`` is not installed, or no ``java`` on PATH (at construction).
        ValueError: Unknown task, simplification or split.
    Version history:
        v0: initial release.
    """

    #: Snapshot (arl_envs.core.snapshot): the world lives in ScienceWorld's JVM (which has no state load): replay the
    #: actions.
    snapshot_mode: ClassVar[str] = "replay"

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = DEFAULT_MAX_TURNS
    default_max_invalid_actions: ClassVar[int] = 10

    def __init__(
        self,
        *,
        task: str = DEFAULT_TASK,
        simplification: str = "",
        split: str = "train",
        valid_actions: bool = False,
        keep_jvm_warm: bool = True,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        load_timeout_s: float = DEFAULT_LOAD_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        if not (call_timeout_s > 0 and load_timeout_s > 0):
            raise ValueError(f"call_timeout_s and load_timeout_s must be > 0, got {call_timeout_s!r}, {load_timeout_s!r}")
        _import_scienceworld()
        if not java_available():
            raise DependencyNotInstalled(_JAVA_HINT)
        from scienceworld.utils import infer_task

        name = infer_task(str(task))
        if name not in task_names():
            raise ValueError(f"unknown ScienceWorld task {task!r}; known: {', '.join(task_names())}")
        bad = [s for s in str(simplification).split(",") if s and s not in SIMPLIFICATIONS]
        if bad:
            raise ValueError(f"unknown simplification(s) {bad}; known: {', '.join(SIMPLIFICATIONS)}")
        electrical = "power-component" in name or "conductivity" in name
        if electrical and "noElectricalAction" in str(simplification):
            raise ValueError(f"task {name!r} needs electrical actions; drop the noElectricalAction simplification")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        super().__init__(**kwargs)
        self.task = name
        self.simplification = str(simplification)
        self.split = split
        self.valid_actions = bool(valid_actions)
        self.keep_jvm_warm = bool(keep_jvm_warm)
        self.call_timeout_s = float(call_timeout_s)
        self.load_timeout_s = float(load_timeout_s)
        self._sw: Any = None
        self._templates: list[str] = []
        self.variation = -1
        self.score = 0
        self._best_score = 0
        self._commands: list[str] = []
        self._gold: list[str] | None = None
        self._gold_pos = 0
        self._last_obs = ""

    # ----------------------------------------------------------------- CommandEnv hooks
    def describe_task(self) -> str:
        return (
            "You are an agent in ScienceWorld, a text simulation of a house with rooms (kitchen, greenhouse, "
            "workshop, ...), doors, containers, devices, substances, plants and animals. You see only the room "
            "you are in. Complete the science task described below."
        )

    def command_help(self) -> str:
        return (
            "Commands (OBJ = an object or place as the observations name it): look around, look at OBJ, look in "
            "OBJ, open/close OBJ, go to OBJ (a room, through an open door), pick up OBJ, put down OBJ, move OBJ to "
            "OBJ, pour OBJ in OBJ, dunk OBJ in OBJ, mix OBJ, activate/deactivate OBJ, use OBJ on OBJ, connect OBJ "
            "to OBJ, disconnect OBJ, eat OBJ, flush OBJ, read OBJ, focus on OBJ (marks the object the task is "
            "about: focusing on a wrong object fails some tasks), wait, wait1, inventory, task."
        )

    def _new_episode(self, task_id: str | None) -> tuple[str, str]:
        sw = self._jvm()
        try:
            with _Deadline(sw, self.load_timeout_s, "reset"):
                return self._new_episode_in(sw, task_id)
        except SimulatorTimeout:
            self._discard_jvm()
            raise

    def _new_episode_in(self, sw: Any, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            variations = self._variation_list(sw)
            variation = variations[int(self.np_random.integers(0, len(variations)))]
        else:
            variation = self._variation_from_id(task_id, sw)
        self.variation = variation
        self._commands, self._gold, self._gold_pos = [], None, 0
        look = self._load(sw, gold=False)
        self._best_score = self.score
        desc = str(sw.server.freeActionTaskDesc()).strip()
        self._last_obs = look
        return f"{self.task}:{variation}", f"{desc}\n\n{look}"

    def _interpret(self, command: str) -> tuple[str, Any]:
        # ScienceWorld's own parser reads the command; text py4j cannot carry (lone surrogates, control
        # characters) was refused by the shared parser (parsing.normalise_command).
        return command, command

    def _execute(self, parsed: Any) -> Transition:
        command = str(parsed)
        if command in BLOCKED_COMMANDS:
            return Transition(f"The '{command}' command is disabled in this environment; nothing happened.",
                              info={"score": self.score})
        sw = self._sw
        try:
            with _Deadline(sw, self.call_timeout_s, "step"):
                obs = str(sw.server.step(command))
                score = int(round(COMPLETED_SCORE * float(sw.server.getScore())))
                completed = bool(sw.server.getCompleted())
                valid = _fetch_list(sw, sw.server.getValidActionObjectCombinations()) if self.valid_actions else None
        except Exception as exc:  # py4j: the JVM died or the connection broke; or the deadline killed it
            self._discard_jvm()
            return Transition("The ScienceWorld simulator failed; this episode is not scored.",
                              env_error=f"ScienceWorld JVM failure: {type(exc).__name__}: {exc}")
        self._commands.append(command)
        if self._gold is not None and self._gold_pos < len(self._gold) and command == self._gold[self._gold_pos]:
            self._gold_pos += 1
        self.score = score
        parts: dict[str, float] = {}
        if score > self._best_score:
            parts["progress"] = (score - self._best_score) / COMPLETED_SCORE
            self._best_score = score
        info: dict[str, Any] = {"score": score, "variation": self.variation}
        if valid is not None:
            info["valid_actions"] = valid
        self._last_obs = obs
        if completed and score >= COMPLETED_SCORE:
            parts["task"] = 1.0
            return Transition(f"{obs}\nTask completed (score {score}).", parts, True, True, info)
        if score < 0 or completed:
            return Transition(f"{obs}\nTask failed (score {score}).", parts, True, False, info)
        return Transition(obs, parts, info=info)

    def admissible_actions(self) -> list[str]:
        return list(self._templates)

    def expert_command(self) -> str:
        if self._gold is None:
            self._generate_gold()
        assert self._gold is not None
        if self._gold_pos < len(self._gold):
            return self._gold[self._gold_pos]
        return "look around"

    def _reset_info(self) -> dict[str, Any]:
        """:meth:`CommandEnv._reset_info`, plus ``score``/``variation`` (and ``valid_actions``)."""
        info = super()._reset_info()
        info["score"], info["variation"] = self.score, self.variation
        if self.valid_actions:
            info["valid_actions"] = self._guarded(lambda sw: _fetch_list(sw, sw.server.getValidActionObjectCombinations()),
                                                  "valid-action listing", self.call_timeout_s)
        return info

    def _close(self) -> None:
        sw, self._sw = self._sw, None
        if sw is None:
            return
        if self.keep_jvm_warm:
            _release_jvm(sw)
        else:
            _shutdown(sw)

    # ----------------------------------------------------------------- public helpers
    def gold_actions(self) -> list[str]:
        """The gold action sequence of the current variation (generated on first use in an episode)."""
        if self._gold is None:
            self._generate_gold()
        return list(self._gold or [])

    def variations(self) -> list[int]:
        """The variation indices of ``split`` for ``task`` (starts the JVM if needed)."""
        return list(self._guarded(self._variation_list, "variation listing"))

    # ----------------------------------------------------------------- internals
    def _jvm(self) -> Any:
        """This env's JVM; a fresh one when it has none or its JVM died since the last step (killed while idle)."""
        if self._sw is not None and not _jvm_alive(self._sw):
            self._discard_jvm()
        if self._sw is None:
            self._sw = _acquire_jvm()
        return self._sw

    def _discard_jvm(self) -> None:
        sw, self._sw = self._sw, None
        if sw is not None:
            _shutdown(sw)

    def _load(self, sw: Any, gold: bool) -> str:
        """Load the task variation (optionally with its gold path), reset it; returns the first ``look around``."""
        # The simulator's load directly: ScienceWorldEnv.load() re-validates the task name and simplifications
        # through several JVM round trips per call; both were validated in __init__.
        sw.server.load(self.task, self.variation, self.simplification, gold)
        if gold:
            # Generating the gold path plays it in the simulator; reset as ScienceWorldEnv.reset() does. A plain
            # load starts a fresh world already (its first step reads score 0, move 0, the same text), and the
            # simulator's reset costs 3-10x the load, so it is skipped there.
            sw.server.reset()
        look = str(sw.server.step("look around"))
        self.score = int(round(COMPLETED_SCORE * float(sw.server.getScore())))
        key = (self.task, self.simplification)
        if key not in _TEMPLATES:
            _TEMPLATES[key] = tuple(t for t in _fetch_list(sw, sw.server.getPossibleActions()) if t not in BLOCKED_COMMANDS)
        self._templates = list(_TEMPLATES[key])
        return look

    def _guarded(self, fn: Any, what: str, seconds: float | None = None) -> Any:
        """``fn(sw)`` on this env's JVM under a deadline (default ``load_timeout_s``); a JVM killed by it is
        discarded (raises :class:`SimulatorTimeout`)."""
        sw = self._jvm()
        try:
            with _Deadline(sw, self.load_timeout_s if seconds is None else seconds, what):
                return fn(sw)
        except SimulatorTimeout:
            self._discard_jvm()
            raise

    def _generate_gold(self) -> None:
        self._guarded(self._generate_gold_in, "gold path generation")

    def _generate_gold_in(self, sw: Any) -> None:
        """Reload the variation with its gold path and replay this episode's commands (deterministic simulator)."""
        commands, best = list(self._commands), self._best_score
        self._load(sw, gold=True)
        self._gold = _fetch_list(sw, sw.server.getGoldActionSequence())
        self._gold_pos = 0
        for command in commands:
            sw.server.step(command)
            if self._gold_pos < len(self._gold) and command == self._gold[self._gold_pos]:
                self._gold_pos += 1
        self.score = int(round(COMPLETED_SCORE * float(sw.server.getScore())))
        self._commands, self._best_score = commands, best

    def _variation_list(self, sw: Any) -> list[int]:
        key = (self.task, self.simplification, self.split)
        if key not in _VARIATIONS:  # static facts of the task: asked once per process
            sw.server.load(self.task, 0, self.simplification, False)
            if self.split == "all":
                found = list(range(int(sw.server.getTaskMaxVariations(self.task))))
            else:
                getter = {"train": sw.server.getVariationsTrain, "dev": sw.server.getVariationsDev,
                          "test": sw.server.getVariationsTest}[self.split]
                found = [int(v) for v in _fetch_list(sw, getter())]
            _VARIATIONS[key] = tuple(found)
        return list(_VARIATIONS[key])

    def _variation_from_id(self, task_id: str, sw: Any) -> int:
        name, _, var = task_id.rpartition(":")
        if name != self.task or not var.isdigit():
            raise TaskLoadError(f"task_id must be '{self.task}:<variation>', got {task_id!r}")
        variation = int(var)
        if variation >= int(sw.server.getTaskMaxVariations(self.task)):
            raise TaskLoadError(f"variation {variation} out of range for task {self.task!r}")
        return variation


__all__ = [
    "COMPLETED_SCORE", "DEFAULT_CALL_TIMEOUT_S", "DEFAULT_LOAD_TIMEOUT_S", "DEFAULT_TASK", "SIMPLIFICATIONS", "ScienceWorldEnv",
    "SimulatorTimeout", "java_available",
    "shutdown_idle_jvms", "task_names",
]
