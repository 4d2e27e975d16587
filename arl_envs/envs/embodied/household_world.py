"""The procedurally generated household of ``arl/embodied.household-v0`` (world state and rules).

In the spirit of ALFWorld (Shridhar et al., 2021, "ALFWorld: Aligning Text and Embodied Environments for
Interactive Learning", alfworld/alfworld), whose TextWorld game files need a download we cannot do: a house of
rooms, numbered receptacles (some openable), numbered objects with properties, and ALFWorld's six task families
(``pick_and_place``, ``pick_two``, ``look_at_obj_in_light``, ``pick_clean_then_place``, ``pick_heat_then_place``,
``pick_cool_then_place``). Names, command templates and observation phrasing follow ALFWorld's text
(``You arrive at countertop 1. On the countertop 1, you see a mug 1.``).

Everything here is plain Python over small dicts and lists (no numpy) so one step costs microseconds. The only
randomness is a :class:`random.Random` seeded once per world, so a world id reproduces the world exactly.

Modules: :mod:`~arl_envs.envs.embodied.household_things` (tables and state records),
:mod:`~arl_envs.envs.embodied.household_generator` (the house generator and object placement),
:mod:`~arl_envs.envs.embodied.household_planner` (the expert), :mod:`~arl_envs.envs.embodied.household_grammar`
(the command grammar), and this one: :class:`World` (observation, action rules, goal, admissible commands) and
:func:`generate`.
"""

from __future__ import annotations

from arl_envs.envs.embodied.household_generator import generate_house
from arl_envs.envs.embodied.household_grammar import COMMAND_HELP, MultipleCommands, entity, interpret
from arl_envs.envs.embodied.household_planner import Planner
from arl_envs.envs.embodied.household_things import (
    ALFWORLD_FAMILY_NAMES,
    APPLIANCE,
    DIFFICULTIES,
    FAMILIES,
    LAMP_KIND,
    OBJECT_KINDS,
    PREP_IN,
    ROOM_LAYOUTS,
    Receptacle,
    Task,
    Thing,
    article,
    join_names,
)


