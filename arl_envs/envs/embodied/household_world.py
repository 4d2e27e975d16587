"""The procedurally generated household of ``arl/embodied.household-v0`` (world, rules, generator, planner).

In the spirit of ALFWorld (Shridhar et al., 2021, "ALFWorld: Aligning Text and Embodied Environments for
Interactive Learning", alfworld/alfworld), whose TextWorld game files need a download we cannot do: a house of
rooms, numbered receptacles (some openable), numbered objects with properties, and ALFWorld's six task families
(``pick_and_place``, ``pick_two``, ``look_at_obj_in_light``, ``pick_clean_then_place``, ``pick_heat_then_place``,
``pick_cool_then_place``). Names, command templates and observation phrasing follow ALFWorld's text
(``You arrive at countertop 1. On the countertop 1, you see a mug 1.``).

Everything here is plain Python over small dicts and lists (no numpy) so one step costs microseconds. The only
randomness is a :class:`random.Random` seeded once per world, so a world id reproduces the world exactly.
"""

from __future__ import annotations

import math
import random
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from arl_envs.core.errors import TaskLoadError

# ----------------------------------------------------------------------------------------------- static tables
#: Receptacle kinds per room kind: (kind, min count, max count); the difficulty moves counts toward the max.
ROOM_LAYOUTS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "kitchen": (
        ("cabinet", 2, 6), ("countertop", 1, 3), ("drawer", 1, 4), ("fridge", 1, 1), ("microwave", 1, 1),
        ("sinkbasin", 1, 1), ("stoveburner", 1, 3), ("diningtable", 0, 1), ("garbagecan", 1, 1), ("shelf", 0, 2),
        ("coffeemachine", 0, 1), ("toaster", 0, 1),
    ),
    "living room": (
        ("sofa", 1, 1), ("armchair", 0, 2), ("coffeetable", 1, 1), ("sidetable", 1, 2), ("tvstand", 1, 1),
        ("shelf", 1, 3), ("drawer", 0, 3), ("cabinet", 0, 2), ("garbagecan", 0, 1),
    ),
    "bedroom": (
        ("bed", 1, 1), ("desk", 0, 1), ("sidetable", 1, 2), ("dresser", 1, 1), ("drawer", 2, 5), ("shelf", 1, 3),
        ("safe", 0, 1), ("laundryhamper", 0, 1), ("garbagecan", 0, 1),
    ),
    "bathroom": (
        ("sinkbasin", 1, 2), ("bathtubbasin", 0, 1), ("toilet", 1, 1), ("countertop", 1, 1), ("cabinet", 1, 4),
        ("drawer", 0, 3), ("towelholder", 0, 1), ("garbagecan", 1, 1), ("shelf", 0, 1),
    ),
    "office": (
        ("desk", 1, 2), ("drawer", 2, 4), ("shelf", 1, 3), ("sidetable", 0, 1), ("safe", 0, 1), ("armchair", 0, 1),
        ("garbagecan", 0, 1),
    ),
}
ROOM_KINDS = tuple(ROOM_LAYOUTS)
#: Receptacles that open and close (closed at the start; a closed one hides its contents).
OPENABLE = frozenset({"cabinet", "drawer", "fridge", "microwave", "safe", "laundryhamper"})
#: Receptacles things go IN (the rest: ON); ``put`` accepts both words for every receptacle.
PREP_IN = frozenset({"cabinet", "drawer", "fridge", "microwave", "safe", "laundryhamper", "sinkbasin",
                     "bathtubbasin", "garbagecan", "toaster"})
#: The appliance of each transformation (``clean X with sinkbasin 1`` ...).
APPLIANCE = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
#: Where a desk lamp can stand, and the rooms that have one.
LAMP_HOLDERS = ("desk", "sidetable", "dresser")
LAMP_KIND = "desklamp"


@dataclass(frozen=True)
class ObjectKind:
    """A kind of portable object: where it can be found and which transformations it accepts."""

    name: str
    places: tuple[str, ...]
    props: frozenset[str] = frozenset()
    plural: str = ""


