"""Snapshot, restore and fork of a running episode (``arl_envs/CONTRACT.md``, "Snapshot and fork").

``env.unwrapped.snapshot()`` returns a :class:`Snapshot`; ``env.unwrapped.restore(snapshot)`` puts the same env,
or another instance built from the same class and constructor kwargs, back into that state; :func:`fork` makes
``n`` independent envs (wrappers included) at the current state. After a restore the same actions give the same
observations, rewards, ``info`` and termination as from the original state.

Two mechanisms, chosen per env class by ``AgentEnv.snapshot_mode``:

* ``"copy"`` (pure-Python envs): a ``copy.deepcopy`` of the instance's ``__dict__`` (episode state, the
  ``np_random`` generator and any other RNG attribute, the turn, the transcript), leaving out the attributes
  named in :data:`ALWAYS_EXCLUDED` and the class's ``snapshot_exclude`` (handles to out-of-process resources and
  user objects, which stay the target env's own). Cost: one deepcopy of the episode state at snapshot and one
  at restore.
* ``"replay"`` (envs whose state lives in another process: a sandbox's interpreter or work tree, the browser,
  ScienceWorld's JVM): the snapshot records the reset (its ``seed`` and ``options``, and the ``np_random``
  state right after seeding) and the actions since; restore resets the target's backend and replays the
  actions. Exact because every id is deterministic under a seed (the conformance ``determinism`` check);
  its cost is one reset plus one step per recorded turn.

A snapshot pickles where its state allows; where it does not (a callable opponent, a kwarg that is a live
object) :meth:`Snapshot.__getstate__` raises :class:`SnapshotError` naming the attribute and its type.
"""

from __future__ import annotations

import copy
import hashlib
import pickle
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from arl_envs.core.errors import ArlError, ResetNeeded

#: The env type these functions take: an ``arl_envs.core.env.AgentEnv`` (not imported here: ``core.env`` imports
#: this module, and imports point one way).
AgentEnv = gym.Env

SNAPSHOT_MODES = ("copy", "replay")

#: Attributes of an AgentEnv never copied by the ``copy`` mechanism: the registry spec, the lifecycle flag, the
#: constructor record, the spaces and the tool cache (equal on any instance with the same kwargs) and the
#: replay record's own key (copied separately).
ALWAYS_EXCLUDED = frozenset(
    {"spec", "_closed", "_init_kwargs", "observation_space", "action_space", "_tools_by_name", "render_mode"}
)


class SnapshotError(ArlError):
    """A snapshot cannot be taken, pickled or restored; the message names the env, the attribute and why."""


@dataclass
class ReplayLog:
    """What the ``replay`` mechanism needs to rebuild an episode.

    Attributes:
        seed: The ``seed`` passed to ``reset`` (None: the generator went on from its previous state).
        options: The ``options`` passed to ``reset``.
        rng_state: For an unseeded reset, ``np_random.bit_generator.state`` as ``reset`` found it, before the task
            was drawn (None for a seeded reset, which is replayed from its seed).
        actions: The raw action strings passed to ``step`` since that reset, in order.
        digests: SHA-256 of each transcript entry at the snapshot (role and text): a replay that does not give
            the same transcript (a backend failure during the replay) is detected and reported.
    """

    seed: int | None
    options: dict[str, Any] | None
    rng_state: dict[str, Any] | None
    actions: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)


@dataclass
class Snapshot:
    """Opaque saved state of one env's episode; restore it with ``env.unwrapped.restore(snapshot)``.

    Attributes:
        env_class: ``"module:QualName"`` of the env that took it.
        env_kwargs: The constructor kwargs of that env (a restore target must have equal ones).
        mode: ``"copy"`` or ``"replay"`` (see the module docstring).
        turn: The env's turn when it was taken.
        task_id: The episode's task id.
        state: ``copy``: the deep-copied attributes (name -> value); ``replay``: a :class:`ReplayLog`.
    """

    env_class: str
    env_kwargs: dict[str, Any]
    mode: str
    turn: int
    task_id: str | None
    state: Any

    def __getstate__(self) -> dict[str, Any]:
        """Pickle support: checks every part first, so a failure names the attribute that cannot be pickled."""
        parts: dict[str, Any] = {f"constructor kwarg {k!r}": v for k, v in self.env_kwargs.items()}
        if self.mode == "copy":
            parts.update({f"attribute {k!r}": v for k, v in self.state.items()})
        else:
            parts["replay log"] = self.state
        for what, value in parts.items():
            try:
                pickle.dumps(value)
            except Exception as exc:  # noqa: BLE001 - any pickling failure is reported with its cause
                raise SnapshotError(
                    f"a snapshot of {self.env_class} cannot be pickled: its {what} holds a "
                    f"{type(value).__module__}.{type(value).__qualname__} ({type(exc).__name__}: {exc})"
                ) from None
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def class_path(obj: Any) -> str:
    """``"module:QualName"`` of ``obj``'s class."""
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