class World(Planner):
    """One household episode's true state and its rules (the planner is :class:`Planner`'s).

    Built by :func:`generate`. Command methods return the observation text; they never raise for a command that
    cannot be done now (the text says why, starting ``Nothing happens``) and change nothing in that case.
    """

    def __init__(self, rooms: list[str], receptacles: dict[str, Receptacle], things: dict[str, Thing],
                 task: Task, start_room: str, room_recs: dict[str, list[str]] | None = None,
                 by_kind: dict[str, list[str]] | None = None) -> None:
        self.rooms = rooms
        self.receptacles = receptacles
        self.things = things
        self.task = task
        self.room = start_room
        self.at: str | None = None  # receptacle name, or None: the middle of self.room
        self.holding: str | None = None
        if room_recs is None or by_kind is None:
            room_recs, by_kind = {r: [] for r in rooms}, {}
            for rec in receptacles.values():
                room_recs[rec.room].append(rec.name)
                by_kind.setdefault(rec.kind, []).append(rec.name)
        self.room_recs = room_recs
        self.by_kind = by_kind
        self._rec_index: dict[str, int] | None = None
        self.visited_rooms: set[str] = set()
        self.seen: set[str] = set()  # receptacles and things the agent has observed
        self.credit: dict[str, set[str]] = {"found": set(), "picked": set(), "transformed": set(), "placed": set(),
                                            "lamp": set(), "examined": set()}
        self._credited = 0
        self._go_key: tuple[str, str | None, int] | None = None
        self._go_cache: list[str] = []
        self._enter_room(start_room)

    # --------------------------------------------------------------------------------------------- observing
    def _enter_room(self, room: str) -> None:
        self.room, self.at = room, None
        self.visited_rooms.add(room)
        self.seen.update(self.room_recs[room])

    def _note_seen(self, names: list[str]) -> None:
        seen, found, need, kind = self.seen, self.credit["found"], self.task.need, self.task.obj_kind
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            thing = self.things.get(name)
            if thing is None:
                continue
            if thing.kind == kind and len(found) < need:
                found.add(name)
            elif thing.kind == LAMP_KIND and self.task.family == "examine":
                self.credit["lamp"].add("lamp")

    def place_text(self, rec: Receptacle) -> str:
        """What the agent sees at ``rec`` (contents only when it is open or has no door)."""
        if not rec.accessible:
            return f"The {rec.name} is closed."
        self._note_seen(rec.contents)
        where = "In" if rec.prep == "in" else "On"
        state = f"The {rec.name} is open. " if rec.openable else ""
        return f"{state}{where} the {rec.name}, you see {join_names(rec.contents)}."

    def room_text(self) -> str:
        others = [r for r in self.rooms if r != self.room]
        text = (f"You are in the middle of the {self.room}. Looking quickly around you, you see "
                f"{join_names(self.room_recs[self.room])}.")
        if others:
            names = [f"the {r}" for r in others]
            listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            text += f" From here you can also go to {listed}."
        return text

    def look(self) -> str:
        if self.at is None:
            return self.room_text()
        return f"You are at the {self.at} in the {self.room}. " + self.place_text(self.receptacles[self.at])

    def inventory(self) -> str:
        return f"You are carrying: {article(self.holding)}." if self.holding else "You are not carrying anything."

    # --------------------------------------------------------------------------------------------- rules
    def _known_place(self, name: str) -> str | None:
        if name in self.rooms:
            return name
        if name in self.receptacles and name in self.seen:
            return name
        return None

    def go(self, target: str) -> str:
        place = self._known_place(target)
        if place is None:
            return f"Nothing happens: you know of no place called '{target}'."
        if place in self.room_recs:  # a room
            if self.room == place and self.at is None:
                return "You are already in the middle of the " + place + ". " + self.room_text()
            self._enter_room(place)
            return self.room_text()
        rec = self.receptacles[place]
        if self.at == place:
            return f"You are already at the {place}. " + self.place_text(rec)
        if rec.room != self.room:
            self._enter_room(rec.room)
        self.at = place
        return f"You arrive at {place}. " + self.place_text(rec)

    def _here(self, name: str) -> Receptacle | str:
        """The receptacle ``name`` if the agent is at it, else the message saying why not."""
        if name not in self.receptacles or name not in self.seen:
            return f"Nothing happens: you see no {name} here."
        if self.at != name:
            return f"Nothing happens: you are not at the {name}. Go to it first."
        return self.receptacles[name]

    def open(self, name: str) -> str:
        rec = self._here(name)
        if isinstance(rec, str):
            return rec
        if not rec.openable:
            return f"Nothing happens: the {name} cannot be opened."
        if rec.is_open:
            return f"Nothing happens: the {name} is already open. " + self.place_text(rec)
        rec.is_open = True
        return f"You open the {name}. " + self.place_text(rec)

    def close(self, name: str) -> str:
        rec = self._here(name)
        if isinstance(rec, str):
            return rec
        if not rec.openable:
            return f"Nothing happens: the {name} cannot be closed."
        if not rec.is_open:
            return f"Nothing happens: the {name} is already closed."
        rec.is_open = False
        return f"You close the {name}."

    def take(self, obj: str, source: str | None) -> str:
        if source is None:
            if self.at is None:
                return f"Nothing happens: you are not at any receptacle; say take {obj} from <receptacle>."
            source = self.at
        rec = self._here(source)
        if isinstance(rec, str):
            return rec
        if not rec.accessible:
            return f"Nothing happens: the {source} is closed."
        if obj not in rec.contents:
            return f"Nothing happens: there is no {obj} {rec.prep} the {source}."
        thing = self.things[obj]
        if not thing.portable:
            return f"Nothing happens: the {obj} cannot be taken."
        if self.holding is not None:
            return f"Nothing happens: you are already carrying the {self.holding}; put it somewhere first."
        rec.contents.remove(obj)
        thing.location = None
        self.holding = obj
        return f"You pick up the {obj} from the {source}."

    def put(self, obj: str, target: str) -> str:
        if self.holding != obj:
            return f"Nothing happens: you are not carrying {article(obj) if obj else 'that'}."
        rec = self._here(target)
        if isinstance(rec, str):
            return rec
        if not rec.accessible:
            return f"Nothing happens: the {target} is closed."
        rec.contents.append(obj)
        self.things[obj].location = target
        self.holding = None
        return f"You put the {obj} {rec.prep} the {target}."

    def use(self, name: str) -> str:
        thing = self.things.get(name)
        if thing is None or name not in self.seen or thing.location != self.at or self.at is None:
            return f"Nothing happens: you see no {name} here."
        if thing.kind != LAMP_KIND:
            return f"Nothing happens: the {name} cannot be used."
        thing.is_on = not thing.is_on
        return f"You turn {'on' if thing.is_on else 'off'} the {name}."

    def transform(self, verb: str, obj: str, tool: str) -> str:
        if self.holding != obj:
            return f"Nothing happens: you are not carrying {article(obj) if obj else 'that'}."
        rec = self._here(tool)
        if isinstance(rec, str):
            return rec
        if rec.kind != APPLIANCE[verb]:
            return f"Nothing happens: you cannot {verb} anything with the {tool} (use a {APPLIANCE[verb]})."
        thing = self.things[obj]
        if verb not in thing.props:
            return f"Nothing happens: the {obj} cannot be {verb}ed." if verb != "heat" else \
                f"Nothing happens: the {obj} cannot be heated."
        if verb == "clean":
            thing.clean = True
            return f"You clean the {obj} using the {tool}."
        if verb == "heat":
            thing.hot, thing.cold = True, False
            return f"You heat the {obj} using the {tool}."
        thing.cold, thing.hot = True, False
        return f"You cool the {obj} using the {tool}."

    def examine(self, name: str) -> str:
        if name in self.receptacles:
            rec = self._here(name)
            return rec if isinstance(rec, str) else self.place_text(rec)
        thing = self.things.get(name)
        visible = thing is not None and name in self.seen and (
            self.holding == name or (self.at is not None and thing.location == self.at
                                     and self.receptacles[self.at].accessible))
        if not visible or thing is None:
            return f"Nothing happens: you see no {name} here."
        if thing.kind == LAMP_KIND:
            return f"This is a {thing.colour} desklamp. It is turned {'on' if thing.is_on else 'off'}."
        parts = [f"This is a {thing.colour} {thing.material} {thing.kind}."]
        if "clean" in thing.props:
            parts.append("It is clean." if thing.clean else "It is dirty.")
        if thing.props & {"heat", "cool"}:
            parts.append("It is hot." if thing.hot else "It is cold." if thing.cold else "It is at room temperature.")
        return " ".join(parts)

    # --------------------------------------------------------------------------------------------- goal
    def satisfies(self, thing: Thing) -> bool:
        """Whether ``thing`` is of the task's kind and in the state the family asks for (placement aside)."""
        t = self.task
        if thing.kind != t.obj_kind:
            return False
        if t.family == "clean":
            return thing.clean
        if t.family == "heat":
            return thing.hot
        if t.family == "cool":
            return thing.cold
        return True

    def placed(self) -> list[str]:
        """Target objects in a target receptacle, in the required state."""
        out: list[str] = []
        for name in self.by_kind.get(self.task.target_kind or "", ()):
            out += [o for o in self.receptacles[name].contents if self.satisfies(self.things[o])]
        return out

    def examined(self) -> bool:
        if self.holding is None or self.at is None or self.things[self.holding].kind != self.task.obj_kind:
            return False
        return any(self.things[o].kind == LAMP_KIND and self.things[o].is_on
                   for o in self.receptacles[self.at].contents)

    def solved(self, verb: str = "put") -> bool:
        """Whether the goal holds; ``verb`` (the last command's) lets placement tasks skip the check but after ``put``."""
        if self.task.family == "examine":
            return self.examined()
        return verb == "put" and len(self.placed()) >= self.task.need

    def subgoal_count(self) -> int:
        """How many progress sub-goals the task has (each is credited once per episode)."""
        n = self.task.need
        if self.task.family == "examine":
            return 4  # found, picked, lamp found, examined
        if self.task.family in APPLIANCE:
            return 4 * n  # found, picked, transformed, placed
        return 3 * n  # found, picked, placed

    def update_credit(self, verb: str = "") -> int:
        """Record the sub-goals reached now; return how many are NEW (each is credited once per episode).

        ``found`` is recorded as things come into view (:meth:`_note_seen`); ``picked``, ``transformed`` and
        ``placed`` count distinct target objects (up to ``need``), so taking, dropping and taking the same object
        again credits nothing new.
        """
        t, c, need = self.task, self.credit, self.task.need
        before = self._credited
        held = self.holding
        if held is not None and self.things[held].kind == t.obj_kind:
            if len(c["picked"]) < need:
                c["picked"].add(held)
            if t.family in APPLIANCE and len(c["transformed"]) < need and self.satisfies(self.things[held]):
                c["transformed"].add(held)
        if t.family == "examine":
            if self.examined():
                c["examined"].add("examined")
        elif verb == "put" and len(c["placed"]) < need:  # only a put places anything
            for name in self.placed():
                if len(c["placed"]) < need:
                    c["placed"].add(name)
        self._credited = sum(len(v) for v in c.values())
        return self._credited - before

    # --------------------------------------------------------------------------------------------- admissible
    def admissible(self) -> list[str]:
        """Every command with an effect now, canonical form, naming only seen things (ALFWorld's list)."""
        key = (self.room, self.at, len(self.seen))  # the go-to part changes only with these
        if self._go_key != key:
            go = [f"go to {room}" for room in self.rooms if room != self.room or self.at is not None]
            go += [f"go to {name}" for name in self.receptacles if name in self.seen and name != self.at]
            self._go_key, self._go_cache = key, go
        out = list(self._go_cache)
        held = self.holding
        if self.at is not None:
            rec = self.receptacles[self.at]
            if rec.openable:
                out.append(f"close {rec.name}" if rec.is_open else f"open {rec.name}")
            if rec.accessible:
                for o in rec.contents:
                    th = self.things[o]
                    if th.portable and held is None:
                        out.append(f"take {o} from {rec.name}")
                    if th.kind == LAMP_KIND:
                        out.append(f"use {o}")
                    out.append(f"examine {o}")
                if held is not None:
                    out.append(f"put {held} {rec.prep} {rec.name}")
            if held is not None:
                for verb, kind in APPLIANCE.items():
                    if rec.kind == kind and verb in self.things[held].props:
                        out.append(f"{verb} {held} with {rec.name}")
            out.append(f"examine {rec.name}")
        if held is not None:
            out.append(f"examine {held}")
        out += ["inventory", "look"]
        return out


def generate(seed: int, difficulty: int) -> World:
    """The world of ``(seed, difficulty)``: the house of :func:`generate_house` (deterministic, always solvable).

    Raises:
        ValueError: ``difficulty`` outside 1-5.
    """
    return World(*generate_house(seed, difficulty))


__all__ = [
    "ALFWORLD_FAMILY_NAMES", "COMMAND_HELP", "DIFFICULTIES", "FAMILIES", "OBJECT_KINDS", "PREP_IN", "ROOM_LAYOUTS",
    "MultipleCommands", "Receptacle", "Task", "Thing", "World", "entity", "generate", "interpret",
]
