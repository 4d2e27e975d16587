"""BabyAI levels (the ``minigrid`` package) as a text world: ``arl/embodied.babyai-v0``.

The world is minigrid's own BabyAI level (``BabyAI-<level>-v0``); this module only renders the agent's partial,
egocentric view as text and maps text commands onto minigrid's seven actions. What the text describes is read from
minigrid's own observation (``MiniGridEnv.gen_obs()``: the 7x7 view rotated to the agent's heading, with the
visibility mask of ``Grid.process_vis``), so nothing behind a wall or a closed door is ever described: an unseen
cell is encoded as ``unseen`` there and skipped here.

Source: Chevalier-Boisvert et al., "BabyAI: A Platform to Study the Sample Efficiency of Grounded Language
Learning", ICLR 2019; Farama-Foundation/Minigrid (``minigrid.envs.babyai``, ``minigrid.utils.baby_ai_bot``). The
text form of the view follows BabyAI-Text (Carta et al., "Grounding Large Language Models in Interactive
Environments with Online Reinforcement Learning", ICML 2023): objects as "<what> <n> steps forward and <m> steps
left", plus the nearest wall straight ahead, to the left and to the right.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from arl_envs.core.env import Transition
from arl_envs.core.errors import DependencyNotInstalled, TaskLoadError
from arl_envs.envs.embodied.command_env import CommandEnv, unknown_command

#: The seven text commands, in minigrid's action order (``minigrid.core.actions.Actions``: left, right, forward,
#: pickup, drop, toggle, done).
COMMANDS: tuple[str, ...] = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle", "done")
#: Accepted spellings of each command (after lower-casing and whitespace normalisation).
SYNONYMS: dict[str, str] = {
    "left": "turn left",
    "turn left": "turn left",
    "rotate left": "turn left",
    "right": "turn right",
    "turn right": "turn right",
    "rotate right": "turn right",
    "forward": "go forward",
    "go forward": "go forward",
    "move forward": "go forward",
    "step forward": "go forward",
    "pick up": "pick up",
    "pickup": "pick up",
    "pick": "pick up",
    "drop": "drop",
    "put down": "drop",
    "toggle": "toggle",
    "open": "toggle",
    "done": "done",
}
#: Levels named in the issue (any other ``BabyAI-*`` id registered by minigrid also works).
LEVELS: tuple[str, ...] = (
    "GoToRedBall", "GoToLocal", "PickupLoc", "Open", "PutNextLocal", "Unlock", "GoToSeq", "BossLevel",
)
DEFAULT_LEVEL = "GoToLocal"
#: Turn budget used before the first reset (each reset sets the level's own ``max_steps`` unless ``max_turns``).
PLACEHOLDER_MAX_TURNS = 64
_HEADINGS = ("east", "south", "west", "north")  # minigrid's agent_dir 0..3
_HELP = (
    "Commands: turn left | turn right | go forward | pick up (the object right in front of you) | "
    "drop (what you carry, onto the free cell in front of you) | toggle (open/close the door or open the box in "
    "front of you; a locked door needs the key of its colour in hand) | done."
)


def _minigrid() -> Any:
    try:
        import minigrid  # noqa: F401  (registers the BabyAI-* ids with gymnasium)
        from minigrid.core import constants
    except ImportError as exc:  # pragma: no cover - minigrid is part of the embodied extra
        raise DependencyNotInstalled("BabyAI needs minigrid: pip install 'arl-envs[embodied]'") from exc
    return constants


def minigrid_id(level: str) -> str:
    """The gymnasium id of a BabyAI level: ``"GoToLocal"`` -> ``"BabyAI-GoToLocal-v0"`` (full ids pass through)."""
    return level if level.startswith("BabyAI-") else f"BabyAI-{level}-v0"


def _steps(n: int, word: str) -> str:
    return f"{n} step{'s' if n != 1 else ''} {word}"


def _where(fwd: int, side: int) -> str:
    parts = []
    if fwd:
        parts.append(_steps(fwd, "forward"))
    if side:
        parts.append(_steps(abs(side), "right" if side > 0 else "left"))
    return " and ".join(parts)



def _quiet_level_generator() -> None:
    """Silence the "Sampling rejected: ..." lines minigrid's BabyAI level generator prints while it retries.

    Only that module's own ``print`` name is shadowed (idempotent, thread-safe): redirecting ``sys.stdout``
    instead would swallow every other thread's output while a level is generated.
    """
    from minigrid.envs.babyai.core import roomgrid_level

    roomgrid_level.print = _discard  # type: ignore[attr-defined]


def _discard(*args: Any, **kwargs: Any) -> None:
    """A ``print`` that prints nothing."""

class ViewRenderer:
    """Turns minigrid's encoded partial view into sentences.

    ``image`` is ``MiniGridEnv.gen_obs()["image"]``: shape ``(view, view, 3)`` (``view`` = ``agent_view_size``, 7
    in BabyAI), indexed ``[column, row]``; the agent stands at column ``view // 2`` of the last row and looks
    towards row 0. Channel 0 is the object type (``unseen`` for cells the visibility mask hides), 1 the colour,
    2 the door state (0 open, 1 closed, 2 locked).
    """

    def __init__(self) -> None:
        constants = _minigrid()
        self.type_names = dict(constants.IDX_TO_OBJECT)
        self.color_names = dict(constants.IDX_TO_COLOR)
        idx = constants.OBJECT_TO_IDX
        self.unseen, self.empty, self.wall = idx["unseen"], idx["empty"], idx["wall"]
        self.door = idx["door"]
        self.skip = {idx["unseen"], idx["empty"], idx["wall"], idx["floor"], idx["agent"]}

    def name(self, type_idx: int, color_idx: int, state: int) -> str:
        """``"a closed red door"``, ``"a blue key"``, ``"the goal"``, ``"lava"`` ..."""
        kind = self.type_names[int(type_idx)]
        color = self.color_names[int(color_idx)]
        if kind == "door":
            return f"a{'n' if state == 0 else ''} {('open', 'closed', 'locked')[int(state)]} {color} door"
        if kind == "goal":
            return "the goal"
        if kind == "lava":
            return "lava"
        return f"a {color} {kind}"

    def describe(self, image: np.ndarray) -> list[str]:
        """What is where, relative to the agent: one line per visible object, then the nearest walls.

        Args:
            image: ``(view, view, 3)`` uint8 encoding (see the class docstring).

        Returns:
            Lines such as ``"a red ball 2 steps forward and 1 step left"``, nearest first.
        """
        cells = image.tolist()  # [column][row][type, colour, state]: 49 cells, plain Python is fastest here
        view, last = len(cells), len(cells[0]) - 1
        mid = view // 2
        skip, wall = self.skip, self.wall
        found: list[tuple[int, int, int, str]] = []
        for i, column in enumerate(cells):
            side = i - mid
            for j, (t, c, s) in enumerate(column):
                if t in skip or (i == mid and j == last):  # the agent's own cell holds what it carries
                    continue
                fwd = last - j
                found.append((fwd + abs(side), fwd, side, f"{self.name(t, c, s)} {_where(fwd, side)}"))
        found.sort()
        lines = [text for *_, text in found]
        # Nearest visible wall straight ahead, to the left and to the right (cells in a straight line).
        ahead = cells[mid]
        for fwd in range(1, last + 1):
            if ahead[last - fwd][0] == wall:
                lines.append(f"a wall {_steps(fwd, 'forward')}")
                break
        for side in range(1, mid + 1):
            if cells[mid - side][last][0] == wall:
                lines.append(f"a wall {_steps(side, 'left')}")
                break
        for side in range(1, view - mid):
            if cells[mid + side][last][0] == wall:
                lines.append(f"a wall {_steps(side, 'right')}")
                break
        return lines

    def in_front(self, image: np.ndarray) -> str:
        """What occupies the cell right in front of the agent (as the view shows it)."""
        mid, last = image.shape[0] // 2, image.shape[1] - 1
        t, c, s = image[mid, last - 1]
        if t == self.empty:
            return "nothing (the cell is free)"
        if t == self.wall:
            return "a wall"
        if t == self.unseen:  # pragma: no cover - the cell in front is always visible in minigrid
            return "something you cannot see"
        return self.name(t, c, s)


class BabyAIEnv(CommandEnv):
    """BabyAI grid-world missions in text, on minigrid's own levels.

    Description:
        One BabyAI mission per episode ("go to the red ball", "open the door on your left", "put the blue key
        next to the green box", "pick up a ball, then go to the purple door", ...), from minigrid's level
        ``BabyAI-<level>-v0``. The world, its dynamics, the mission and its success check are minigrid's; this
        env renders the agent's partial view as text and reads text commands.
    Observation:
        The mission, the agent's heading (minigrid's compass), what it carries, what is right in front of it,
        and every object in its 7x7 egocentric view with its position relative to the agent ("a red ball 2
        steps forward and 1 step left"; "a closed blue door 3 steps right"), plus the nearest wall straight
        ahead/left/right. Only cells that minigrid's visibility mask shows are described (nothing behind a wall
        or a closed door). After an action, one sentence says what it did ("You cannot move forward: a wall
        blocks the way.").
    Action:
        Native: one command, bare (``go forward``) or in ``<action>...</action>`` (the last block outside
        ``<think>`` counts). JSON: ``act(command)``. Commands: ``turn left``, ``turn right``, ``go forward``,
        ``pick up``, ``drop``, ``toggle``, ``done`` (synonyms: ``left``, ``right``, ``forward``, ``move forward``,
        ``pickup``, ``put down``, ``open``). Anything else is a malformed action (error observation listing the
        commands, ``format`` penalty). ``info["admissible_actions"]``: the seven commands (all always valid).
    Tools:
        ``act(command: str)``.
    Rewards:
        ``task`` (weight 1): 1 when minigrid reports the mission completed. ``progress`` (weight 0.1): for
        composite missions ("..., then ...", "... and ..."), 1/n when each of the n sub-instructions is first
        completed (once per sub-instruction; 0 for single-clause missions). ``format`` (weight 0.1): raw -1 per
        malformed action.
    Episode end:
        Terminated when minigrid's verifier reports success or failure (a wrong object picked up or put in a
        strict level, sub-instructions done in the wrong order), or after more than ``max_invalid_actions``
        (default 10) malformed actions. Truncated after ``max_turns`` turns (default: the level's own
        ``max_steps`` for that episode; malformed actions count as turns).
    Arguments:
        level (str, default ``"GoToLocal"``): a BabyAI level name (``GoToRedBall``, ``GoToLocal``,
        ``PickupLoc``, ``Open``, ``PutNextLocal``, ``Unlock``, ``GoToSeq``, ``BossLevel``, or any other
        ``BabyAI-*`` level of minigrid, by name or full id), show_admissible, action_format, reward_weights,
        max_turns, max_invalid_actions, render_mode.
    Expert:
        minigrid's BabyAI bot (``minigrid.utils.baby_ai_bot.BabyAIBot``), which plans over the true grid and
        adapts to the agent's actual actions (called once per minigrid step once consulted; if the agent acted
        for several steps without consulting it, a fresh bot is started from the current state).
    Version history:
        v0: initial release.
    """

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = PLACEHOLDER_MAX_TURNS
    default_max_invalid_actions: ClassVar[int] = 10

    def __init__(self, *, level: str = DEFAULT_LEVEL, max_turns: int | None = None, **kwargs: Any) -> None:
        import gymnasium as gym

        _minigrid()
        gid = minigrid_id(str(level))
        if gid not in gym.registry:
            known = sorted(k[len("BabyAI-"):-len("-v0")] for k in gym.registry if k.startswith("BabyAI-"))
            raise ValueError(f"unknown BabyAI level {level!r}; known levels: {', '.join(known)}")
        super().__init__(max_turns=max_turns, **kwargs)
        self.level = gid[len("BabyAI-"):].rsplit("-v", 1)[0]
        self.minigrid_id = gid
        self._fixed_max_turns = max_turns is not None
        self.world = gym.make(gid).unwrapped  # minigrid's RoomGridLevel
        self.renderer = ViewRenderer()
        self._actions = list(self.world.actions)  # IntEnum in COMMANDS order
        self._obs: dict[str, Any] | None = None
        self._bot: Any = None
        self._bot_step = -1
        self._bot_action: int | None = None
        self._last_action: int | None = None
        self._leaves_total = 0
        self._leaves_credited = 0

    # ----------------------------------------------------------------- CommandEnv hooks
    def describe_task(self) -> str:
        return (
            f"You are an agent in a BabyAI grid world (level {self.level}): rooms of 8x8 cells joined by doors, "
            "with keys, balls and boxes. You see only a 7x7 area in front of you (not through walls or closed "
            "doors); positions are given relative to you (forward, left, right). Carry out the mission."
        )

    def command_help(self) -> str:
        return _HELP

    def _new_episode(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        else:
            seed = self._seed_from_id(task_id)
        _quiet_level_generator()
        obs, _ = self.world.reset(seed=seed)
        self._obs = obs
        if not self._fixed_max_turns:
            self.max_turns = int(self.world.max_steps)
        # minigrid's reward is positive on success only while step_count <= max_steps / 0.9; keep its budget at
        # least ours so success is read reliably from the reward sign.
        self.world.max_steps = max(int(self.world.max_steps), self.max_turns)
        self._bot, self._bot_step, self._bot_action, self._last_action = None, -1, None, None
        self._leaves_total = _count_leaves(self.world.instrs)
        self._leaves_credited = 0
        return f"{self.level}:{seed}", self._render(None)

    def _seed_from_id(self, task_id: str) -> int:
        level, _, seed = task_id.rpartition(":")
        if level != self.level or not seed.isdigit():
            raise TaskLoadError(f"task_id must be '{self.level}:<seed>' (a non-negative integer), got {task_id!r}")
        return int(seed)

    def _interpret(self, command: str) -> tuple[str, Any]:
        canonical = SYNONYMS.get(command)
        if canonical is None:
            raise unknown_command(command, _HELP)
        return canonical, COMMANDS.index(canonical)

    def _execute(self, parsed: Any) -> Transition:
        world = self.world
        action = self._actions[int(parsed)]
        before_pos, before_carry = tuple(world.agent_pos), world.carrying
        front = world.grid.get(*world.front_pos)
        front_door_open = front.is_open if front is not None and front.type == "door" else None
        obs, reward, terminated, _truncated, _ = world.step(action)
        self._obs = obs
        self._last_action = int(action)
        feedback = self._feedback(int(parsed), before_pos, before_carry, front, front_door_open)
        parts: dict[str, float] = {}
        if self._leaves_total > 1:
            done = min(_count_done(world.instrs), self._leaves_total)
            if done > self._leaves_credited:
                parts["progress"] = (done - self._leaves_credited) / self._leaves_total
                self._leaves_credited = done
        success = bool(terminated and reward > 0)
        if success:
            parts["task"] = 1.0
            text = f"{feedback}\nMission complete: {world.mission}."
        elif terminated:
            text = f"{feedback}\nMission failed: that broke the mission ({world.mission})."
        else:
            text = self._render(feedback)
        info = {"minigrid_step": int(world.step_count)}
        return Transition(text, parts, terminated=bool(terminated), success=success, info=info)

    def admissible_actions(self) -> list[str]:
        return list(COMMANDS)

    def expert_command(self) -> str:
        return COMMANDS[self.expert_action_index()]

    # ----------------------------------------------------------------- public helpers
    def expert_action_index(self) -> int:
        """The BabyAI bot's next action as minigrid's action index (0-6; :data:`COMMANDS` order).

        The bot is created at the first call of an episode and then replanned once per minigrid step with the
        action the agent actually took (``BabyAIBot.replan(action_taken)``), as minigrid's bot expects; a gap (the
        agent stepped without consulting it) starts a fresh bot from the current state. If the bot cannot plan
        (e.g. the agent opened a box it needed), a fresh bot is tried, then ``done`` is returned.
        """
        from minigrid.utils.baby_ai_bot import BabyAIBot

        step = int(self.world.step_count)
        if self._bot is not None and self._bot_step == step and self._bot_action is not None:
            return self._bot_action
        action: int | None = None
        for attempt in range(2):
            try:
                if self._bot is None or self._bot_step != step - 1 or attempt:
                    self._bot = BabyAIBot(self.world)
                    action = int(self._bot.replan())
                else:
                    action = int(self._bot.replan(self._last_action))
                break
            except Exception:  # the bot's own failure modes (DisappearedBoxError, assertions)
                self._bot = None
        if action is None:
            action = COMMANDS.index("done")
        self._bot_step, self._bot_action = step, action
        return action

    def text_observation(self) -> str:
        """The text of the agent's current view (what the next observation would describe)."""
        if self._obs is None:
            from arl_envs.core.errors import ResetNeeded

            raise ResetNeeded("call reset() first")
        self._obs = self.world.gen_obs()
        return self._render(None)

    # ----------------------------------------------------------------- internals
    def _render(self, feedback: str | None) -> str:
        assert self._obs is not None
        image = self._obs["image"]
        carrying = self.world.carrying
        held = f"You are carrying {self.renderer.name(*carrying.encode())}." if carrying else "You are carrying nothing."
        lines = [] if feedback is None else [feedback]
        lines += [
            f"Mission: {self.world.mission}",
            f"You are facing {_HEADINGS[int(self._obs['direction'])]}. {held}",
            f"Right in front of you: {self.renderer.in_front(image)}.",
        ]
        seen = self.renderer.describe(image)
        lines.append("You see: " + "; ".join(seen) + "." if seen else "You see nothing else.")
        return "\n".join(lines)

    def _feedback(self, idx: int, before_pos: tuple[int, ...], before_carry: Any, front: Any,
                  front_door_open: bool | None) -> str:
        world = self.world
        name = (lambda o: self.renderer.name(*o.encode()))  # noqa: E731
        cmd = COMMANDS[idx]
        if cmd == "turn left":
            return "You turn left."
        if cmd == "turn right":
            return "You turn right."
        if cmd == "go forward":
            if tuple(world.agent_pos) != before_pos:
                return "You move forward."
            return f"You cannot move forward: {name(front)} blocks the way."
        if cmd == "pick up":
            if world.carrying is not None and before_carry is None:
                return f"You pick up {name(world.carrying)}."
            if before_carry is not None:
                return "You cannot pick up: your hands are full (drop what you carry first)."
            return "There is nothing to pick up in front of you." if front is None else f"You cannot pick up {name(front)}."
        if cmd == "drop":
            if before_carry is not None and world.carrying is None:
                return f"You drop {name(before_carry)}."
            if before_carry is None:
                return "You are not carrying anything."
            return "You cannot drop here: the cell in front of you is not free."
        if cmd == "toggle":
            if front is None:
                return "There is nothing in front of you to toggle."
            if front.type == "door":
                if front.is_open != front_door_open:
                    return f"You {'open' if front.is_open else 'close'} the {front.color} door."
                if front.is_locked:
                    return f"The {front.color} door is locked: you need to carry the {front.color} key."
            if front.type == "box" and world.grid.get(*world.front_pos) is not front:
                return f"You open the {front.color} box."
            return "Nothing happens."
        return "You say you are done."


def _count_leaves(instr: Any) -> int:
    from minigrid.envs.babyai.core.verifier import SeqInstr

    if isinstance(instr, SeqInstr):
        return _count_leaves(instr.instr_a) + _count_leaves(instr.instr_b)
    return 1


def _count_done(instr: Any, done: bool = False) -> int:
    """Sub-instructions of ``instr`` that minigrid's verifier has marked completed (``a_done``/``b_done``)."""
    from minigrid.envs.babyai.core.verifier import SeqInstr

    if done:
        return _count_leaves(instr)
    if isinstance(instr, SeqInstr):
        return _count_done(instr.instr_a, getattr(instr, "a_done", False) == "success") + _count_done(
            instr.instr_b, getattr(instr, "b_done", False) == "success"
        )
    return 0


__all__ = ["BabyAIEnv", "COMMANDS", "LEVELS", "SYNONYMS", "ViewRenderer", "minigrid_id"]
