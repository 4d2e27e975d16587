"""``arl/web.book-flight-v0``: search, choose the flight that fits a criterion, enter the passenger, confirm.

Four pages linked by GET forms (the state travels in the URL, like a real booking site), the booking itself in
sessionStorage: ``index.html`` (search) -> ``results.html`` -> ``passenger.html`` -> ``review.html`` ->
``confirmed.html``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    html_escape,
    register_task,
)
from arl_envs.envs.web.tasks._kit import (
    CITIES,
    FIRST_NAMES,
    LAST_NAMES,
    page,
    pick,
    sample,
)

#: Cities served, dates offered, flights per (route, date).
N_CITIES = 8
N_DATES = 10
N_FLIGHTS = 6
CRITERIA = ("cheapest", "earliest", "nonstop", "latest")
AIRLINE = "AR"

# Shared by all pages: the flights of a (from, to, date) search; the target route's come from the instance data,
# any other search gets a deterministic pseudo-random list (so exploring wrong routes still shows a real page).
_FLIGHTS_JS = """
function qs() { var p = new URLSearchParams(location.search), o = {}; p.forEach(function (v, k) { o[k] = v; }); return o; }
function hash(s) { var h = 2166136261; for (var i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return h >>> 0; }
function rnd(seed) { return function () { seed = (seed + 0x6D2B79F5) >>> 0; var t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; }
function pad(n) { return (n < 10 ? '0' : '') + n; }
function flights(from, to, date) {
  var key = from + '|' + to + '|' + date;
  if (ARL_DATA.flights[key]) return ARL_DATA.flights[key];
  if (!from || !to || from === to) return [];
  var r = rnd(hash(key)), out = [];
  for (var i = 0; i < ARL_DATA.n_flights; i++) {
    var dep = 360 + Math.floor(r() * 900), dur = 60 + Math.floor(r() * 400);
    out.push({no: 'ZX' + (100 + Math.floor(r() * 900)), dep: pad(Math.floor(dep / 60)) + ':' + pad(dep % 60),
      arr: pad(Math.floor((dep + dur) / 60) % 24) + ':' + pad((dep + dur) % 60), stops: Math.floor(r() * 3),
      price: 80 + Math.floor(r() * 600)});
  }
  return out;
}
function findFlight(q) { return flights(q.from, q.to, q.date).filter(function (f) { return f.no === q.flight; })[0]; }
function hidden(q, keys) {
  return keys.map(function (k) { return '<input type="hidden" name="' + k + '" value="' + arlEsc(q[k] || '') + '">'; }).join('');
}
function summary(f, q) {
  return f ? (f.no + ' ' + q.from + ' to ' + q.to + ' on ' + q.date + ', departs ' + f.dep + ', arrives ' + f.arr + ', ' +
    (f.stops === 0 ? 'nonstop' : f.stops + ' stop(s)') + ', $' + f.price) : 'Unknown flight';
}
var Q = qs();
"""

_INDEX_JS = _FLIGHTS_JS + """
window.arlState = () => ({page: 'search', from: document.getElementById('from').value,
  to: document.getElementById('to').value, date: document.getElementById('date').value,
  booking: ARL_STORE.get('booking', null)});
"""

_RESULTS_JS = _FLIGHTS_JS + """
var list = flights(Q.from, Q.to, Q.date);
document.getElementById('route').textContent = (Q.from || '?') + ' to ' + (Q.to || '?') + ' on ' + (Q.date || '?');
document.getElementById('rows').innerHTML = list.map(function (f) {
  return '<tr><td>' + f.no + '</td><td>' + f.dep + '</td><td>' + f.arr + '</td><td>' + (f.stops === 0 ? 'nonstop' : f.stops) +
    '</td><td>$' + f.price + '</td><td><form action="passenger.html" method="get">' + hidden(Q, ['from', 'to', 'date']) +
    '<input type="hidden" name="flight" value="' + f.no + '"><button type="submit" data-no="' + f.no + '">Select ' + f.no +
    '</button></form></td></tr>';
}).join('') || '<tr><td colspan="6">No flights found.</td></tr>';
window.arlState = () => ({page: 'results', from: Q.from, to: Q.to, date: Q.date, flights: list.map(function (f) { return f.no; }),
  booking: ARL_STORE.get('booking', null)});
"""

_PASSENGER_JS = _FLIGHTS_JS + """
document.getElementById('flight').textContent = summary(findFlight(Q), Q);
document.getElementById('carry').innerHTML = hidden(Q, ['from', 'to', 'date', 'flight']);
window.arlState = () => ({page: 'passenger', from: Q.from, to: Q.to, date: Q.date, flight: Q.flight,
  first: document.getElementById('first').value, last: document.getElementById('last').value,
  email: document.getElementById('email').value, booking: ARL_STORE.get('booking', null)});
"""

_REVIEW_JS = _FLIGHTS_JS + """
var f = findFlight(Q);
var ok = f && Q.first && Q.last && /^[^@\\s]+@[^@\\s]+$/.test(Q.email || '');
document.getElementById('flight').textContent = summary(f, Q);
document.getElementById('who').textContent = 'Passenger: ' + (Q.first || '?') + ' ' + (Q.last || '?') + ', ' + (Q.email || '?');
document.getElementById('error').textContent = ok ? '' : 'Some details are missing: go back and complete them.';
document.getElementById('confirm').disabled = !ok;
document.getElementById('confirm').addEventListener('click', function () {
  if (!ok) return;
  if (ARL_STORE.get('booking', null) === null) {
    ARL_STORE.set('booking', {from: Q.from, to: Q.to, date: Q.date, flight: Q.flight, first: Q.first, last: Q.last,
      email: Q.email, ref: 'B' + (hash(location.search) % 90000 + 10000)});
  }
  location.href = 'confirmed.html';
});
window.arlState = () => ({page: 'review', from: Q.from, to: Q.to, date: Q.date, flight: Q.flight, first: Q.first,
  last: Q.last, email: Q.email, booking: ARL_STORE.get('booking', null)});
"""

_CONFIRMED_JS = _FLIGHTS_JS + """
var b = ARL_STORE.get('booking', null);
document.getElementById('msg').textContent = b ? 'Booking ' + b.ref + ' confirmed: ' + b.flight + ' for ' + b.first + ' ' + b.last + '.'
  : 'No booking found.';
window.arlState = () => ({page: 'confirmed', booking: b});
"""


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60 % 24:02d}:{minutes % 60:02d}"


@register_task
class BookFlight(WebTask):
    """Book the flight that meets a criterion on a route and date, for a named passenger (multi-page).

    Instance: ``N_CITIES`` cities, ``N_DATES`` dates; the target route/date has ``N_FLIGHTS`` flights with
    distinct prices and departure times and exactly one nonstop; the criterion is the cheapest / earliest /
    latest departure / the nonstop one.
    State: per page ``{"page": "search" | "results" | "passenger" | "review" | "confirmed", from, to, date,
    flight, first, last, email, "booking": {...} | None}`` (the booking in sessionStorage).
    Validation: done once a booking is confirmed; success iff it is the target flight on the target route and
    date for the given passenger (names exact after trimming, email case-insensitive).
    Sub-goals: ``"searched"`` (results of the right search shown), ``"flight-chosen"`` (passenger page for the
    target flight), ``"reviewed"`` (review page with the right flight and passenger), ``"booked"``.
    """

    name = "book-flight"
    description = "Book a flight meeting a criterion (cheapest, nonstop...): search, choose, passenger, confirm."
    max_turns = 20
    n_subgoals = 4

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        cities = sorted(sample(rng, CITIES, N_CITIES))
        src, dst = sample(rng, cities, 2)
        start = dt.date(2025, 1, 1) + dt.timedelta(days=int(rng.integers(0, 365)))
        dates = [start + dt.timedelta(days=i) for i in range(N_DATES)]
        date = dates[int(rng.integers(N_DATES))].isoformat()
        deps = sorted(int(m) for m in rng.choice(np.arange(6 * 12, 21 * 12), size=N_FLIGHTS, replace=False) * 5)
        prices = [int(p) for p in rng.choice(np.arange(90, 700), size=N_FLIGHTS, replace=False)]
        nonstop = int(rng.integers(N_FLIGHTS))
        numbers = [f"{AIRLINE}{n}" for n in rng.choice(np.arange(100, 1000), size=N_FLIGHTS, replace=False)]
        flights = []
        for i in range(N_FLIGHTS):
            stops = 0 if i == nonstop else int(rng.integers(1, 3))
            dur = int(rng.integers(12, 40)) * 5 + 60 * stops
            flights.append({"no": numbers[i], "dep": _hhmm(deps[i]), "arr": _hhmm(deps[i] + dur), "stops": stops,
                            "price": prices[i]})
        order = rng.permutation(N_FLIGHTS)
        flights = [flights[int(j)] for j in order]
        crit = CRITERIA[int(rng.integers(len(CRITERIA)))]
        if crit == "cheapest":
            ranked, phrase = sorted(flights, key=lambda f: f["price"]), "the cheapest flight"
        elif crit == "earliest":
            ranked, phrase = sorted(flights, key=lambda f: f["dep"]), "the flight that departs earliest"
        elif crit == "latest":
            ranked, phrase = sorted(flights, key=lambda f: f["dep"], reverse=True), "the flight that departs latest"
        else:
            ranked, phrase = sorted(flights, key=lambda f: f["stops"]), "the nonstop flight"
        chosen, runner_up = ranked[0], ranked[1]
        first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
        email = f"{first.lower()}.{last.lower()}@travel.mail"
        data = {"flights": {f"{src}|{dst}|{date}": flights}, "n_flights": N_FLIGHTS}
        city_opts = '<option value="">-- city --</option>' + "".join(f"<option>{html_escape(c)}</option>" for c in cities)
        date_opts = "".join(f'<option value="{d.isoformat()}">{d.strftime("%a %d %b %Y")}</option>' for d in dates)
        search_body = (
            '<h1>SkyFare</h1><form id="search" action="results.html" method="get">'
            f'<div class="row"><label for="from">From</label><select id="from" name="from">{city_opts}</select></div>'
            f'<div class="row"><label for="to">To</label><select id="to" name="to">{city_opts}</select></div>'
            f'<div class="row"><label for="date">Date</label><select id="date" name="date">{date_opts}</select></div>'
            '<button type="submit">Search flights</button></form>'
        )
        results_body = (
            '<p><a href="index.html">New search</a></p><h1>Flights</h1><p id="route"></p>'
            "<table><thead><tr><th>Flight</th><th>Departs</th><th>Arrives</th><th>Stops</th><th>Price</th><th></th></tr>"
            '</thead><tbody id="rows"></tbody></table>'
        )
        passenger_body = (
            '<h1>Passenger details</h1><p id="flight"></p><form id="pax" action="review.html" method="get">'
            '<span id="carry"></span>'
            '<div class="row"><label for="first">First name</label><input id="first" name="first"></div>'
            '<div class="row"><label for="last">Last name</label><input id="last" name="last"></div>'
            '<div class="row"><label for="email">Email</label><input id="email" name="email"></div>'
            '<button type="submit">Continue</button></form>'
        )
        review_body = (
            '<h1>Review your booking</h1><p id="flight"></p><p id="who"></p><p id="error" class="error" role="alert"></p>'
            '<button id="confirm" type="button">Confirm booking</button>'
        )
        files: dict[str, str | bytes] = {
            "index.html": page("SkyFare - search", search_body, _INDEX_JS, data),
            "results.html": page("SkyFare - flights", results_body, _RESULTS_JS, data),
            "passenger.html": page("SkyFare - passenger", passenger_body, _PASSENGER_JS, data),
            "review.html": page("SkyFare - review", review_body, _REVIEW_JS, data),
            "confirmed.html": page("SkyFare - confirmed", '<h1>Thank you</h1><p id="msg"></p>', _CONFIRMED_JS, data),
        }
        when = dt.date.fromisoformat(date).strftime("%A %d %B %Y")
        return TaskInstance(
            goal={"from": src, "to": dst, "date": date, "flight": chosen["no"], "first": first, "last": last,
                  "email": email, "criterion": crit, "runner_up": runner_up["no"]},
            utterance=f"Book {phrase} from {src} to {dst} on {when} for {first} {last} (email {email}).",
            files=files,
        )

    @staticmethod
    def _route_ok(st: dict[str, Any], goal: dict[str, Any]) -> bool:
        return all(st.get(k) == goal[k] for k in ("from", "to", "date"))

    @staticmethod
    def _pax_ok(st: dict[str, Any], goal: dict[str, Any]) -> bool:
        return (
            str(st.get("first", "")).strip() == goal["first"]
            and str(st.get("last", "")).strip() == goal["last"]
            and str(st.get("email", "")).strip().casefold() == goal["email"].casefold()
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        pg = state.get("page")
        sub = set()
        if pg == "results" and self._route_ok(state, goal):
            sub.add("searched")
        if pg == "passenger" and self._route_ok(state, goal) and state.get("flight") == goal["flight"]:
            sub.add("flight-chosen")
        if pg == "review" and self._route_ok(state, goal) and state.get("flight") == goal["flight"] and self._pax_ok(state, goal):
            sub.add("reviewed")
        booking = state.get("booking")
        if not isinstance(booking, dict):
            return Score(done=False, success=False, subgoals=frozenset(sub))
        ok = self._route_ok(booking, goal) and booking.get("flight") == goal["flight"] and self._pax_ok(booking, goal)
        if ok:
            sub.update({"searched", "flight-chosen", "reviewed", "booked"})
        return Score(done=True, success=ok, subgoals=frozenset(sub))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        pg = st.get("page")
        if pg == "search":
            for k in ("from", "to"):
                if st.get(k) != goal[k]:
                    return act("select_option", view.bid(f"#{k}"), goal[k])
            if st.get("date") != goal["date"]:
                label = dt.date.fromisoformat(goal["date"]).strftime("%a %d %b %Y")
                return act("select_option", view.bid("#date"), label)
            return act("click", view.bid('#search button[type="submit"]'))
        if pg in ("results", "passenger", "review") and not self._route_ok(st, goal):
            return act("go_back")
        if pg == "results":
            return act("click", view.bid(f'button[data-no="{goal["flight"]}"]'))
        if pg == "passenger":
            if st.get("flight") != goal["flight"]:
                return act("go_back")
            for k in ("first", "last", "email"):
                if str(st.get(k, "")).strip() != goal[k]:
                    return act("fill", view.bid(f"#{k}"), goal[k])
            return act("click", view.bid('#pax button[type="submit"]'))
        if pg == "review":
            if st.get("flight") != goal["flight"] or not self._pax_ok(st, goal):
                return act("go_back")
            return act("click", view.bid("#confirm"))
        return act("noop")