def _k(name: str, places: str, props: str = "", plural: str = "") -> ObjectKind:
    return ObjectKind(name, tuple(places.split()), frozenset(props.split()), plural or name + "s")


_KITCHEN_FOOD = "countertop fridge diningtable garbagecan"
_DISHES = "countertop cabinet shelf diningtable fridge sinkbasin microwave"
_CUTLERY = "countertop drawer diningtable sinkbasin"
_SMALL = "desk drawer shelf sidetable dresser safe coffeetable"
OBJECT_KINDS: dict[str, ObjectKind] = {k.name: k for k in (
    _k("apple", _KITCHEN_FOOD + " microwave", "clean heat cool"),
    _k("tomato", _KITCHEN_FOOD, "clean heat cool", "tomatoes"),
    _k("potato", _KITCHEN_FOOD + " cabinet", "clean heat cool", "potatoes"),
    _k("egg", _KITCHEN_FOOD, "heat cool"),
    _k("lettuce", _KITCHEN_FOOD, "clean cool", "lettuces"),
    _k("bread", "countertop diningtable cabinet fridge", "heat cool", "breads"),
    _k("mug", _DISHES + " coffeemachine desk", "clean heat cool"),
    _k("cup", _DISHES, "clean heat cool"),
    _k("bowl", _DISHES, "clean heat cool"),
    _k("plate", _DISHES, "clean heat cool"),
    _k("pan", "countertop stoveburner cabinet diningtable", "clean cool"),
    _k("pot", "countertop stoveburner cabinet diningtable shelf", "clean cool"),
    _k("knife", _CUTLERY, "clean", "knives"),
    _k("fork", _CUTLERY, "clean"),
    _k("spoon", _CUTLERY, "clean"),
    _k("spatula", _CUTLERY, "clean"),
    _k("soapbar", "countertop cabinet toilet bathtubbasin sinkbasin shelf", "clean"),
    _k("cloth", "countertop cabinet bathtubbasin sinkbasin drawer shelf towelholder", "clean"),
    _k("toiletpaper", "toilet cabinet shelf countertop drawer", "", "toiletpapers"),
    _k("spraybottle", "toilet cabinet countertop shelf"),
    _k("candle", "toilet cabinet countertop shelf sidetable bathtubbasin"),
    _k("book", "desk shelf bed sidetable drawer coffeetable sofa armchair diningtable dresser"),
    _k("cd", _SMALL + " garbagecan"),
    _k("pen", _SMALL + " diningtable"),
    _k("pencil", _SMALL + " diningtable"),
    _k("keychain", _SMALL + " sofa armchair"),
    _k("creditcard", _SMALL + " sofa armchair countertop diningtable"),
    _k("cellphone", "desk drawer bed sidetable dresser shelf sofa armchair coffeetable"),
    _k("remotecontrol", "sofa armchair coffeetable sidetable tvstand dresser drawer"),
    _k("pillow", "bed sofa armchair"),
    _k("alarmclock", "desk sidetable dresser shelf"),
    _k("watch", _SMALL),
    _k("vase", "shelf sidetable coffeetable dresser diningtable tvstand cabinet"),
    _k("statue", "shelf sidetable coffeetable dresser diningtable desk tvstand"),
    _k("laptop", "desk bed sofa armchair coffeetable dresser diningtable"),
    _k("towel", "towelholder bathtubbasin countertop cabinet laundryhamper", "clean"),
)}
#: Descriptive properties shown by ``examine`` (colour, material), drawn per object.
COLOURS = ("red", "blue", "green", "white", "black", "yellow", "grey", "brown")
MATERIALS = ("ceramic", "plastic", "metal", "wooden", "glass", "paper", "fabric")

