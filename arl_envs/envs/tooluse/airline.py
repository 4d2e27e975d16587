"""The airline domain: users with memberships and payment methods, reservations, flights with seats and prices,
baggage; 11 tools; 66 task templates.

Templates are the rows of :data:`RES_INTENTS` crossed with how the user names the reservation (:data:`REFS`: its
id, its route, its date) and the rows of :data:`BOOK_INTENTS` crossed with how the user pays (:data:`PAYS`).
"""

from __future__ import annotations

import datetime
import random
from typing import Any, Callable

from pydantic import BaseModel, Field

from arl_envs.core.tools import Tool
from arl_envs.envs.tooluse.domain import Domain, Fact, TaskSpec, ToolError, Write, pick

AIRPORTS = ("JFK", "LAX", "SFO", "ORD", "SEA", "BOS")
#: The simulated world's clock (the policy tells the agent the time): flights fly on the 7 days after it.
_NOW = datetime.datetime(2024, 5, 15, 8, 0)
NOW = _NOW.strftime("%Y-%m-%d %H:%M")
DATES = tuple((_NOW.date() + datetime.timedelta(days=d)).isoformat() for d in range(1, 8))


def _ago(hours: int) -> str:
    """The world time ``hours`` before NOW, as ``YYYY-MM-DD HH:MM``."""
    return (_NOW - datetime.timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M")

CABINS = ("basic_economy", "economy", "business")
#: Free checked bags per passenger: membership -> cabin -> bags.
FREE_BAGS = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
             "silver": {"basic_economy": 1, "economy": 2, "business": 3},
             "gold": {"basic_economy": 2, "economy": 3, "business": 3}}
BAG_PRICE, INSURANCE_PRICE = 50, 30
FIRST = ("Ava", "Liam", "Mia", "Noah", "Zoe", "Omar", "Yuki", "Sofia", "Ivan", "Lena", "Raj", "Emma")
LAST = ("Garcia", "Kim", "Novak", "Smith", "Rossi", "Khan", "Silva", "Muller", "Lopez", "Chen")
#: Reservation intents (crossed with REFS): name -> (kind, which of the user's reservations it is about).
RES_INTENTS = {
    "cancel_recent": ("write", "recent"), "cancel_business": ("write", "business"),
    "cancel_insured": ("write", "insured"), "upgrade_cabin": ("write", "old"), "change_date": ("write", "old"),
    "add_bags_1": ("write", "old"), "add_bags_2": ("write", "old"), "rename_passenger": ("write", "old"),
    "upgrade_and_bags": ("write", "old"), "basic_to_economy": ("write", "basic"),
    "lookup_total": ("lookup", "old"), "lookup_status": ("lookup", "insured"),
    "lookup_allowance": ("lookup", "business"), "trap_cancel_basic": ("refuse", "basic"),
    "trap_change_basic_date": ("refuse", "basic"), "trap_remove_bags": ("refuse", "old"),
    "trap_other_user": ("refuse", "old"), "trap_compensation": ("transfer", "old"),
}
#: A user's reservations, in the order of ``user["reservations"]`` in a fresh database.
SLOTS = ("old", "basic", "recent", "business", "insured")
BOOK_INTENTS = ("book_1", "book_2", "book_bags", "book_insured")
REFS = ("id", "route", "date")
PAYS = ("credit_card", "gift_card", "certificate")

