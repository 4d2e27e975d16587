"""The Parallel-API side of the text games and their module constructors.

:class:`TurnParallelEnv` is PettingZoo's ``turn_based_aec_to_parallel`` of a turn-based text game (only the mover
acts); :class:`ParallelSnapshot` gives a Parallel wrapper ``snapshot()``/``restore()`` over its AEC game;
:func:`make_module` builds a game module's ``env``, ``raw_env`` and ``parallel_env`` (a :class:`GameModule`).
The AEC games themselves are :class:`~arl_envs.envs.multiagent.base.TextGameEnv` subclasses.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from arl_envs.core.errors import DependencyNotInstalled, ResetNeeded

try:
    from pettingzoo import AECEnv, ParallelEnv
    from pettingzoo.utils.conversions import parallel_to_aec, turn_based_aec_to_parallel_wrapper
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled("multi-agent games need PettingZoo: pip install 'arl-envs[multiagent]'") from _exc

__all__ = ["GameModule", "ParallelSnapshot", "TurnParallelEnv", "make_module"]


class ParallelSnapshot:
    """``snapshot()`` / ``restore()`` for a Parallel env over an AEC text game held in ``self.aec_env``: the game's
    :meth:`TextGameEnv.snapshot` plus the wrapper's own state (its ``agents`` list)."""

    aec_env: Any  # a TextGameEnv

    def snapshot(self) -> Any:
        """Save the game and this wrapper's state (a :class:`~arl_envs.core.snapshot.Snapshot`).

        Raises:
            ResetNeeded: No game yet.
        """
        from arl_envs.core.snapshot import Snapshot, class_path, copy_attributes

        aec = self.aec_env.snapshot()
        own = copy_attributes(self, {"aec_env"})
        return Snapshot(class_path(self), {}, "copy", aec.turn, None, {"aec": aec, "own": own})

    def restore(self, snap: Any) -> None:
        """Put the game and this wrapper into the state of ``snap`` (from :meth:`snapshot` of the same class).

        Raises:
            SnapshotError: ``snap`` comes from another class.
            TypeError: ``snap`` is not a Snapshot.
        """
        import copy

        from arl_envs.core.snapshot import Snapshot, SnapshotError, class_path

        if not isinstance(snap, Snapshot):
            raise TypeError(f"restore() takes a Snapshot (from .snapshot()), got {type(snap).__name__}")
        if snap.env_class != class_path(self):
            raise SnapshotError(f"snapshot of {snap.env_class} cannot be restored into {class_path(self)}")
        self.aec_env.restore(snap.state["aec"])
        self.__dict__.update(copy.deepcopy(snap.state["own"]))


class TurnParallelEnv(ParallelSnapshot, turn_based_aec_to_parallel_wrapper):
    """PettingZoo's ``turn_based_aec_to_parallel`` of a turn-based text game (only the mover's action is used),
    with two differences: a step without an action for the mover is an invalid move of the mover (an empty reply,
    as in :class:`~arl_envs.envs.multiagent.cycle_parallel.CycleParallelEnv`; PettingZoo raises a bare
    ``KeyError``), and a step with no game running raises :class:`ResetNeeded` (PettingZoo returns a 4-tuple).

    Args:
        aec_env: The AEC game.
    """

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """One move of the agent to move (``infos[agent]["to_move"]``); the other agents' actions are ignored.

        Raises:
            ResetNeeded: No game is running.
            InvalidActionType: The mover's action is not a ``str``.
        """
        if not self.agents:
            raise ResetNeeded("call reset() before step(): no game is running")
        mover = self.aec_env.agent_selection
        if mover not in actions:
            actions = {**actions, mover: ""}
        return super().step(actions)


class GameModule(NamedTuple):
    """The three constructors of a game module, PettingZoo style."""

    env: Callable[..., AECEnv]
    raw_env: Callable[..., AECEnv]
    parallel_env: Callable[..., ParallelEnv]


def make_module(game: type[AECEnv], *, parallel: type[ParallelEnv] | None = None) -> GameModule:
    """Build ``env``, ``raw_env`` and ``parallel_env`` for a game module.

    Args:
        game: A :class:`TextGameEnv` subclass (turn-based: ``parallel_env`` is
            ``turn_based_aec_to_parallel(game(**kw))``), or None when ``parallel`` is given.
        parallel: A natively simultaneous ``ParallelEnv`` class; then ``env``/``raw_env`` are
            ``parallel_to_aec(parallel(**kw))``.

    Returns:
        :class:`GameModule` ``(env, raw_env, parallel_env)``; all take the game's keyword arguments.
    """
    if parallel is not None:
        par_cls = parallel

        def par_fn(**kwargs: Any) -> ParallelEnv:
            return par_cls(**kwargs)

        def aec_fn(**kwargs: Any) -> AECEnv:
            return parallel_to_aec(par_cls(**kwargs))

        aec_fn.__doc__ = f"AEC version of {par_cls.__name__} (parallel_to_aec)."
        par_fn.__doc__ = par_cls.__doc__
        return GameModule(aec_fn, aec_fn, par_fn)

    cls = game

    def env_fn(**kwargs: Any) -> AECEnv:
        return cls(**kwargs)

    def parallel_fn(**kwargs: Any) -> ParallelEnv:
        return TurnParallelEnv(cls(**kwargs))

    env_fn.__doc__ = cls.__doc__
    parallel_fn.__doc__ = f"Parallel version of {cls.__name__} (TurnParallelEnv: only the mover acts)."
    return GameModule(env_fn, env_fn, parallel_fn)