FAMILIES = ("put", "two", "examine", "clean", "heat", "cool")
#: ALFWorld's names of the six task families.
ALFWORLD_FAMILY_NAMES = {
    "put": "pick_and_place_simple", "two": "pick_two_obj_and_place", "examine": "look_at_obj_in_light",
    "clean": "pick_clean_then_place_in_recep", "heat": "pick_heat_then_place_in_recep",
    "cool": "pick_cool_then_place_in_recep",
}


@dataclass(frozen=True)
class Difficulty:
    """What one difficulty level controls: rooms, distractor objects, spare target objects, and the family mix."""

    rooms: int
    distractors: tuple[int, int]
    families: tuple[str, ...]
    spare_target_p: float


DIFFICULTIES: dict[int, Difficulty] = {
    1: Difficulty(1, (2, 4), ("put", "examine"), 0.0),
    2: Difficulty(1, (4, 7), ("put", "examine", "clean", "heat", "cool"), 0.1),
    3: Difficulty(2, (6, 10), FAMILIES, 0.2),
    4: Difficulty(3, (9, 14), FAMILIES, 0.3),
    5: Difficulty(4, (12, 20), ("put", "two", "two", "examine", "clean", "heat", "cool"), 0.4),
}


# ----------------------------------------------------------------------------------------------- world state
@dataclass(slots=True)
class Receptacle:
    """A numbered place objects can be in or on (``drawer 1``)."""

    name: str
    kind: str
    room: str
    openable: bool
    is_open: bool
    contents: list[str] = field(default_factory=list)

    @property
    def prep(self) -> str:
        return "in" if self.kind in PREP_IN else "on"

    @property
    def accessible(self) -> bool:
        return self.is_open or not self.openable


@dataclass(slots=True)
class Thing:
    """A numbered object (``mug 1``) or lamp (``desklamp 1``, not portable)."""

    name: str
    kind: str
    location: str | None  # receptacle name; None while held
    look_seed: int = 0  # the world's seed: colour and material derive from it and the name (stable across runs)
    portable: bool = True
    clean: bool = False
    hot: bool = False
    cold: bool = False
    is_on: bool = False

    @property
    def props(self) -> frozenset[str]:
        k = OBJECT_KINDS.get(self.kind)
        return k.props if k else frozenset()

    @property
    def colour(self) -> str:
        return COLOURS[zlib.crc32(f"{self.look_seed}:{self.name}:c".encode()) % len(COLOURS)]

    @property
    def material(self) -> str:
        return MATERIALS[zlib.crc32(f"{self.look_seed}:{self.name}:m".encode()) % len(MATERIALS)]


@dataclass(frozen=True)
class Task:
    """The goal: ``family`` on objects of ``obj_kind`` (``need`` of them) into a ``target_kind`` receptacle."""

    family: str
    obj_kind: str
    target_kind: str | None
    need: int
    text: str


def article(name: str) -> str:
    return ("an " if name[0] in "aeiou" else "a ") + name


def join_names(names: list[str]) -> str:
    """ALFWorld's listing: ``a mug 1, a apple 2, and a pen 1``."""
    items = [article(n) for n in names]
    if len(items) <= 1:
        return items[0] if items else "nothing"
    return ", ".join(items[:-1]) + ", and " + items[-1]


