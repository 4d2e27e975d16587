"""``arl/embodied.household-v0``: ALFWorld-style household tasks in a procedurally generated house."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from arl_envs.core.actions import ParseError
from arl_envs.core.env import Transition
from arl_envs.core.errors import ResetNeeded, TaskLoadError
from arl_envs.envs.embodied.command_env import CommandEnv, unknown_command
from arl_envs.envs.embodied.household_world import (
    ALFWORLD_FAMILY_NAMES,
    COMMAND_HELP,
    DIFFICULTIES,
    PREP_IN,
    MultipleCommands,
    World,
    generate,
    interpret,
)

#: Default turn budget (ALFWorld's evaluation budget is 50 steps).
DEFAULT_MAX_TURNS = 50
#: Default difficulty (1-5).
DEFAULT_DIFFICULTY = 3
#: Raw ``task`` reward when the goal is reached.
TASK_REWARD = 1.0
#: Raw ``progress`` reward of ALL sub-goals together (each new sub-goal earns an equal share of it).
PROGRESS_TOTAL = 1.0
_TASK_ID = re.compile(r"^household-d([1-5])-(\d+)$")
_SEED_LIMIT = 2**63


class HouseholdEnv(CommandEnv):
    """Household tasks (ALFWorld's six families) in a generated, partially observable house.

    Description:
        A house of 1-4 rooms (kitchen, living room, bedroom, bathroom, office) with numbered receptacles
        (``drawer 3``; cabinets, drawers, fridge, microwave, safe and laundry hamper open and close, starting
        closed) and numbered objects (``mug 2``) with a colour, a material and the transformations they accept
        (clean, heat, cool). Task families, after ALFWorld (Shridhar et al. 2021): ``put`` (put a X in/on Y),
        ``two`` (put two Xs in/on Y), ``examine`` (examine a X under the desk lamp: hold it where the lamp is and
        switch the lamp on), ``clean``/``heat``/``cool`` (transform a X with the sink basin / microwave / fridge,
        then put it in/on Y). Y is a receptacle kind (any ``desk`` counts).

    Observation:
        Text. The first observation gives the instructions, the room the agent stands in (its receptacles, the
        other rooms' names) and the task. After each command: its outcome, ALFWorld-style (``You arrive at
        drawer 1. The drawer 1 is closed.``). Partial observability: the agent sees only what is at its location;
        a closed receptacle hides its contents; receptacles of a room are known once the agent has been in it.

    Action:
        One command per turn (native: the bare command or the last ``<action>...</action>`` outside
        ``<think>``; json: ``act(command)``). Templates: ``go to <receptacle or room>``, ``open <r>``,
        ``close <r>``, ``take <o> from <r>``, ``put <o> in/on <r>``, ``use <lamp>``, ``clean/heat/cool <o> with
        <r>``, ``examine <x>``, ``inventory``, ``look``. Synonyms map to the canonical form (``put mug 1 in
        desk 2`` == ``put mug 1 on desk 2``; ``pick up``, ``grab``, ``wash``, ``warm``, ``chill``, ``goto``...).
        A command that matches no template, or several commands in one reply (``open door then go north``), is a
        malformed action: error observation listing the templates, no state change. A well-formed command that
        cannot be done now (taking from a closed drawer) is a valid turn whose observation starts ``Nothing
        happens`` and says why. ``info["admissible_actions"]`` lists the commands that have an effect now, naming
        only things the agent has seen (``show_admissible=True`` also prints them).

    Tools:
        ``act(command: str)``.

    Rewards:
        ``task`` (weight 1): raw 1 when the goal holds. ``progress`` (weight 0.1): raw ``1/K`` for each of the
        task's K sub-goals the first time it is reached (found a target object, picked it, transformed it, placed
        it, per object for ``two``; ``examine``: found the object, picked it, found the lamp, examined): distinct
        objects, once per episode, so take/drop/take again earns nothing new; the whole episode's progress is at
        most 1. ``format`` (weight 0.1): raw -1 per malformed action.

    Episode end:
        ``terminated`` with ``success=True`` when the goal holds; ``terminated`` with ``success=False`` at the
        ``max_invalid_actions + 1``-th malformed action (default 10 tolerated); ``truncated`` after ``max_turns``
        (default 50).

    Arguments:
        difficulty: 1-5 (default 3): rooms (1, 1, 2, 3, 4), receptacle counts, distractor objects (2-4 up to
            12-20), spare target objects, and the family mix (1: put, examine; 2: + clean, heat, cool; 3-5: all
            six; 5 weights ``two`` double).
        show_admissible: Print the admissible commands after every observation (default False).
        action_format, reward_weights, max_turns, max_invalid_actions, render_mode: see ``AgentEnv``.

    Task ids:
        ``household-d<difficulty>-<world seed>``; ``reset(options={"task_id": ...})`` rebuilds that world.

    Version history:
        v0: initial version.
    """

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = DEFAULT_MAX_TURNS

    def __init__(self, *, difficulty: int = DEFAULT_DIFFICULTY, **kwargs: Any) -> None:
        if int(difficulty) not in DIFFICULTIES:
            raise ValueError(f"difficulty must be in 1-5, got {difficulty}")
        super().__init__(**kwargs)
        self.difficulty = int(difficulty)
        self.world: World | None = None

    # ----------------------------------------------------------------- CommandEnv hooks
    def describe_task(self) -> str:
        return (
            "You are an agent in a house. Carry out the household task you are given by typing text commands. "
            "You only see what is where you are; closed receptacles hide what is inside. You can carry one "
            "object at a time."
        )

    def command_help(self) -> str:
        return COMMAND_HELP

    def _new_episode(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            difficulty, seed = self.difficulty, int(self.np_random.integers(0, _SEED_LIMIT))
        else:
            m = _TASK_ID.match(task_id)
            if m is None:
                raise TaskLoadError(f"unknown household task id {task_id!r}; expected household-d<1-5>-<seed>")
            difficulty, seed = int(m.group(1)), int(m.group(2))
        self.world = generate(seed, difficulty)
        w = self.world
        text = f"-= Welcome to the house =-\n{w.room_text()}\n\nYour task is to: {w.task.text}"
        return f"household-d{difficulty}-{seed}", text

    def _interpret(self, command: str) -> tuple[str, Any]:
        command = command.rstrip(".!?").strip()
        try:
            parsed = interpret(command)
        except MultipleCommands as exc:
            parts = exc.args[0]
            raise ParseError(
                f"one command per turn: your reply chains {len(parts)} commands ({'; '.join(parts[:4])}); nothing "
                f"was done. {COMMAND_HELP}"
            ) from None
        if parsed is None:
            raise unknown_command(command, COMMAND_HELP)
        verb, args = parsed
        return _canonical(verb, args), parsed

    def _execute(self, parsed: Any) -> Transition:
        w = self._world()
        verb, args = parsed
        if verb == "go":
            obs = w.go(args[0])
        elif verb == "open":
            obs = w.open(args[0])
        elif verb == "close":
            obs = w.close(args[0])
        elif verb == "take":
            obs = w.take(args[0], args[1] or None)
        elif verb == "put":
            obs = w.put(args[0], args[1])
        elif verb == "use":
            obs = w.use(args[0])
        elif verb in ("clean", "heat", "cool"):
            obs = w.transform(verb, args[0], args[1])
        elif verb == "examine":
            obs = w.examine(args[0])
        elif verb == "inventory":
            obs = w.inventory()
        elif verb == "look":
            obs = w.look()
        else:  # help
            obs = COMMAND_HELP
        parts: dict[str, float] = {}
        new = w.update_credit(verb)
        if new:
            parts["progress"] = PROGRESS_TOTAL * new / w.subgoal_count()
        solved = w.solved(verb)
        if solved:
            parts["task"] = TASK_REWARD
            obs += "\nYou completed the task!"
        return Transition(obs, parts, terminated=solved, success=solved, info={"task_family": w.task.family})

    def admissible_actions(self) -> list[str]:
        return self._world().admissible()

    def expert_command(self) -> str:
        return self._world().expert()

    # ----------------------------------------------------------------- helpers
    def _world(self) -> World:
        if self.world is None:
            raise ResetNeeded("call reset() first")
        return self.world

    @property
    def task_family(self) -> str:
        """The current task's family (``put two examine clean heat cool``)."""
        return self._world().task.family

    @property
    def alfworld_family(self) -> str:
        """The current task's family under ALFWorld's name (``pick_and_place_simple`` ...)."""
        return ALFWORLD_FAMILY_NAMES[self.task_family]


def _canonical(verb: str, args: tuple[str, ...]) -> str:
    if verb == "go":
        return f"go to {args[0]}"
    if verb == "take":
        return f"take {args[0]} from {args[1]}" if args[1] else f"take {args[0]}"
    if verb == "put":
        kind = args[1].rsplit(" ", 1)[0]
        return f"put {args[0]} {'in' if kind in PREP_IN else 'on'} {args[1]}"
    if verb in ("clean", "heat", "cool"):
        return f"{verb} {args[0]} with {args[1]}"
    if verb in ("inventory", "look", "help"):
        return verb
    return f"{verb} {args[0]}"


__all__ = ["HouseholdEnv"]
