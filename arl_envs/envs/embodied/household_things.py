"""What a household of ``arl/embodied.household-v0`` is made of: static tables and the state records.

Tables: room layouts (receptacle kinds per room), openable receptacles, object kinds with where they are found
and which transformations they accept, the six task families (ALFWorld's, Shridhar et al., 2021) and what each
difficulty controls. Records: :class:`Receptacle`, :class:`Thing`, :class:`Task`, and ALFWorld's way of
listing names (:func:`join_names`). Plain Python over small dicts and lists (no numpy).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

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