POLICY = f"""You are a customer-service agent of an airline. The time now is {NOW} EST. Policy:
- Authenticate the user first with authenticate_user (user id and date of birth). Act only on that user's
  reservations and payment methods.
- Before any action that changes the database (book, cancel, change flights or cabin, bags, passengers), list the
  action's details (reservation id, flight number, date, cabin, passengers, bags, payment id) and get an explicit
  yes from the user: ask them to confirm (yes/no). A write without authentication or confirmation ends the
  conversation.
- A reservation may be cancelled only if it was booked within the last 24 hours, or its cabin is business, or it
  has travel insurance. Refunds go to the original payment methods.
- Basic economy flights cannot be changed (their cabin can be upgraded). A change keeps origin and destination.
- Checked bags can be added, never removed. Free bags per passenger (regular/silver/gold member): basic economy
  0/1/2, economy 1/2/3, business 2/3/3; each extra bag costs ${BAG_PRICE}. Insurance costs ${INSURANCE_PRICE} per
  passenger. Gift cards and certificates must cover what they pay.
- Refuse requests the policy forbids and say that you cannot do them. Transfer to a human agent
  (transfer_to_human) only when the user asks for something outside your tools, such as compensation.
- Talk to the user with respond; one tool call per turn."""


class AuthArgs(BaseModel):
    user_id: str = Field(description="User id, e.g. 'ava_kim_1234'.")
    date_of_birth: str = Field(description="YYYY-MM-DD.", pattern=r"^\d{4}-\d{2}-\d{2}$")


class UserArgs(BaseModel):
    user_id: str = Field(description="User id.")


class ResArgs(BaseModel):
    reservation_id: str = Field(description="Reservation id, 6 characters.", pattern=r"^[A-Z0-9]{6}$")


class SearchArgs(BaseModel):
    origin: str = Field(pattern=r"^[A-Z]{3}$", description="IATA code.")
    destination: str = Field(pattern=r"^[A-Z]{3}$", description="IATA code.")
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class FlightDateArgs(BaseModel):
    flight_number: str = Field(description="e.g. 'HAT123'.")
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class NoArgs(BaseModel):
    pass


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class BookArgs(UserArgs, FlightDateArgs):
    cabin: str = Field(description="basic_economy, economy or business.")
    passengers: list[Passenger] = Field(min_length=1, max_length=5)
    payment_id: str
    total_baggages: int = Field(ge=0, le=20)
    insurance: bool


class UpdateFlightArgs(ResArgs, FlightDateArgs):
    cabin: str = Field(description="basic_economy, economy or business.")
    payment_id: str = Field(description="Pays (or receives) the price difference.")


class BagArgs(ResArgs):
    total_baggages: int = Field(ge=0, le=20)
    payment_id: str


class PassengerArgs(ResArgs):
    passengers: list[Passenger] = Field(min_length=1, max_length=5)


def _res(db: dict[str, Any], rid: str) -> dict[str, Any]:
    if rid not in db["reservations"]:
        raise ToolError(f"reservation {rid!r} not found")
    r = db["reservations"][rid]
    if r["status"] != "active":
        raise ToolError(f"reservation {rid} is {r['status']}")
    return r


def _seat(db: dict[str, Any], fn: str, date: str, cabin: str, n: int) -> dict[str, Any]:
    if cabin not in CABINS:
        raise ToolError(f"cabin must be one of {CABINS}")
    day = db["flights"].get(fn, {}).get("dates", {}).get(date)
    if day is None:
        raise ToolError(f"flight {fn} does not fly on {date}")
    if day["seats"][cabin] < n:
        raise ToolError(f"flight {fn} on {date} has no {n} {cabin} seat(s) for sale")
    return day


def _pay(db: dict[str, Any], user_id: str, pid: str, amount: float) -> None:
    methods = db["users"][user_id]["payment_methods"]
    if pid not in methods:
        raise ToolError(f"payment method {pid!r} is not one of the user's")
    pm = methods[pid]
    if "balance" in pm:
        if pm["balance"] < amount:
            raise ToolError(f"{pid} has {pm['balance']:.2f}, not {amount:.2f}")
        pm["balance"] = round(pm["balance"] - amount, 2)


def _nonfree(db: dict[str, Any], r: dict[str, Any], total: int, cabin: str) -> int:
    free = FREE_BAGS[db["users"][r["user_id"]]["membership"]][cabin] * len(r["passengers"])
    return max(0, total - free)


def authenticate_user(db: dict[str, Any], a: dict[str, Any]) -> str:
    u = db["users"].get(a["user_id"])
    if u is None or u["dob"] != a["date_of_birth"]:
        raise ToolError("no user with this id and date of birth")
    return f"authenticated: {a['user_id']}"