def record_reset(env: AgentEnv, seed: int | None, options: dict[str, Any] | None) -> None:
    """Called by ``AgentEnv.reset`` right after seeding: start the replay record of the new episode."""
    # A seeded reset is replayed from its seed; only an unseeded one needs the generator's state (a fresh dict;
    # ~4 us, where a deepcopy of it would add ~25 us to every reset).
    env._replay_log = ReplayLog(
        None if seed is None else int(seed),
        None if options is None else copy.deepcopy(options),
        env.np_random.bit_generator.state if seed is None else None,
    )


def take_snapshot(env: AgentEnv) -> Snapshot:
    """The body of ``AgentEnv.snapshot`` (see the module docstring for the mechanisms)."""
    if env._closed:
        raise SnapshotError(f"{type(env).__name__} was closed: nothing to snapshot")
    log: ReplayLog | None = env.__dict__.get("_replay_log")
    if log is None:
        raise ResetNeeded(f"{type(env).__name__}.snapshot(): no episode yet, call reset() first")
    mode = env.snapshot_mode
    if mode not in SNAPSHOT_MODES:
        raise SnapshotError(f"{type(env).__name__}.snapshot_mode must be one of {SNAPSHOT_MODES}, got {mode!r}")
    if mode == "copy":
        state = _deepcopy_state(env, _copied_items(env))
    else:
        actions = [text for role, text in env.transcript if role == "assistant"]
        state = ReplayLog(log.seed, copy.deepcopy(log.options), copy.deepcopy(log.rng_state), actions,
                          _digests(env.transcript))
    return Snapshot(class_path(env), dict(env._init_kwargs), mode, env.turn, env.task_id, state)


def restore_snapshot(env: AgentEnv, snap: Snapshot) -> None:
    """The body of ``AgentEnv.restore``: check compatibility, then copy the state in or replay the log."""
    if not isinstance(snap, Snapshot):
        raise TypeError(f"restore() takes a Snapshot (from env.unwrapped.snapshot()), got {type(snap).__name__}")
    if env._closed:
        raise SnapshotError(f"{type(env).__name__} was closed: make a new env to restore into")
    if snap.env_class != class_path(env):
        raise SnapshotError(f"snapshot of {snap.env_class} cannot be restored into {class_path(env)}")
    if not _same_kwargs(snap.env_kwargs, env._init_kwargs):
        diff = sorted(
            k for k in set(snap.env_kwargs) | set(env._init_kwargs)
            if not _equal(snap.env_kwargs.get(k, _MISSING), env._init_kwargs.get(k, _MISSING))
        )
        raise SnapshotError(
            f"snapshot of {snap.env_class} was taken with other constructor kwargs ({', '.join(diff)}): "
            f"snapshot {_pick(snap.env_kwargs, diff)} vs env {_pick(env._init_kwargs, diff)}; restore into an env "
            "made with the same id and kwargs"
        )
    if snap.mode == "copy":
        state = copy.deepcopy(snap.state)
        if "_replay_log" not in env.__dict__:
            # A target that never ran an episode first runs the snapshot's reset, so the handles an env starts
            # lazily at its first reset (a sandbox, a checker) exist; the copied state then replaces the episode.
            log = state["_replay_log"]
            _replay_reset(env, log)
        env.__dict__.update(state)
        return
    log = snap.state
    _replay_reset(env, log)
    for i, action in enumerate(log.actions):
        if not env._episode_active:
            raise SnapshotError(
                f"replaying the snapshot of {snap.env_class} diverged: the episode ended after "
                f"{i} of {len(log.actions)} recorded actions (the env is not deterministic under its seed)"
            )
        env.step(action)
    got = _digests(env.transcript)
    if got != log.digests:
        turn = next((i for i, (a, b) in enumerate(zip(got, log.digests)) if a != b), min(len(got), len(log.digests)))
        role, text = env.transcript[turn] if turn < len(env.transcript) else ("", "")
        raise SnapshotError(
            f"replaying the snapshot of {snap.env_class} diverged at transcript entry {turn} ({role}): "
            f"{text[:200]!r} differs from the recorded episode (a backend failure or a non-deterministic env)"
        )


def _digests(transcript: list[tuple[str, str]]) -> list[str]:
    return [hashlib.sha256(f"{role}\0{text}".encode("utf-8", "surrogatepass")).hexdigest() for role, text in transcript]


def _replay_reset(env: AgentEnv, log: ReplayLog) -> None:
    """Reset ``env`` exactly as the recorded episode was reset (same seed, or the same generator state)."""
    if log.seed is None:
        env._np_random = np.random.Generator(getattr(np.random, log.rng_state["bit_generator"])())
        env._np_random.bit_generator.state = copy.deepcopy(log.rng_state)
    env.reset(seed=log.seed, options=copy.deepcopy(log.options))