class World:
    """One household episode's true state, its rules and its planner.

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

    # --------------------------------------------------------------------------------------------- planner
    def _order(self, rec_names: list[str]) -> list[str]:
        """Receptacles sorted: current room first, then seen ones, then by name order in the house."""
        if self._rec_index is None:
            self._rec_index = {n: i for i, n in enumerate(self.receptacles)}
        index = self._rec_index
        return sorted(rec_names, key=lambda n: (self.receptacles[n].room != self.room, n not in self.seen, index[n]))

    def _toward(self, rec_name: str) -> str | None:
        """The next command to get to ``rec_name`` (None when already there)."""
        if self.at == rec_name:
            return None
        if rec_name in self.seen:
            return f"go to {rec_name}"
        return f"go to {self.receptacles[rec_name].room}"

    def _fetch(self, obj: str) -> str:
        loc = self.things[obj].location
        assert loc is not None
        step = self._toward(loc)
        if step:
            return step
        rec = self.receptacles[loc]
        if not rec.accessible:
            return f"open {loc}"
        return f"take {obj} from {loc}"

    def _deliver(self, rec_name: str, action: str) -> str:
        step = self._toward(rec_name)
        if step:
            return step
        if not self.receptacles[rec_name].accessible:
            return f"open {rec_name}"
        return action

    def expert(self) -> str:
        """The planner's next command over the TRUE state (it knows where everything is).

        Plan: drop anything useless in hand; fetch a target object (go to its room if its receptacle is unseen,
        go to the receptacle, open it, take); transform it at the nearest appliance; deliver it to the nearest
        target receptacle (open it first) or, for ``examine``, carry it to the lamp and switch the lamp on.
        """
        t = self.task
        held = self.holding
        if held is not None and self.things[held].kind != t.obj_kind:
            return self._drop_here()
        if t.family == "examine":
            if held is None:
                return self._fetch(self._nearest_target())
            lamp = next(n for n in self.things if self.things[n].kind == LAMP_KIND)
            lamp_at = self.things[lamp].location
            assert lamp_at is not None
            return self._toward(lamp_at) or f"use {lamp}"
        if held is None:
            return self._fetch(self._nearest_target())
        thing = self.things[held]
        if t.family in APPLIANCE and not self.satisfies(thing):
            app = self._order(self.by_kind[APPLIANCE[t.family]])[0]
            return self._toward(app) or f"{t.family} {held} with {app}"
        target = self._order(self.by_kind[t.target_kind or ""])[0]
        rec = self.receptacles[target]
        return self._deliver(target, f"put {held} {rec.prep} {target}")

    def _nearest_target(self) -> str:
        placed = set(self.placed()) if self.task.family != "examine" else set()
        cands = [n for n, th in self.things.items() if th.kind == self.task.obj_kind and n not in placed
                 and th.location is not None]
        locs = self._order(list({self.things[n].location: None for n in cands}))
        first = locs[0]
        return next(n for n in cands if self.things[n].location == first)

    def _drop_here(self) -> str:
        held = self.holding
        assert held is not None
        if self.at is not None:
            rec = self.receptacles[self.at]
            if rec.kind != self.task.target_kind:
                if not rec.accessible:
                    return f"open {rec.name}"
                return f"put {held} {rec.prep} {rec.name}"
        # go to a receptacle of this room that is not a target receptacle (prefer one without a door)
        options = [n for n in self.room_recs[self.room] if self.receptacles[n].kind != self.task.target_kind]
        options.sort(key=lambda n: self.receptacles[n].openable)
        return f"go to {options[0]}"


# ----------------------------------------------------------------------------------------------- generator
def _family_text(family: str, obj: ObjectKind, target: str | None) -> str:
    prep = "in" if target in PREP_IN else "on"
    if family == "put":
        return f"put {article(obj.name)} {prep} {target}."
    if family == "two":
        return f"find two {obj.plural} and put them {prep} {target}."
    if family == "examine":
        return f"examine the {obj.name} under the {LAMP_KIND}."
    return f"{family} some {obj.name} and put it {prep} {target}."


def generate(seed: int, difficulty: int) -> World:
    """Build the world of ``(seed, difficulty)``: deterministic, and always solvable.

    Steps: pick a family from the difficulty's mix; pick the rooms (one that can host the family: a kitchen for
    heat/cool, a kitchen or bathroom for clean, a bedroom/living room/office with a desk lamp for examine), then
    ``rooms - 1`` others; lay out receptacles per room; pick an object kind that accepts the family and a target
    receptacle kind present in the house; place the target objects anywhere but a target receptacle, then
    distractors.

    Raises:
        ValueError: ``difficulty`` outside 1-5.
    """
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be in 1-5, got {difficulty}")
    cfg = DIFFICULTIES[difficulty]
    rng = random.Random(seed)
    for _ in range(1000):
        world = _try_generate(rng, cfg, difficulty, seed)
        if world is not None:
            return world
    raise TaskLoadError(f"could not generate a household for seed {seed}")  # pragma: no cover - never seen


def _pick(rng: random.Random, seq: Any) -> Any:
    """``seq[floor(u * len)]`` for one uniform draw: ~3x cheaper than ``random.choice`` (no rejection loop)."""
    return seq[int(rng.random() * len(seq))]


#: Per (room kind, difficulty): (receptacle kind, min count, number of possible counts, openable); the count is
#: drawn uniformly from ``min .. min + ceil((max - min) * difficulty / 5)``.
_LAYOUT_SPREAD = {
    (room, d): tuple((kind, lo, math.ceil((hi - lo) * d / 5) + 1, kind in OPENABLE) for kind, lo, hi in layout)
    for room, layout in ROOM_LAYOUTS.items() for d in range(1, 6)
}
#: Object kinds that accept each family (a transformation family needs the property).
_FAMILY_KINDS = {f: tuple(k for k in OBJECT_KINDS.values() if f not in APPLIANCE or f in k.props) for f in FAMILIES}
_ALL_KINDS = tuple(OBJECT_KINDS.values())
_PLACE_SETS = {k.name: frozenset(k.places) for k in _ALL_KINDS}
#: Draws of the rejection sampler that places a distractor before it falls back to listing the allowed places.
_REJECTION_TRIES = 12
_FAMILY_ROOMS = {"heat": ("kitchen",), "cool": ("kitchen",), "clean": ("kitchen", "bathroom"),
                 "examine": ("bedroom", "living room", "office"), "put": ROOM_KINDS, "two": ROOM_KINDS}


def _try_generate(rng: random.Random, cfg: Difficulty, difficulty: int, look_seed: int) -> World | None:
    family = _pick(rng, cfg.families)
    main = _pick(rng, _FAMILY_ROOMS[family])
    others = [r for r in ROOM_KINDS if r != main]
    rooms = [main] + rng.sample(others, cfg.rooms - 1)
    rng.shuffle(rooms)
    # receptacles, numbered per kind across the house
    counters: dict[str, int] = {}
    recs: dict[str, Receptacle] = {}
    room_recs: dict[str, list[str]] = {}
    by_kind: dict[str, list[str]] = {}
    for room in rooms:
        here = room_recs[room] = []
        for kind, lo, spread, openable in _LAYOUT_SPREAD[(room, difficulty)]:
            for _ in range(lo + int(rng.random() * spread)):
                n = counters[kind] = counters.get(kind, 0) + 1
                name = f"{kind} {n}"
                recs[name] = Receptacle(name, kind, room, openable, False)
                here.append(name)
                if n == 1:
                    by_kind[kind] = [name]
                else:
                    by_kind[kind].append(name)
    things: dict[str, Thing] = {}
    obj_counters: dict[str, int] = {}

    def add_thing(kind: str, rec_name: str, portable: bool = True) -> str:
        obj_counters[kind] = obj_counters.get(kind, 0) + 1
        name = f"{kind} {obj_counters[kind]}"
        things[name] = Thing(name, kind, rec_name, look_seed, portable)
        recs[rec_name].contents.append(name)
        return name

    # desk lamps: one in the main room for examine, and sometimes in other lamp rooms as distractors? no:
    # exactly one lamp in the house keeps "under the desklamp" unambiguous.
    if family == "examine":
        holders = [n for n, r in recs.items() if r.room == main and r.kind in LAMP_HOLDERS]
        if not holders:
            return None
        add_thing(LAMP_KIND, _pick(rng, holders), portable=False)
    present = set(by_kind)
    kinds = [k for k in _FAMILY_KINDS[family] if not present.isdisjoint(k.places)]
    if not kinds:
        return None
    obj = _pick(rng, kinds)
    target: str | None = None
    if family != "examine":
        avoid = APPLIANCE.get(family)
        targets = sorted((present & set(obj.places)) - {avoid})
        if not targets:
            return None
        target = _pick(rng, targets)
    sources = [n for kind in obj.places if kind != target for n in by_kind.get(kind, ())]
    if not sources:
        return None
    need = 2 if family == "two" else 1
    n_obj = need + (1 if rng.random() < cfg.spare_target_p else 0)
    for _ in range(n_obj):
        add_thing(obj.name, _pick(rng, sources))
    lo, hi = cfg.distractors
    all_recs = list(recs.values())
    for _ in range(lo + int(rng.random() * (hi - lo + 1))):
        kind = _pick(rng, _ALL_KINDS)
        if kind.name == obj.name:
            continue
        # a uniformly random receptacle that can hold this kind: rejection sampling (a few draws), else the list
        allowed = _PLACE_SETS[kind.name]
        for _try in range(_REJECTION_TRIES):
            rec = _pick(rng, all_recs)
            if rec.kind in allowed:
                add_thing(kind.name, rec.name)
                break
        else:
            places = [n for k in kind.places for n in by_kind.get(k, ())]
            if places:
                add_thing(kind.name, _pick(rng, places))
    task = Task(family, obj.name, target, need, _family_text(family, obj, target))
    start = _pick(rng, rooms)
    return World(rooms, recs, things, task, start, room_recs, by_kind)


# ----------------------------------------------------------------------------------------------- grammar
_NUMBERED = re.compile(r"^([a-z]+?) ?(\d+)$")
_ARTICLES = ("the ", "a ", "an ", "some ")
#: Words that are never a name: a capture holding only one of them is a verb's particle, the name is missing.
_NOT_A_NAME = frozenset(("to", "up", "at", "on", "off", "in", "into", "from", "with", "the", "a", "an", "some"))
_SEPARATORS = re.compile(r"\s+(?:and then|then|and|after that|afterwards)\s+|\s*(?:;|&&|,)\s*|\.\s+")
VERB_WORDS = ("go", "goto", "walk", "move", "navigate", "head", "travel", "enter", "open", "close", "shut", "take",
              "pick", "pickup", "get", "grab", "put", "place", "drop", "insert", "set", "use", "turn", "switch",
              "toggle", "clean", "wash", "rinse", "heat", "warm", "cook", "cool", "chill", "freeze", "examine",
              "inspect", "look", "check", "read", "x", "inventory", "inv", "i", "l", "help")

_GRAMMAR: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("inventory", re.compile(r"^(?:inventory|inv|i|check inventory|show inventory)$")),
    ("look", re.compile(r"^(?:look|look around|l)$")),
    ("help", re.compile(r"^(?:help|\?)$")),
    ("go", re.compile(r"^(?:go to|goto|go|walk to|move to|navigate to|head to|travel to|enter)\s+(.+)$")),
    ("open", re.compile(r"^open\s+(.+)$")),
    ("close", re.compile(r"^(?:close|shut)\s+(.+)$")),
    ("take", re.compile(r"^(?:take|pick up|pickup|pick|get|grab)\s+(.+?)(?:\s+(?:from|off of|off|out of)\s+(.+))?$")),
    ("put", re.compile(r"^(?:put|place|move|drop|insert|set)\s+(.+?)\s+(?:in/on|in / on|into|onto|inside|in|on|to)\s+(.+)$")),
    ("use", re.compile(r"^(?:use|turn on|switch on|toggle|turn off|switch off)\s+(.+)$")),
    ("transform", re.compile(r"^(clean|wash|rinse|heat|warm|cook|cool|chill|freeze)\s+(.+?)\s+(?:with|in|using|at|on)\s+(.+)$")),
    ("examine", re.compile(r"^(?:examine|inspect|look at|check|read|x)\s+(.+)$")),
)
#: The grammar entries a command can match, by its first word (the same entries, in the same order, as a scan of
#: the whole grammar would try; a first word not listed falls back to the whole grammar).
_FIRST_WORDS = {
    "inventory": ("inventory", "inv", "i", "check", "show"), "look": ("look", "l"), "help": ("help", "?"),
    "go": ("go", "goto", "walk", "move", "navigate", "head", "travel", "enter"), "open": ("open",),
    "close": ("close", "shut"), "take": ("take", "pick", "pickup", "get", "grab"),
    "put": ("put", "place", "move", "drop", "insert", "set"), "use": ("use", "turn", "switch", "toggle"),
    "transform": ("clean", "wash", "rinse", "heat", "warm", "cook", "cool", "chill", "freeze"),
    "examine": ("examine", "inspect", "look", "check", "read", "x"),
}
_BY_FIRST_WORD: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {}
for _verb, _pattern in _GRAMMAR:
    for _word in _FIRST_WORDS[_verb]:
        _BY_FIRST_WORD[_word] = _BY_FIRST_WORD.get(_word, ()) + ((_verb, _pattern),)
_TRANSFORM_VERBS = {"clean": "clean", "wash": "clean", "rinse": "clean", "heat": "heat", "warm": "heat",
                    "cook": "heat", "cool": "cool", "chill": "cool", "freeze": "cool"}

COMMAND_HELP = (
    "Commands (one per turn): go to <receptacle or room>, open <receptacle>, close <receptacle>, "
    "take <object> from <receptacle>, put <object> in/on <receptacle>, use <lamp>, clean <object> with <receptacle>, "
    "heat <object> with <receptacle>, cool <object> with <receptacle>, examine <something>, inventory, look. "
    "Names are numbered as you see them, e.g. 'go to drawer 1', 'take mug 2 from countertop 1'."
)


def entity(text: str) -> str:
    """A name as the world spells it: articles dropped, ``mug1`` -> ``mug 1``, ``livingroom`` -> ``living room``."""
    text = text.strip()
    changed = True
    while changed:
        changed = False
        for a in _ARTICLES:
            if text.startswith(a):
                text, changed = text[len(a):].strip(), True
    m = _NUMBERED.match(text)
    if m:
        return f"{m.group(1)} {m.group(2)}"
    return "living room" if text == "livingroom" else text


class MultipleCommands(ValueError):
    """Raised by :func:`interpret` when one reply holds several commands."""


def interpret(command: str) -> tuple[str, tuple[str, ...]] | None:
    """Match a normalised command against the grammar.

    Returns:
        ``(verb, args)`` with canonical verbs ``go open close take put use clean heat cool examine inventory look
        help``, or None when nothing matches.

    Raises:
        MultipleCommands: The reply chains commands (``open door then go north``); nothing is executed.
    """
    parts = [p for p in _SEPARATORS.split(command) if p]
    if len(parts) > 1 and sum(p.split(" ", 1)[0] in VERB_WORDS for p in parts) >= 2:
        raise MultipleCommands(parts)
    for verb, pattern in _BY_FIRST_WORD.get(command.split(" ", 1)[0], _GRAMMAR):
        m = pattern.match(command)
        if m is None or any(g in _NOT_A_NAME for g in m.groups()):
            continue  # no match, or a command cut short: 'go to' read as go <'to'>, 'pick up' as pick <'up'>
        if verb == "transform":
            return _TRANSFORM_VERBS[m.group(1)], (entity(m.group(2)), entity(m.group(3)))
        if verb == "take":
            return "take", (entity(m.group(1)), entity(m.group(2)) if m.group(2) else "")
        return verb, tuple(entity(g) for g in m.groups())
    return None


__all__ = [
    "ALFWORLD_FAMILY_NAMES", "COMMAND_HELP", "DIFFICULTIES", "FAMILIES", "OBJECT_KINDS", "ROOM_LAYOUTS",
    "MultipleCommands", "Receptacle", "Task", "Thing", "World", "entity", "generate", "interpret",
]
