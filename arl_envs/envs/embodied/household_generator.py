"""The house generator of ``arl/embodied.household-v0``: rooms, receptacles, and where objects are placed.

:func:`generate_house` picks a task family, the rooms, the receptacles per room, the target objects and the
distractors from one :class:`random.Random` seeded with the world seed, so a world id reproduces the house
exactly; :func:`arl_envs.envs.embodied.household_world.generate` makes it a :class:`World`.
"""

from __future__ import annotations

import math
import random
from typing import Any, NamedTuple

from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.embodied.household_things import (
    APPLIANCE,
    DIFFICULTIES,
    FAMILIES,
    LAMP_HOLDERS,
    LAMP_KIND,
    OBJECT_KINDS,
    OPENABLE,
    PREP_IN,
    ROOM_KINDS,
    ROOM_LAYOUTS,
    Difficulty,
    ObjectKind,
    Receptacle,
    Task,
    Thing,
    article,
)


class House(NamedTuple):
    """A generated house: what :class:`~arl_envs.envs.embodied.household_world.World` is built from (its
    constructor's arguments, in order)."""

    rooms: list[str]
    receptacles: dict[str, Receptacle]
    things: dict[str, Thing]
    task: Task
    start_room: str
    room_recs: dict[str, list[str]]
    by_kind: dict[str, list[str]]


def _family_text(family: str, obj: ObjectKind, target: str | None) -> str:
    prep = "in" if target in PREP_IN else "on"
    if family == "put":
        return f"put {article(obj.name)} {prep} {target}."
    if family == "two":
        return f"find two {obj.plural} and put them {prep} {target}."
    if family == "examine":
        return f"examine the {obj.name} under the {LAMP_KIND}."
    return f"{family} some {obj.name} and put it {prep} {target}."


def generate_house(seed: int, difficulty: int) -> House:
    """Lay out the house of ``(seed, difficulty)``: deterministic, and always solvable.

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
        house = _try_generate(rng, cfg, difficulty, seed)
        if house is not None:
            return house
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


def _try_generate(rng: random.Random, cfg: Difficulty, difficulty: int, look_seed: int) -> House | None:
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
    return House(rooms, recs, things, task, start, room_recs, by_kind)