def get_user_details(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    if a["user_id"] not in db["users"]:
        raise ToolError(f"user {a['user_id']!r} not found")
    return db["users"][a["user_id"]]


def get_reservation_details(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    if a["reservation_id"] not in db["reservations"]:
        raise ToolError(f"reservation {a['reservation_id']!r} not found")
    return db["reservations"][a["reservation_id"]]


def search_direct_flight(db: dict[str, Any], a: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"flight_number": fn, "departure_time": f["departure_time"], **f["dates"][a["date"]]}
            for fn, f in sorted(db["flights"].items())
            if (f["origin"], f["destination"]) == (a["origin"], a["destination"]) and a["date"] in f["dates"]]


def get_flight_status(db: dict[str, Any], a: dict[str, Any]) -> str:
    day = db["flights"].get(a["flight_number"], {}).get("dates", {}).get(a["date"])
    if day is None:
        raise ToolError(f"flight {a['flight_number']} does not fly on {a['date']}")
    return day["status"]


def list_all_airports(db: dict[str, Any], a: dict[str, Any]) -> list[str]:
    return list(AIRPORTS)


def book_reservation(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    if a["user_id"] not in db["users"]:
        raise ToolError(f"user {a['user_id']!r} not found")
    n = len(a["passengers"])
    day = _seat(db, a["flight_number"], a["date"], a["cabin"], n)
    f = db["flights"][a["flight_number"]]
    rid = f"NEW{len(db['reservations']):03d}"
    r = {"reservation_id": rid, "user_id": a["user_id"], "origin": f["origin"], "destination": f["destination"],
         "cabin": a["cabin"], "passengers": [dict(p) for p in a["passengers"]], "created_at": NOW,
         "flights": [{"flight_number": a["flight_number"], "date": a["date"], "price": day["prices"][a["cabin"]]}],
         "insurance": a["insurance"], "total_baggages": a["total_baggages"], "status": "active"}
    r["nonfree_baggages"] = _nonfree(db, r, a["total_baggages"], a["cabin"])
    total = n * (day["prices"][a["cabin"]] + (INSURANCE_PRICE if a["insurance"] else 0)) + BAG_PRICE * r[
        "nonfree_baggages"]
    _pay(db, a["user_id"], a["payment_id"], total)
    r["payment_history"] = [{"payment_id": a["payment_id"], "amount": round(total, 2)}]
    day["seats"][a["cabin"]] -= n
    db["reservations"][rid] = r
    db["users"][a["user_id"]]["reservations"].append(rid)
    return r


def cancel_reservation(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    r = _res(db, a["reservation_id"])
    methods = db["users"][r["user_id"]]["payment_methods"]
    for p in r["payment_history"]:
        if "balance" in methods[p["payment_id"]]:
            methods[p["payment_id"]]["balance"] = round(methods[p["payment_id"]]["balance"] + p["amount"], 2)
    r["payment_history"] = [*r["payment_history"], *({"payment_id": p["payment_id"], "amount": -p["amount"]}
                                                     for p in r["payment_history"])]
    r["status"] = "cancelled"
    return r


def update_reservation_flights(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    r = _res(db, a["reservation_id"])
    f = db["flights"].get(a["flight_number"])
    if f is None or (f["origin"], f["destination"]) != (r["origin"], r["destination"]):
        raise ToolError("the new flight must keep the reservation's origin and destination")
    old = r["flights"][0]
    same = (old["flight_number"], old["date"]) == (a["flight_number"], a["date"])
    n = len(r["passengers"])
    day = _seat(db, a["flight_number"], a["date"], a["cabin"], 0 if same and a["cabin"] == r["cabin"] else n)
    new_price = day["prices"][a["cabin"]]
    diff = round((new_price - old["price"]) * n, 2)
    _pay(db, r["user_id"], a["payment_id"], max(diff, 0.0))
    r["flights"] = [{"flight_number": a["flight_number"], "date": a["date"], "price": new_price}]
    r["cabin"] = a["cabin"]
    r["nonfree_baggages"] = _nonfree(db, r, r["total_baggages"], r["cabin"])
    r["payment_history"] = [*r["payment_history"], {"payment_id": a["payment_id"], "amount": diff}]
    return r


def update_reservation_baggages(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    r = _res(db, a["reservation_id"])
    nonfree = _nonfree(db, r, a["total_baggages"], r["cabin"])
    cost = BAG_PRICE * max(0, nonfree - r["nonfree_baggages"])
    _pay(db, r["user_id"], a["payment_id"], cost)
    r.update(total_baggages=a["total_baggages"], nonfree_baggages=nonfree)
    if cost:
        r["payment_history"] = [*r["payment_history"], {"payment_id": a["payment_id"], "amount": float(cost)}]
    return r


def update_reservation_passengers(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    r = _res(db, a["reservation_id"])
    if len(a["passengers"]) != len(r["passengers"]):
        raise ToolError("the number of passengers cannot change")
    r["passengers"] = [dict(p) for p in a["passengers"]]
    return r


_TOOLS: tuple[tuple[str, str, type[BaseModel], Callable[[dict[str, Any], dict[str, Any]], Any]], ...] = (
    ("authenticate_user", "Authenticate a user by user id and date of birth.", AuthArgs, authenticate_user),
    ("get_user_details", "A user's profile: membership, payment methods (balances), reservation ids.", UserArgs,
     get_user_details),
    ("get_reservation_details", "A reservation: flights, cabin, passengers, bags, insurance, payments, creation "
     "time.", ResArgs, get_reservation_details),
    ("search_direct_flight", "Direct flights between two airports on a date, with seats, prices and status.",
     SearchArgs, search_direct_flight),
    ("get_flight_status", "The status of a flight on a date.", FlightDateArgs, get_flight_status),
    ("list_all_airports", "IATA codes of every airport served.", NoArgs, list_all_airports),
    ("book_reservation", "Book a one-way reservation.", BookArgs, book_reservation),
    ("cancel_reservation", "Cancel a reservation (refund to the original payment methods).", ResArgs,
     cancel_reservation),
    ("update_reservation_flights", "Change a reservation's flight and/or cabin (same origin and destination).",
     UpdateFlightArgs, update_reservation_flights),
    ("update_reservation_baggages", "Set a reservation's total checked bags.", BagArgs, update_reservation_baggages),
    ("update_reservation_passengers", "Replace a reservation's passengers (same number).", PassengerArgs,
     update_reservation_passengers),
)

_ID_WORDS = ("user id", "date of birth", "identity", "verify", "authenticate")
_RES_WORDS = ("which reservation", "reservation id", "which booking")
_PAY_WORDS = ("payment", "pay ", "refund")


def _uid(rng: random.Random, used: set[str], make: Callable[[], str]) -> str:
    while (v := make()) in used:
        pass
    used.add(v)
    return v


class AirlineDomain(Domain):
    """Airline: 10 users (membership, a credit card, a gift card, a certificate) with 5 one-way reservations each
    (economy booked long ago, basic economy, economy booked within 24 hours, business, insured economy), 60 flights
    over 7 days with seats and prices per cabin."""

    name = "airline"
    policy = POLICY
    write_tools = frozenset({"book_reservation", "cancel_reservation", "update_reservation_flights",
                             "update_reservation_baggages", "update_reservation_passengers"})

    def tools(self) -> list[Tool]:
        return [Tool(name, desc, args) for name, desc, args, _ in _TOOLS]

    def functions(self) -> dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]]:
        return {name: fn for name, _, _, fn in _TOOLS}

    def templates(self) -> list[str]:
        return [f"{i}.{r}" for i in RES_INTENTS for r in REFS] + [f"{i}.{p}" for i in BOOK_INTENTS for p in PAYS]

    def make_db(self, rng: random.Random) -> dict[str, Any]:
        used: set[str] = set()
        flights: dict[str, Any] = {}
        for o in AIRPORTS:
            for d in AIRPORTS:
                if o == d:
                    continue
                for _ in range(2):
                    fn = _uid(rng, used, lambda: f"HAT{rng.randrange(100, 1000)}")
                    flights[fn] = {"origin": o, "destination": d, "departure_time": f"{rng.randrange(6, 22):02d}:00",
                                   "dates": {day: {
                                       "status": "delayed" if rng.random() < 0.2 else "on time",
                                       "seats": {"basic_economy": rng.randrange(2, 10), "economy": rng.randrange(2, 20),
                                                 "business": rng.randrange(2, 9)},
                                       "prices": {"basic_economy": round(rng.uniform(60, 150), 2),
                                                  "economy": round(rng.uniform(150, 400), 2),
                                                  "business": round(rng.uniform(500, 1200), 2)}} for day in DATES}}
        routes: dict[tuple[str, str], list[str]] = {}
        for fn, f in sorted(flights.items()):
            routes.setdefault((f["origin"], f["destination"]), []).append(fn)
        users: dict[str, Any] = {}
        reservations: dict[str, Any] = {}
        alnum = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        for first, last in rng.sample([(f, la) for f in FIRST for la in LAST], 10):
            user_id = _uid(rng, used, lambda: f"{first.lower()}_{last.lower()}_{rng.randrange(1000, 10000)}")
            dob = f"{rng.randrange(1950, 2004)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
            pms = {_uid(rng, used, lambda: f"credit_card_{rng.randrange(10**6, 10**7)}"): {"source": "credit_card"},
                   _uid(rng, used, lambda: f"gift_card_{rng.randrange(10**6, 10**7)}"): {
                       "source": "gift_card", "balance": float(rng.randrange(2500, 4000))},
                   _uid(rng, used, lambda: f"certificate_{rng.randrange(10**6, 10**7)}"): {
                       "source": "certificate", "balance": float(rng.randrange(2500, 4000))}}
            user = {"name": {"first_name": first, "last_name": last}, "dob": dob, "email":
                    f"{first}.{last}@example.com".lower(), "membership": rng.choice(sorted(FREE_BAGS)),
                    "payment_methods": pms, "reservations": []}
            slots = (("old", "economy", _ago(14 * 24 - 2), False), ("basic", "basic_economy", _ago(13 * 24 - 3), False),
                     ("recent", "economy", _ago(12), False), ("business", "business", _ago(12 * 24 - 1), False),
                     ("insured", "economy", _ago(11 * 24 - 4), True))
            for (_, cabin, created, insured), route, day in zip(slots, rng.sample(sorted(routes), 5),
                                                                   rng.sample(DATES, 5)):
                rid = _uid(rng, used, lambda: "".join(rng.choice(alnum) for _ in range(6)))
                fn = rng.choice(routes[route])
                pax = [{"first_name": first, "last_name": last, "dob": dob}]
                if rng.random() < 0.4:
                    pax.append({"first_name": rng.choice(FIRST), "last_name": last,
                                "dob": f"{rng.randrange(1950, 2010)}-0{rng.randrange(1, 10)}-1{rng.randrange(0, 9)}"})
                price = flights[fn]["dates"][day]["prices"][cabin]
                r = {"reservation_id": rid, "user_id": user_id, "origin": route[0], "destination": route[1],
                     "cabin": cabin, "passengers": pax, "created_at": created, "insurance": insured,
                     "flights": [{"flight_number": fn, "date": day, "price": price}], "status": "active",
                     "total_baggages": rng.randrange(1, 3)}
                r["nonfree_baggages"] = max(0, r["total_baggages"] - FREE_BAGS[user["membership"]][cabin] * len(pax))
                amount = len(pax) * (price + (INSURANCE_PRICE if insured else 0)) + BAG_PRICE * r["nonfree_baggages"]
                r["payment_history"] = [{"payment_id": rng.choice(sorted(pms)), "amount": round(amount, 2)}]
                reservations[rid] = r
                user["reservations"].append(rid)
            users[user_id] = user
        return {"users": users, "reservations": reservations, "flights": flights}

    def verified_user(self, name: str, args: dict[str, Any], result: Any) -> str | None:
        return args["user_id"] if name == "authenticate_user" else None

    def owner(self, db: dict[str, Any], name: str, args: dict[str, Any]) -> str | None:
        if "reservation_id" in args:
            r = db["reservations"].get(args["reservation_id"])
            return None if r is None else r["user_id"]
        return args.get("user_id")

    def instantiate(self, template: str, db: dict[str, Any], rng: random.Random) -> TaskSpec:
        intent, variant = template.split(".")
        user_id = rng.choice(sorted(db["users"]))
        user = db["users"][user_id]
        facts = [Fact("identity", _ID_WORDS, pick(rng, (f"My user id is {user_id} and I was born on {user['dob']}.",
                                                        f"Sure: user id {user_id}, date of birth {user['dob']}.")))]
        plan: list[tuple[str, dict[str, Any]]] = [
            ("respond", {"message": "To verify your identity, could you give me your user id and date of birth?"}),
            ("authenticate_user", {"user_id": user_id, "date_of_birth": user["dob"]}),
            ("get_user_details", {"user_id": user_id})]
        writes: list[Write] = []
        outputs: list[str] = []

        def say(text: str) -> None:
            plan.append(("respond", {"message": text}))

        def pay_fact(pid: str) -> None:
            facts.append(Fact("payment", _PAY_WORDS, f"Please use {pid}."))
            say("Which payment method should I use?")

        pms = sorted(user["payment_methods"])
        card = next(p for p in pms if p.startswith("credit_card"))
        if intent in BOOK_INTENTS:
            kind = "write"
            cabin = rng.choice(("economy", "business")) if intent != "book_2" else "economy"
            n = 2 if intent == "book_2" else 1
            while True:
                o, d = rng.sample(AIRPORTS, 2)
                day = rng.choice(DATES)
                found = search_direct_flight(db, {"origin": o, "destination": d, "date": day})
                found = [f for f in found if f["seats"][cabin] >= n]
                if found:
                    break
            best = min(found, key=lambda f: (f["prices"][cabin], f["flight_number"]))
            pax = [{"first_name": user["name"]["first_name"], "last_name": user["name"]["last_name"],
                    "dob": user["dob"]}]
            if n == 2:
                pax.append({"first_name": rng.choice(FIRST), "last_name": user["name"]["last_name"],
                            "dob": f"{rng.randrange(1960, 2010)}-0{rng.randrange(1, 10)}-2{rng.randrange(0, 9)}"})
            bags = rng.randrange(3, 6) if intent == "book_bags" else 0
            insured = intent == "book_insured"
            pid = next(p for p in pms if p.startswith(variant))
            facts.append(Fact("trip", ("where", "route", "from", "travel"), f"From {o} to {d} on {day}, one way."))
            say("Where are you flying from and to, and on which date?")
            plan.append(("search_direct_flight", {"origin": o, "destination": d, "date": day}))
            facts.append(Fact("flight", ("which flight", "cabin", "class"), f"The cheapest {cabin} flight, please."))
            say("Which flight and cabin would you like?")
            who = " and ".join(f"{p['first_name']} {p['last_name']} (born {p['dob']})" for p in pax)
            facts.append(Fact("passengers", ("passenger", "who is", "who will"), f"The passengers: {who}."))
            say("Who are the passengers (names and dates of birth)?")
            facts.append(Fact("extras", ("bag", "insurance"), f"{bags} checked bags, and "
                              f"{'yes, I want' if insured else 'no'} travel insurance."))
            say("How many checked bags, and would you like travel insurance?")
            pay_fact(pid)
            writes.append(Write("book_reservation", {
                "user_id": user_id, "flight_number": best["flight_number"], "date": day, "cabin": cabin,
                "passengers": pax, "payment_id": pid, "total_baggages": bags, "insurance": insured},
                (best["flight_number"], day, cabin, pid)))
            goal = f"book the cheapest {cabin} flight from {o} to {d} on {day} for {who}"
            opening = pick(rng, ("Hi, I'd like to book a flight.", "Hello, I need to book a one-way trip."))
        else:
            kind, slot = RES_INTENTS[intent]
            owner_id = user_id
            if intent == "trap_other_user":
                owner_id = rng.choice([u for u in sorted(db["users"]) if u != user_id])
            r = db["reservations"][db["users"][owner_id]["reservations"][SLOTS.index(slot)]]
            rid, fl = r["reservation_id"], r["flights"][0]
            text = {"id": f"The reservation id is {rid}.",
                    "route": f"It's my flight from {r['origin']} to {r['destination']}.",
                    "date": f"It's the flight on {fl['date']}."}[variant]
            if intent == "trap_other_user":
                text = f"It's my friend's reservation, {rid}."
            facts.append(Fact("reservation", _RES_WORDS, text))
            say("Which reservation is it about? Please give me the reservation id, or describe it.")
            plan.append(("get_reservation_details", {"reservation_id": rid}))
            n = len(r["passengers"])
            flight_args = {"reservation_id": rid, "flight_number": fl["flight_number"], "date": fl["date"]}
            goal = ""
            if intent.startswith("cancel") or intent == "trap_other_user":
                writes.append(Write("cancel_reservation", {"reservation_id": rid}, (rid,)))
                goal = f"cancel your reservation {rid}"
            if intent in ("upgrade_cabin", "upgrade_and_bags", "basic_to_economy"):
                cabin = "economy" if intent == "basic_to_economy" else "business"
                facts.append(Fact("change", ("cabin", "what would you like", "which class"), f"I want {cabin}."))
                say("Which cabin would you like?")
                pay_fact(card)
                writes.append(Write("update_reservation_flights", {**flight_args, "cabin": cabin, "payment_id": card},
                                    (rid, cabin, card)))
                goal = f"upgrade reservation {rid} to {cabin}"
            if intent == "change_date":
                new_day = rng.choice([x for x in DATES if x != fl["date"]])
                options = search_direct_flight(db, {"origin": r["origin"], "destination": r["destination"],
                                                    "date": new_day})
                pick_f = rng.choice([f for f in options if f["seats"][r["cabin"]] >= n])
                facts.append(Fact("change", ("which flight", "date", "what would you like"),
                                  f"Move it to flight {pick_f['flight_number']} on {new_day}, same cabin."))
                say("Which flight and date would you like instead?")
                plan.append(("search_direct_flight", {"origin": r["origin"], "destination": r["destination"],
                                                      "date": new_day}))
                pay_fact(card)
                writes.append(Write("update_reservation_flights", {
                    "reservation_id": rid, "flight_number": pick_f["flight_number"], "date": new_day,
                    "cabin": r["cabin"], "payment_id": card}, (rid, pick_f["flight_number"], new_day)))
                goal = f"move reservation {rid} to flight {pick_f['flight_number']} on {new_day}"
            if intent in ("add_bags_1", "add_bags_2", "upgrade_and_bags"):
                k = 2 if intent == "add_bags_2" else 1
                facts.append(Fact("bags", ("how many", "bag"), f"I want to add {k} checked bag(s), "
                                  f"{r['total_baggages'] + k} in total."))
                say("How many bags would you like to add?")
                if intent != "upgrade_and_bags":
                    pay_fact(card)
                writes.append(Write("update_reservation_baggages", {"reservation_id": rid, "total_baggages":
                                    r["total_baggages"] + k, "payment_id": card}, (rid, str(r["total_baggages"] + k))))
                goal = (goal + " and " if goal else "") + f"have {r['total_baggages'] + k} bags on reservation {rid}"
            if intent == "rename_passenger":
                new = {"first_name": rng.choice([f for f in FIRST if f != r["passengers"][0]["first_name"]]),
                       "last_name": r["passengers"][0]["last_name"], "dob": r["passengers"][0]["dob"]}
                facts.append(Fact("change", ("passenger", "name", "who"), f"Replace {r['passengers'][0]['first_name']}"
                                  f" by {new['first_name']} {new['last_name']}, born {new['dob']}."))
                say("Which passenger should change, and to whom?")
                writes.append(Write("update_reservation_passengers", {"reservation_id": rid, "passengers": [
                    new, *r["passengers"][1:]]}, (rid, new["first_name"])))
                goal = f"put {new['first_name']} on reservation {rid} instead of {r['passengers'][0]['first_name']}"
            if intent == "lookup_total":
                outputs.append(f"{sum(p['amount'] for p in r['payment_history']):.2f}")
                goal = "learn how much you paid for the reservation"
            elif intent == "lookup_status":
                plan.append(("get_flight_status", {"flight_number": fl["flight_number"], "date": fl["date"]}))
                outputs.append(db["flights"][fl["flight_number"]]["dates"][fl["date"]]["status"])
                goal = "learn the status of your flight"
            elif intent == "lookup_allowance":
                outputs.append(str(FREE_BAGS[user["membership"]][r["cabin"]] * n))
                goal = "learn how many free checked bags your reservation includes"
            elif intent.startswith("trap"):
                writes.clear()
                goal = {"trap_cancel_basic": f"cancel your basic economy reservation {rid}",
                        "trap_change_basic_date": f"move your basic economy reservation {rid} to another day",
                        "trap_remove_bags": f"remove a checked bag from reservation {rid}",
                        "trap_other_user": f"cancel your friend's reservation {rid}",
                        "trap_compensation": f"get compensation because your flight on {fl['date']} is delayed"}[intent]
            opening = {
                "cancel_recent": "Hi, I need to cancel a reservation.", "cancel_business": "Hello, please cancel "
                "one of my bookings.", "cancel_insured": "Hi, I can't travel anymore and want to cancel a trip.",
                "upgrade_cabin": "Hi, I'd like to upgrade my seat class.", "change_date": "Hello, I need to fly on a "
                "different day.", "add_bags_1": "Hi, I want to add a checked bag.", "add_bags_2": "Hello, I need to "
                "add some checked bags.", "rename_passenger": "Hi, I need to change a passenger on my booking.",
                "upgrade_and_bags": "Hi, I want to upgrade my cabin and add a bag.", "basic_to_economy": "Hi, "
                "can I move from basic economy to economy?", "lookup_total": "Hello, how much did I pay for a "
                "booking?", "lookup_status": "Hi, is my flight on time?", "lookup_allowance": "Hello, how many "
                "bags can I check for free?", "trap_cancel_basic": "Hi, I want to cancel my basic economy trip.",
                "trap_change_basic_date": "Hi, I want to move my basic economy flight to another day.",
                "trap_remove_bags": "Hello, I want to remove a checked bag and get my money back.",
                "trap_other_user": "Hi, I need to cancel a reservation for my friend.",
                "trap_compensation": "My flight is delayed and I want compensation for it.",
            }[intent]
        for w in writes:
            args = ", ".join(f"{k}={v}" for k, v in w.args.items())
            plan.append(("respond", {"message": f"I will call {w.name} with {args}. Do you confirm (yes/no)?"}))
            plan.append((w.name, w.args))
        if kind == "transfer":
            plan.append(("transfer_to_human", {"summary": f"User {user_id} asks for compensation: {goal}."}))
        elif kind == "refuse":
            say("I'm sorry, but I cannot do that: the policy does not allow it.")
        else:
            say(("Done. " if writes else "") + (f"The answer: {', '.join(outputs)}. " if outputs else "")
                + "Is there anything else?")
        return TaskSpec(template, kind, opening, facts, writes, outputs, plan, goal + ".",
                        pick(rng, ("You are polite and brief.", "You are in a hurry.", "You are friendly and chatty.")))