def fork(env: gym.Env, n: int) -> list[gym.Env]:
    """``n`` independent envs at ``env``'s current state, each with a copy of ``env``'s wrapper stack.

    Each fork is a new instance of the unwrapped env's class made with the same constructor kwargs (its own
    sandbox, browser or JVM where the env has one), restored from ``env.unwrapped.snapshot()``; then every
    wrapper layer, innermost first, is deep-copied onto it (``copy.deepcopy`` with the inner env mapped to the
    new one), so wrapper state such as ``ChatMessages.messages`` or ``OrderEnforcing``'s reset flag is copied
    too. A wrapper holding something that cannot be deep-copied raises :class:`SnapshotError` naming it;
    ``RecordEpisodes`` forks keep writing to the same file path. The forks must be closed by the caller.

    Args:
        env: A reset env (wrapped or not) whose unwrapped env is an ``AgentEnv``.
        n: Number of forks (>= 0).

    Raises:
        SnapshotError: The env or a wrapper cannot be copied.
        ResetNeeded: ``env`` has no episode.
        ValueError: ``n`` < 0.
    """
    if n < 0:
        raise ValueError(f"fork(env, n) needs n >= 0, got {n}")
    base = env.unwrapped
    if not callable(getattr(base, "snapshot", None)) or not callable(getattr(base, "restore", None)):
        raise SnapshotError(f"fork needs an arl-envs AgentEnv, got {type(base).__name__}")
    snap = base.snapshot()
    layers: list[gym.Env] = []
    layer = env
    while layer is not base:
        layers.append(layer)
        layer = layer.env  # type: ignore[attr-defined]
    forks: list[gym.Env] = []
    try:
        for _ in range(n):
            new_base = type(base)(**base._init_kwargs)
            new_base.spec = base.spec
            forks.append(new_base)
            new_base.restore(snap)
            memo: dict[int, Any] = {id(base): new_base}
            top: gym.Env = new_base
            for old in reversed(layers):
                try:
                    top = copy.deepcopy(old, memo)
                except Exception as exc:  # noqa: BLE001 - reported with the wrapper's name
                    raise SnapshotError(
                        f"fork: wrapper {type(old).__name__} cannot be copied ({type(exc).__name__}: {exc})"
                    ) from None
            forks[-1] = top
    except BaseException:
        for f in forks:
            f.close()
        raise
    return forks


# ----------------------------------------------------------------------------- helpers for other env kinds
def copy_attributes(obj: Any, exclude: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """A deep copy of ``obj.__dict__`` without ``exclude`` (used by the PettingZoo games' ``snapshot``).

    Raises:
        SnapshotError: Naming the attribute that cannot be deep-copied.
    """
    return _deepcopy_state(obj, {k: v for k, v in obj.__dict__.items() if k not in exclude})


def snapshot_object(obj: Any, turn: int, exclude: frozenset[str] | set[str] = frozenset()) -> Snapshot:
    """A ``copy``-mode :class:`Snapshot` of any object's ``__dict__`` (the PettingZoo games' ``snapshot``)."""
    return Snapshot(class_path(obj), {}, "copy", int(turn), None, copy_attributes(obj, exclude))


def restore_object(obj: Any, snap: Snapshot) -> None:
    """Restore a :func:`snapshot_object` snapshot into ``obj`` (same class required).

    Raises:
        SnapshotError: ``snap`` was taken from another class.
        TypeError: ``snap`` is not a :class:`Snapshot`.
    """
    if not isinstance(snap, Snapshot):
        raise TypeError(f"restore() takes a Snapshot (from .snapshot()), got {type(snap).__name__}")
    if snap.env_class != class_path(obj):
        raise SnapshotError(f"snapshot of {snap.env_class} cannot be restored into {class_path(obj)}")
    obj.__dict__.update(copy.deepcopy(snap.state))


def _copied_items(env: AgentEnv) -> dict[str, Any]:
    skip = ALWAYS_EXCLUDED | frozenset(getattr(env, "snapshot_exclude", ()))
    return {k: v for k, v in env.__dict__.items() if k not in skip}


def _deepcopy_state(obj: Any, items: dict[str, Any]) -> dict[str, Any]:
    try:
        return copy.deepcopy(items)  # one call: aliasing between attributes (a shared RNG) is kept
    except Exception:  # noqa: BLE001 - find and name the attribute
        for key, value in items.items():
            try:
                copy.deepcopy(value)
            except Exception as exc:  # noqa: BLE001
                raise SnapshotError(
                    f"{type(obj).__name__}: attribute {key!r} ({type(value).__qualname__}) cannot be copied into a "
                    f"snapshot ({type(exc).__name__}: {exc}); list it in snapshot_exclude if it is a handle, or "
                    "set snapshot_mode = 'replay'"
                ) from None
        raise


_MISSING = object()


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:  # noqa: BLE001 - incomparable values are different
        return False


def _same_kwargs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)


def _pick(d: dict[str, Any], keys: list[str]) -> str:
    return "{" + ", ".join(f"{k}={d.get(k, '<unset>')!r}" for k in keys) + "}"
