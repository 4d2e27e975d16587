"""The household expert: a planner over the TRUE state of a :class:`~arl_envs.envs.embodied.household_world.World`.

:class:`Planner` is a base class of ``World``: its methods read the world's state (receptacles, things, where
the agent is, what it has seen, the task) and its goal checks (``satisfies``, ``placed``); they change nothing.
"""

from __future__ import annotations

from arl_envs.envs.embodied.household_things import APPLIANCE, LAMP_KIND, Receptacle, Task, Thing


class Planner:
    """The expert's next command (:meth:`expert`) for the world it is a base class of."""

    receptacles: dict[str, Receptacle]
    things: dict[str, Thing]
    task: Task
    room: str
    at: str | None
    holding: str | None
    seen: set[str]
    room_recs: dict[str, list[str]]
    by_kind: dict[str, list[str]]
    _rec_index: dict[str, int] | None

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
