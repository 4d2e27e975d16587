"""A deterministic fictional encyclopedia and multi-hop questions over it.

Fictional facts mean a model cannot answer from memory: it has to search. :func:`generate_world` builds, from a
seed, a world of countries, cities, people, organisations and works (novels, films, albums, paintings) with
attributes (years, populations, currencies, occupations) and relations (born in, located in, founded by,
written by, published by, employed by, studied at, married to, set in), writes one encyclopedia article per
entity, and generates questions whose evidence is spread over 2-4 articles, in the style of:

* HotpotQA (Yang et al., 2018): *bridge* (find an entity in one article, then a fact about it in another)
  and *comparison* (compare one attribute of two entities) questions;
* 2WikiMultihopQA (Ho et al., 2020): *bridge-comparison* (compare attributes reached through a bridge), here
  under ``comparison`` with 3 or 4 hops;
* MuSiQue (Trivedi et al., 2022): *composition* chains of 3-4 single-hop steps, here ``composition``.

Articles are written so that no question can be answered from a single article: a person's article names
their birthplace but not its country, a city's article names its country but not the country's capital, a
work's article names its creator but not the creator's birthplace. Every question has a gold answer, aliases
(e.g. ``"Republic of Velmaria"`` for ``"Velmaria"``, ``"1,234,567"`` for ``"1234567"``, an acronym for a long
organisation name), the ids of its supporting articles in reasoning order, and the expert's search queries.

Generation of the default world (3,000 articles, 3,000 questions) takes well under a second; worlds are cached
as JSON under ``cache_root()/search/worlds`` keyed by every generation parameter and :data:`WORLD_VERSION`.
Determinism: only :class:`random.Random` seeded with strings is used (stable across Python versions and
platforms), never ``hash()`` or set iteration order.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import random
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arl_envs.envs.search.corpus import Document, QAItem, cache_root, qa_from_row

#: Bump when generation changes in any way: it is part of every cache key.
WORLD_VERSION = 2

#: Default number of articles of the ``arl/search.multihop-v1`` world.
DEFAULT_N_ARTICLES = 3000
#: Default number of generated questions.
DEFAULT_N_QUESTIONS = 3000
#: Smallest world that still has every entity kind and every question template.
MIN_ARTICLES = 60

# Share of the articles given to each entity kind (works get the rest).
_SHARE_COUNTRY = 0.02
_SHARE_CITY = 0.16
_SHARE_PERSON = 0.38
_SHARE_ORG = 0.16
_MIN_COUNTRIES = 4
_MIN_CITIES = 10

# Calendar of the fictional world (years).
_FIRST_YEAR = 1600
_LAST_YEAR = 2020
_PERSON_BIRTH_RANGE = (1720, 1995)
_ADULT_AGE = 20
_OLD_AGE = (55, 95)
_WORK_AGE = (22, 70)
_FOUNDING_AGE = (25, 60)
_POPULATION_RANGE = (2_000, 4_000_000)
_YES, _NO = "yes", "no"
_MIN_GIVEN_LEN = 3
_MIN_FAMILY_LEN = 4

_ONSETS = (
    "b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "qu", "r", "s",
    "sh", "st", "t", "th", "tr", "v", "w", "z", "", "",
)
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ae", "ei", "ia", "y")
_CODAS = ("", "", "", "", "", "", "n", "r", "l", "s", "th", "nd", "rk", "m", "x")
_FAMILY_SUFFIXES = ("", "", "", "son", "ard", "ell", "wick", "ov", "ez", "ley", "ren", "dottir", "by")
_CITY_SUFFIXES = (
    "holm", "ford", "vale", "mere", "burg", "port", "haven", "stad", "wick", "ton", "dell", "gard", "mouth",
    "crest", "field", "moor", "bridge", "reach",
)
_COUNTRY_SUFFIXES = ("ia", "ora", "and", "eth", "ara", "onia", "esh", "avia", "ine")
_COUNTRY_FORMS = ("Republic of", "Kingdom of", "Federation of", "Commonwealth of", "Grand Duchy of")
_CURRENCY_UNITS = ("crown", "mark", "florin", "dinar", "thaler", "shell", "lira", "sol")

_ADJECTIVES = (
    "Silent", "Crimson", "Hollow", "Golden", "Northern", "Quiet", "Broken", "Distant", "Burning", "Pale",
    "Hidden", "Winter", "Silver", "Last", "Wandering", "Bitter", "Gentle", "Iron", "Velvet", "Forgotten",
    "Endless", "Lantern", "Salt", "Amber", "Glass", "Falling", "Secret", "Restless", "Copper", "Scarlet",
    "Lonely", "Drowned", "Painted", "Eastern", "Midnight", "Paper", "Wild", "Frozen", "Sleeping", "Borrowed",
)
_NOUNS = (
    "Orchard", "River", "Harbour", "Lantern", "Garden", "Tower", "Mirror", "Season", "Voyage", "Kingdom",
    "Letter", "Bridge", "Crossing", "Archive", "Meadow", "Machine", "Island", "Compass", "Chorus", "Citadel",
    "Forest", "Window", "Orchestra", "Lighthouse", "Atlas", "Carnival", "Frontier", "Monastery", "Vineyard",
    "Observatory", "Signal", "Caravan", "Shore", "Cathedral", "Engine", "Labyrinth", "Pilgrim", "Ember",
    "Almanac", "Tide",
)
_PLURAL_NOUNS = (
    "Sparrows", "Lanterns", "Bells", "Wolves", "Rivers", "Strangers", "Embers", "Tides", "Orchards", "Kings",
    "Letters", "Clocks", "Mirrors", "Islands", "Ghosts", "Horses", "Saints", "Maps", "Winters", "Stars",
)

# Occupation -> (work kind, creator role noun, creating verb, organisation kind, organisation verb).
_CREATORS: dict[str, tuple[str, str, str, str, str]] = {
    "novelist": ("novel", "author", "written by", "publisher", "published by"),
    "film director": ("film", "director", "directed by", "film studio", "produced by"),
    "singer-songwriter": ("album", "performer", "recorded by", "record label", "released by"),
    "painter": ("painting", "painter", "painted by", "museum", "held by"),
}
_OTHER_OCCUPATIONS = (
    "physicist", "architect", "botanist", "engineer", "cartographer", "diplomat", "economist",
    "chemist", "historian", "astronomer", "mathematician", "surgeon",
)
_EMPLOYER_KINDS = ("university", "company", "research institute")
_ORG_KINDS = ("university", "company", "research institute", "publisher", "film studio", "record label", "museum")
_INDUSTRIES = ("Shipping", "Textiles", "Rail", "Glassworks", "Instruments", "Mining", "Telegraph", "Porcelain")
_FIELDS = ("Celestial Mechanics", "Marine Biology", "Linguistics", "Optics", "Geology", "Applied Acoustics")
_CITY_TRADES = ("shipbuilding", "glassmaking", "wool trade", "tea houses", "clock towers", "salt marshes",
                "printing presses", "river festivals", "observatories", "copper mines")
_STYLES = ("austere", "playful", "luminous", "melancholy", "exuberant", "meticulous", "restless", "spare")
_GENRES = {
    "novel": ("historical novel", "mystery novel", "satirical novel", "family saga", "adventure novel"),
    "film": ("drama film", "comedy film", "war film", "musical film", "documentary film"),
    "album": ("folk album", "jazz album", "choral album", "electronic album", "chamber-pop album"),
    "painting": ("landscape painting", "portrait", "still life", "allegorical painting", "seascape"),
}


@dataclass
class _Country:
    idx: int
    name: str
    demonym: str
    official: str
    currency: str
    founded: int
    cities: list[int] = field(default_factory=list)
    capital: int = -1

    @property
    def doc_id(self) -> str:
        return f"country-{self.idx:05d}"


@dataclass
class _City:
    idx: int
    name: str
    country: int
    population: int
    founded: int
    trade: str

    @property
    def doc_id(self) -> str:
        return f"city-{self.idx:05d}"


@dataclass
class _Person:
    idx: int
    given: str
    family: str
    pronoun: str
    birth: int
    death: int | None
    birthplace: int
    occupation: str
    employer: int | None = None
    alma_mater: int | None = None
    spouse: int | None = None
    works: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.given} {self.family}"

    @property
    def doc_id(self) -> str:
        return f"person-{self.idx:05d}"


@dataclass
class _Org:
    idx: int
    name: str
    kind: str
    founded: int
    hq: int
    founder: int
    acronym: str | None

    @property
    def doc_id(self) -> str:
        return f"org-{self.idx:05d}"


@dataclass
class _Work:
    idx: int
    title: str
    kind: str
    genre: str
    year: int
    creator: int
    org: int | None
    setting: int | None

    @property
    def doc_id(self) -> str:
        return f"work-{self.idx:05d}"


@dataclass
class World:
    """A generated fictional encyclopedia and its questions.

    Attributes:
        seed: The generation seed.
        n_articles: Number of articles (``len(documents)``).
        documents: All articles, ids ``"<kind>-<5 digits>"`` with kind in country/city/person/org/work.
        questions: Multi-hop questions; ids ``"mh-<5 digits>"``.
    """

    seed: int
    n_articles: int
    documents: list[Document]
    questions: list[QAItem]

    def to_json(self) -> dict:
        """A JSON-able dict (the cache file format)."""
        return {
            "version": WORLD_VERSION,
            "seed": self.seed,
            "n_articles": self.n_articles,
            "documents": [[d.id, d.title, d.text] for d in self.documents],
            "questions": [q.to_row() for q in self.questions],
        }

    @classmethod
    def from_json(cls, data: dict) -> World:
        """Inverse of :meth:`to_json`."""
        docs = [Document(i, t, x) for i, t, x in data["documents"]]
        questions = [qa_from_row(row, n, "world cache") for n, row in enumerate(data["questions"])]
        return cls(int(data["seed"]), int(data["n_articles"]), docs, questions)


class _Names:
    """Unique pronounceable fictional names from syllables (one shared pool so no two entities share a name)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def root(self, syllables: tuple[int, int]) -> str:
        n = self.rng.randint(*syllables)
        parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS) for _ in range(n)]
        word = "".join(parts)
        return word[:1].upper() + word[1:]

    def unique(self, make: Callable[[], str], max_tries: int = 200) -> str:
        for _ in range(max_tries):
            name = make()
            if 4 <= len(name) <= 40 and name.lower() not in self.used:
                self.used.add(name.lower())
                return name
        # Astronomically unlikely with the pools above; fall back to a numbered name so generation never fails.
        name = f"{make()} {len(self.used)}"
        self.used.add(name.lower())
        return name


def _spread(rng: random.Random, lo: int, hi: int) -> int:
    """An integer in [lo, hi], log-uniformly distributed (populations)."""
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def _a(word: str) -> str:
    """The indefinite article for ``word`` ("a" or "an", by its first letter)."""
    lower = word.lower()
    if lower.startswith(("uni", "use", "eu", "one")):
        return "a"
    return "an" if lower[:1] in "aeiou" else "a"


def _the(org_name: str) -> str:
    """An organisation name as used in running text: "the University of X", but "Foo Press"."""
    return f"the {org_name}" if org_name.split()[0] in ("University", "Museum") else org_name


def _words(text: str) -> str:
    """Lower-case words separated by single spaces (for whole-word containment tests)."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _with_commas(n: int) -> str:
    return f"{n:,}"


class _Builder:
    """Builds the entities, then the articles, then the questions."""

    def __init__(self, n_articles: int, seed: int):
        self.n = n_articles
        self.seed = seed
        self.rng = random.Random(f"arl-search-world-{WORLD_VERSION}-{seed}")
        self.names = _Names(self.rng)
        self.countries: list[_Country] = []
        self.cities: list[_City] = []
        self.persons: list[_Person] = []
        self.orgs: list[_Org] = []
        self.works: list[_Work] = []

    # ----------------------------------------------------------------- entities
    def build(self) -> None:
        n_countries = max(_MIN_COUNTRIES, round(self.n * _SHARE_COUNTRY))
        n_cities = max(_MIN_CITIES, round(self.n * _SHARE_CITY))
        n_persons = round(self.n * _SHARE_PERSON)
        n_orgs = round(self.n * _SHARE_ORG)
        n_works = self.n - n_countries - n_cities - n_persons - n_orgs
        self._countries(n_countries)
        self._cities(n_cities)
        self._persons(n_persons)
        self._orgs(n_orgs)
        self._affiliations()
        self._works(n_works)
        self._index()

    def _index(self) -> None:
        """Reverse relations used by the articles (avoids quadratic scans on large worlds)."""
        self.natives: dict[int, list[_Person]] = {}
        for p in self.persons:
            self.natives.setdefault(p.birthplace, []).append(p)
        self.founded_by: dict[int, list[_Org]] = {}
        for o in self.orgs:
            self.founded_by.setdefault(o.founder, []).append(o)
        self.staff: dict[int, list[_Person]] = {}
        for p in self.persons:
            if p.employer is not None:
                self.staff.setdefault(p.employer, []).append(p)
        self.produced: dict[int, list[_Work]] = {}
        for w in self.works:
            if w.org is not None:
                self.produced.setdefault(w.org, []).append(w)

    def _countries(self, n: int) -> None:
        rng = self.rng
        for i in range(n):
            root = self.names.unique(lambda: self.names.root((1, 2)))
            name = self.names.unique(lambda r=root: r + rng.choice(_COUNTRY_SUFFIXES))
            demonym = name.rstrip("aeiouy") + rng.choice(("ian", "ese", "ish", "i"))
            official = f"{rng.choice(_COUNTRY_FORMS)} {name}"
            currency = f"{demonym} {rng.choice(_CURRENCY_UNITS)}"
            founded = rng.randint(_FIRST_YEAR + 100, _LAST_YEAR - 60)
            self.countries.append(_Country(i, name, demonym, official, currency, founded))

    def _cities(self, n: int) -> None:
        rng = self.rng
        for i in range(n):
            # The first cities cover every country once, so every country has a capital.
            country = i if i < len(self.countries) else rng.randrange(len(self.countries))
            name = self.names.unique(lambda: self.names.root((1, 2)) + rng.choice(_CITY_SUFFIXES))
            population = _spread(rng, *_POPULATION_RANGE)
            founded = rng.randint(_FIRST_YEAR - 600, _LAST_YEAR - 200)
            city = _City(i, name, country, population, founded, rng.choice(_CITY_TRADES))
            self.cities.append(city)
            self.countries[country].cities.append(i)
        for country in self.countries:
            country.capital = max(country.cities, key=lambda c: self.cities[c].population)

    def _persons(self, n: int) -> None:
        rng = self.rng
        creators = list(_CREATORS)
        for i in range(n):
            given = ""
            while len(given) < _MIN_GIVEN_LEN:
                given = self.names.root((1, 2)) + rng.choice(("", "", "a", "o", "en", "ia", "us"))
            family_root = ""
            while len(family_root) < _MIN_FAMILY_LEN:
                family_root = self.names.root((1, 2)) + rng.choice(_FAMILY_SUFFIXES)
            birth = rng.randint(*_PERSON_BIRTH_RANGE)
            death = birth + rng.randint(*_OLD_AGE)
            occupation = rng.choice(creators) if rng.random() < 0.6 else rng.choice(_OTHER_OCCUPATIONS)
            person = _Person(
                idx=i,
                given=given,
                family="",
                pronoun=rng.choice(("he", "she")),
                birth=birth,
                death=death if death <= _LAST_YEAR else None,
                birthplace=rng.randrange(len(self.cities)),
                occupation=occupation,
            )
            # Full names are unique; family names may repeat (as in any encyclopedia).
            full = self.names.unique(lambda g=given, f=family_root: f"{g} {f}")
            person.given, _, person.family = full.partition(" ")
            self.persons.append(person)

    def _org_name(self, kind: str, founder: _Person, hq: _City) -> str:
        rng = self.rng
        adj, noun, plural = rng.choice(_ADJECTIVES), rng.choice(_NOUNS), rng.choice(_PLURAL_NOUNS)
        options = {
            "university": (f"University of {hq.name}", f"{founder.family} University",
                           f"{hq.name} Institute of Technology", f"{founder.family} College of {hq.name}"),
            "company": (f"{founder.family} {rng.choice(_INDUSTRIES)} Company", f"{hq.name} {rng.choice(_INDUSTRIES)} Works"),
            "research institute": (f"{founder.family} Institute for {rng.choice(_FIELDS)}",
                                   f"{hq.name} Laboratory of {rng.choice(_FIELDS)}"),
            "publisher": (f"{founder.family} Press", f"{adj} {noun} Books", f"{founder.family} & {noun} Publishers"),
            "film studio": (f"{adj} {noun} Pictures", f"{founder.family} Studios", f"{hq.name} Film Company"),
            "record label": (f"{noun} Records", f"{adj} {plural} Records", f"{founder.family} Music"),
            "museum": (f"{hq.name} Museum of Art", f"{founder.family} Gallery", f"Museum of the {adj} {noun}"),
        }[kind]
        return rng.choice(options)

    def _orgs(self, n: int) -> None:
        rng = self.rng
        # Founders are adults before the last year; each org kind appears at least once (round robin first).
        founders = [p for p in self.persons if p.birth + _FOUNDING_AGE[0] <= _LAST_YEAR]
        for i in range(n):
            kind = _ORG_KINDS[i] if i < len(_ORG_KINDS) else rng.choice(_ORG_KINDS)
            founder = rng.choice(founders)
            founded = min(founder.birth + rng.randint(*_FOUNDING_AGE), _LAST_YEAR)
            hq = self.cities[rng.randrange(len(self.cities))]
            name = self.names.unique(lambda k=kind, f=founder, h=hq: self._org_name(k, f, h))
            words = [w for w in name.replace("&", " ").split() if w[:1].isupper()]
            acronym = "".join(w[0] for w in words) if len(words) >= 3 else None
            self.orgs.append(_Org(i, name, kind, founded, hq.idx, founder.idx, acronym))

    def _sorted_by_founding(self, kinds: tuple[str, ...]) -> tuple[list[_Org], list[int]]:
        orgs = sorted((o for o in self.orgs if o.kind in kinds), key=lambda o: (o.founded, o.idx))
        return orgs, [o.founded for o in orgs]

    def _pick_founded_by(self, orgs: tuple[list[_Org], list[int]], year: int) -> _Org | None:
        """A random organisation among ``orgs`` founded in or before ``year`` (None if there is none)."""
        ordered, years = orgs
        k = bisect.bisect_right(years, year)
        return ordered[self.rng.randrange(k)] if k else None

    def _affiliations(self) -> None:
        rng = self.rng
        universities = self._sorted_by_founding(("university",))
        employers = self._sorted_by_founding(_EMPLOYER_KINDS)
        for person in self.persons:
            if rng.random() < 0.7:
                uni = self._pick_founded_by(universities, person.birth + _ADULT_AGE - 2)
                if uni is not None:
                    person.alma_mater = uni.idx
            if person.occupation not in _CREATORS and rng.random() < 0.85:
                employer = self._pick_founded_by(employers, person.birth + _ADULT_AGE + 5)
                if employer is not None:
                    person.employer = employer.idx
        singles = [p for p in self.persons]
        rng.shuffle(singles)
        for a, b in zip(singles[0::2], singles[1::2]):
            if rng.random() < 0.35 and abs(a.birth - b.birth) <= 15:
                a.spouse, b.spouse = b.idx, a.idx

    def _work_title(self, kind: str) -> str:
        rng = self.rng
        adj, noun, plural = rng.choice(_ADJECTIVES), rng.choice(_NOUNS), rng.choice(_PLURAL_NOUNS)
        city = rng.choice(self.cities).name
        given = rng.choice(self.persons).given
        options = (
            f"The {adj} {noun}", f"{adj} {plural}", f"The {noun} of {city}", f"{_a(noun).capitalize()} {noun} for {given}",
            f"{plural} of the {adj} {noun}", f"{noun} in {rng.choice(('Spring', 'Winter', 'Autumn', 'Summer'))}",
            f"The {plural} of {city}", f"{adj} {noun}",
        )
        if kind == "album":
            options += (f"Songs from {city}", f"{adj} {noun} Sessions")
        if kind == "painting":
            options += (f"View of {city}", f"Portrait of {given} with {noun}")
        return rng.choice(options)

    def _works(self, n: int) -> None:
        rng = self.rng
        creators = [p for p in self.persons if p.occupation in _CREATORS]
        by_kind = {k: self._sorted_by_founding((k,)) for k in _ORG_KINDS}
        for i in range(n):
            creator = rng.choice(creators)
            kind, _, _, org_kind, _ = _CREATORS[creator.occupation]
            last = min(creator.death or _LAST_YEAR, _LAST_YEAR)
            year = min(creator.birth + rng.randint(*_WORK_AGE), last)
            publisher = self._pick_founded_by(by_kind[org_kind], year)
            org = publisher.idx if publisher is not None and rng.random() < 0.9 else None
            setting = rng.randrange(len(self.cities)) if kind in ("novel", "film") and rng.random() < 0.7 else None
            title = self.names.unique(lambda k=kind: self._work_title(k))
            self.works.append(_Work(i, title, kind, rng.choice(_GENRES[kind]), year, creator.idx, org, setting))
            creator.works.append(i)

    # ----------------------------------------------------------------- articles
    def documents(self) -> list[Document]:
        docs = [self._country_doc(c) for c in self.countries]
        docs += [self._city_doc(c) for c in self.cities]
        docs += [self._person_doc(p) for p in self.persons]
        docs += [self._org_doc(o) for o in self.orgs]
        docs += [self._work_doc(w) for w in self.works]
        return docs

    def _country_doc(self, c: _Country) -> Document:
        cap = self.cities[c.capital]
        others = [self.cities[i].name for i in c.cities if i != c.capital][:4]
        text = (
            f"{c.name}, officially the {c.official}, is a country whose capital and largest city is {cap.name}. "
            f"The {c.demonym} state was established in {c.founded}. Its currency is the {c.currency}. "
        )
        if others:
            text += f"Other {c.demonym} cities include {', '.join(others)}. "
        text += (
            f"The economy of {c.name} has long relied on {cap.trade}, and the {c.demonym} parliament meets in "
            f"{cap.name}."
        )
        return Document(c.doc_id, c.name, text)

    def _city_doc(self, c: _City) -> Document:
        country = self.countries[c.country]
        capital = country.capital == c.idx
        role = f"the capital of {country.name}" if capital else f"a city in {country.name}"
        text = (
            f"{c.name} is {role}. It was founded in {c.founded} and has a population of "
            f"{_with_commas(c.population)}. {c.name} is known for its {c.trade}. "
        )
        natives = self.natives.get(c.idx, [])[:3]
        if natives:
            text += f"Notable people born in {c.name} include {', '.join(p.name for p in natives)}."
        return Document(c.doc_id, c.name, text.strip())

    def _person_doc(self, p: _Person) -> Document:
        rng = self.rng
        he, his = p.pronoun, {"he": "his", "she": "her"}[p.pronoun]
        life = f"{p.birth}–{p.death}" if p.death else f"born {p.birth}"
        born = self.cities[p.birthplace].name
        tense = "was" if p.death else "is"
        text = f"{p.name} ({life}) {tense} {_a(p.occupation)} {p.occupation} born in {born} in {p.birth}. "
        if p.works:
            kind, role = _CREATORS[p.occupation][0], _CREATORS[p.occupation][1]
            titles = [self.works[w].title for w in p.works[:3]]
            text += f"As {_a(role)} {role}, {p.family} is remembered for the {kind}"
            text += f"{'s' if len(titles) > 1 else ''} {', '.join(titles)}. "
        style1, style2 = rng.sample(_STYLES, 2)
        text += f"Critics described {his} work as {style1} and {style2}. "
        if p.alma_mater is not None:
            text += f"{p.family} studied at {_the(self.orgs[p.alma_mater].name)}. "
        if p.employer is not None:
            text += f"{he.capitalize()} later worked for {_the(self.orgs[p.employer].name)}. "
        if p.spouse is not None:
            text += f"{p.family} was married to {self.persons[p.spouse].name}. "
        founded = self.founded_by.get(p.idx, [])[:2]
        if founded:
            text += f"{he.capitalize()} founded {' and '.join(_the(o.name) for o in founded)}. "
        if p.death:
            text += f"{p.family} died in {p.death}."
        return Document(p.doc_id, p.name, text.strip())

    def _org_doc(self, o: _Org) -> Document:
        founder = self.persons[o.founder]
        hq = self.cities[o.hq]
        a_or_an = _a(o.kind)
        alias = f" ({o.acronym})" if o.acronym else ""
        emblem_adj, emblem_noun = self.rng.choice(_ADJECTIVES), self.rng.choice(_NOUNS)
        text = (
            f"{_the(o.name)[:1].upper()}{_the(o.name)[1:]}{alias} is {a_or_an} {o.kind} based in {hq.name}. It was founded in {o.founded} by "
            f"{founder.name}. "
        )
        text += f"Its emblem shows {_a(emblem_adj)} {emblem_adj.lower()} {emblem_noun.lower()}. "
        members = self.staff.get(o.idx, [])[:2]
        if members:
            text += f"Its staff have included {' and '.join(p.name for p in members)}. "
        produced = self.produced.get(o.idx, [])[:2]
        if produced:
            text += f"Works associated with it include {' and '.join(w.title for w in produced)}."
        return Document(o.doc_id, o.name, text.strip())

    def _work_doc(self, w: _Work) -> Document:
        creator = self.persons[w.creator]
        _, role, made_by, _, org_verb = _CREATORS[creator.occupation]
        text = f"{w.title} is {_a(w.genre)} {w.genre} {made_by} {creator.name} in {w.year}. "
        if w.org is not None:
            text += f"It was {org_verb} {_the(self.orgs[w.org].name)}. "
        if w.setting is not None:
            text += f"The story is set in {self.cities[w.setting].name}. "
        text += f"Reviewers called it {self.rng.choice(_STYLES)}, and the {role} returned to its themes in later years."
        return Document(w.doc_id, w.title, text)


class _Questions:
    """Question templates over a built world. Each template returns a row dict or None (not applicable)."""

    def __init__(self, b: _Builder, seed: int, documents: list[Document]):
        self.b = b
        self.doc_words = {d.id: f" {_words(d.title + ' ' + d.text)} " for d in documents}
        self.rng = random.Random(f"arl-search-questions-{WORLD_VERSION}-{seed}")
        self.works_with_org = [w for w in b.works if w.org is not None]
        self.works_with_setting = [w for w in b.works if w.setting is not None]
        self.employed = [p for p in b.persons if p.employer is not None]
        self.studied = [p for p in b.persons if p.alma_mater is not None]
        self.married_employed = [p for p in b.persons if p.spouse is not None and b.persons[p.spouse].employer is not None]
        self.by_birthplace = b.natives
        self.works_by_kind: dict[str, list[_Work]] = {}
        for w in b.works:
            self.works_by_kind.setdefault(w.kind, []).append(w)
        creators_with_alma = {p.idx for p in self.studied}
        self.works_creator_studied = [w for w in b.works if w.creator in creators_with_alma]

    def _leaks(self, answers: list[str], doc_id: str) -> bool:
        """Whether an answer appears (as whole words) in the first article of a chain, e.g. by coincidence a
        film set in the city where its studio is based: such a question could be answered from one article."""
        text = self.doc_words[doc_id]
        return any(f" {_words(a)} " in text for a in answers)

    # Aliases -------------------------------------------------------------
    def _person_answers(self, p: _Person) -> list[str]:
        return [p.name]

    def _city_answers(self, c: _City) -> list[str]:
        return [c.name, f"{c.name}, {self.b.countries[c.country].name}"]

    def _country_answers(self, c: _Country) -> list[str]:
        return [c.name, c.official]

    def _org_answers(self, o: _Org) -> list[str]:
        return [o.name] + ([o.acronym] if o.acronym else [])

    @staticmethod
    def _year_answers(n: int) -> list[str]:
        return [str(n)]

    @staticmethod
    def _count_answers(n: int) -> list[str]:
        return [str(n)] + ([_with_commas(n)] if n >= 1000 else [])

    def _role(self, w: _Work) -> str:
        return _CREATORS[self.b.persons[w.creator].occupation][1]

    # Templates -------------------------------------------------------------
    def _row(self, qtype: str, question: str, answers: list[str], chain: list[tuple[str, str]]) -> dict | None:
        if qtype != "comparison" and self._leaks(answers, chain[0][0]):
            return None
        return {
            "question": question,
            "golden_answers": answers,
            "supporting_ids": [doc_id for doc_id, _ in chain],
            "expert_queries": [query for _, query in chain],
            "type": qtype,
            "hops": len(chain),
        }

    def bridge_work_birthplace(self) -> dict | None:
        w = self.rng.choice(self.b.works)
        p = self.b.persons[w.creator]
        q = f"In which city was the {self._role(w)} of the {w.kind} \"{w.title}\" born?"
        return self._row("bridge", q, self._city_answers(self.b.cities[p.birthplace]),
                         [(w.doc_id, w.title), (p.doc_id, p.name)])

    def bridge_work_birthyear(self) -> dict | None:
        w = self.rng.choice(self.b.works)
        p = self.b.persons[w.creator]
        q = f"In what year was the {self._role(w)} of \"{w.title}\" born?"
        return self._row("bridge", q, self._year_answers(p.birth), [(w.doc_id, w.title), (p.doc_id, p.name)])

    def bridge_org_founder_birthplace(self) -> dict | None:
        o = self.rng.choice(self.b.orgs)
        p = self.b.persons[o.founder]
        q = f"Where was the founder of {_the(o.name)} born?"
        return self._row("bridge", q, self._city_answers(self.b.cities[p.birthplace]),
                         [(o.doc_id, o.name), (p.doc_id, p.name)])

    def bridge_person_country(self) -> dict | None:
        p = self.rng.choice(self.b.persons)
        c = self.b.cities[p.birthplace]
        q = f"In which country was the {p.occupation} {p.name} born?"
        return self._row("bridge", q, self._country_answers(self.b.countries[c.country]),
                         [(p.doc_id, p.name), (c.doc_id, c.name)])

    def bridge_work_org_city(self) -> dict | None:
        w = self.rng.choice(self.works_with_org)
        o = self.b.orgs[w.org]
        verb = _CREATORS[self.b.persons[w.creator].occupation][4].replace(" by", "")
        q = f"In which city is the {o.kind} that {verb} \"{w.title}\" based?"
        return self._row("bridge", q, self._city_answers(self.b.cities[o.hq]), [(w.doc_id, w.title), (o.doc_id, o.name)])

    def bridge_work_org_founder(self) -> dict | None:
        w = self.rng.choice(self.works_with_org)
        o = self.b.orgs[w.org]
        verb = _CREATORS[self.b.persons[w.creator].occupation][4].replace(" by", "")
        q = f"Who founded the {o.kind} that {verb} \"{w.title}\"?"
        return self._row("bridge", q, self._person_answers(self.b.persons[o.founder]),
                         [(w.doc_id, w.title), (o.doc_id, o.name)])

    def bridge_employer_founded(self) -> dict | None:
        p = self.rng.choice(self.employed)
        o = self.b.orgs[p.employer]
        q = f"In what year was the employer of the {p.occupation} {p.name} founded?"
        return self._row("bridge", q, self._year_answers(o.founded), [(p.doc_id, p.name), (o.doc_id, o.name)])

    def bridge_setting_country(self) -> dict | None:
        w = self.rng.choice(self.works_with_setting)
        c = self.b.cities[w.setting]
        q = f"In which country is the {w.kind} \"{w.title}\" set?"
        return self._row("bridge", q, self._country_answers(self.b.countries[c.country]),
                         [(w.doc_id, w.title), (c.doc_id, c.name)])

    def bridge_city_capital(self) -> dict | None:
        c = self.rng.choice(self.b.cities)
        country = self.b.countries[c.country]
        if country.capital == c.idx:
            return None
        q = f"What is the capital of the country in which {c.name} lies?"
        return self._row("bridge", q, self._city_answers(self.b.cities[country.capital]),
                         [(c.doc_id, c.name), (country.doc_id, country.name)])

    def comparison_born_first(self) -> dict | None:
        p1, p2 = self.rng.sample(self.b.persons, 2)
        if p1.birth == p2.birth:
            return None
        q = f"Who was born first, {p1.name} or {p2.name}?"
        first = p1 if p1.birth < p2.birth else p2
        return self._row("comparison", q, self._person_answers(first), [(p1.doc_id, p1.name), (p2.doc_id, p2.name)])

    def comparison_founded_first(self) -> dict | None:
        o1, o2 = self.rng.sample(self.b.orgs, 2)
        if o1.founded == o2.founded:
            return None
        q = f"Which was founded earlier, {_the(o1.name)} or {_the(o2.name)}?"
        first = o1 if o1.founded < o2.founded else o2
        return self._row("comparison", q, self._org_answers(first), [(o1.doc_id, o1.name), (o2.doc_id, o2.name)])

    def comparison_population(self) -> dict | None:
        c1, c2 = self.rng.sample(self.b.cities, 2)
        if c1.population == c2.population:
            return None
        q = f"Which city has the larger population, {c1.name} or {c2.name}?"
        big = c1 if c1.population > c2.population else c2
        return self._row("comparison", q, [big.name], [(c1.doc_id, c1.name), (c2.doc_id, c2.name)])

    def comparison_same_birthplace(self) -> dict | None:
        p1 = self.rng.choice(self.b.persons)
        same = [p for p in self.by_birthplace.get(p1.birthplace, []) if p.idx != p1.idx]
        if self.rng.random() < 0.5 and same:
            p2 = self.rng.choice(same)
        else:
            p2 = self.rng.choice(self.b.persons)
            if p2.idx == p1.idx:
                return None
        answer = _YES if p1.birthplace == p2.birthplace else _NO
        q = f"Were {p1.name} and {p2.name} born in the same city?"
        return self._row("comparison", q, [answer], [(p1.doc_id, p1.name), (p2.doc_id, p2.name)])

    def comparison_released_first(self) -> dict | None:
        w1 = self.rng.choice(self.b.works)
        w2 = self.rng.choice(self.works_by_kind[w1.kind])
        if w2.year == w1.year:
            return None
        q = f"Which {w1.kind} came out first, \"{w1.title}\" or \"{w2.title}\"?"
        first = w1 if w1.year < w2.year else w2
        return self._row("comparison", q, [first.title], [(w1.doc_id, w1.title), (w2.doc_id, w2.title)])

    def comparison_person_vs_creator(self) -> dict | None:
        p1 = self.rng.choice(self.b.persons)
        w = self.rng.choice(self.b.works)
        p2 = self.b.persons[w.creator]
        if p1.birth == p2.birth or p1.idx == p2.idx:
            return None
        q = f"Who was born first, {p1.name} or the {self._role(w)} of \"{w.title}\"?"
        first = p1 if p1.birth < p2.birth else p2
        return self._row("comparison", q, self._person_answers(first),
                         [(p1.doc_id, p1.name), (w.doc_id, w.title), (p2.doc_id, p2.name)])

    def comparison_older_creator(self) -> dict | None:
        w1 = self.rng.choice(self.b.works)
        w2 = self.rng.choice(self.works_by_kind[w1.kind])
        p1, p2 = self.b.persons[w1.creator], self.b.persons[w2.creator]
        if p1.birth == p2.birth:
            return None
        role = self._role(w1)
        q = f"Which {w1.kind} has the older {role}, \"{w1.title}\" or \"{w2.title}\"?"
        first = w1 if p1.birth < p2.birth else w2
        return self._row("comparison", q, [first.title],
                         [(w1.doc_id, w1.title), (p1.doc_id, p1.name), (w2.doc_id, w2.title), (p2.doc_id, p2.name)])

    def composition_work_country(self) -> dict | None:
        w = self.rng.choice(self.b.works)
        p = self.b.persons[w.creator]
        c = self.b.cities[p.birthplace]
        q = f"In which country was the {self._role(w)} of \"{w.title}\" born?"
        return self._row("composition", q, self._country_answers(self.b.countries[c.country]),
                         [(w.doc_id, w.title), (p.doc_id, p.name), (c.doc_id, c.name)])

    def composition_founder_city_population(self) -> dict | None:
        o = self.rng.choice(self.b.orgs)
        p = self.b.persons[o.founder]
        c = self.b.cities[p.birthplace]
        q = f"What is the population of the city where the founder of {_the(o.name)} was born?"
        return self._row("composition", q, self._count_answers(c.population),
                         [(o.doc_id, o.name), (p.doc_id, p.name), (c.doc_id, c.name)])

    def composition_spouse_employer(self) -> dict | None:
        if not self.married_employed:
            return None
        p = self.rng.choice(self.married_employed)
        s = self.b.persons[p.spouse]
        o = self.b.orgs[s.employer]
        q = f"In what year was the employer of the spouse of {p.name} founded?"
        return self._row("composition", q, self._year_answers(o.founded),
                         [(p.doc_id, p.name), (s.doc_id, s.name), (o.doc_id, o.name)])

    def composition_creator_alma_founder(self) -> dict | None:
        if not self.works_creator_studied:
            return None
        w = self.rng.choice(self.works_creator_studied)
        p = self.b.persons[w.creator]
        o = self.b.orgs[p.alma_mater]
        q = f"Who founded the university where the {self._role(w)} of \"{w.title}\" studied?"
        return self._row("composition", q, self._person_answers(self.b.persons[o.founder]),
                         [(w.doc_id, w.title), (p.doc_id, p.name), (o.doc_id, o.name)])

    def composition_work_capital(self) -> dict | None:
        w = self.rng.choice(self.b.works)
        p = self.b.persons[w.creator]
        c = self.b.cities[p.birthplace]
        country = self.b.countries[c.country]
        if country.capital == c.idx:
            return None
        q = f"What is the capital of the country where the {self._role(w)} of \"{w.title}\" was born?"
        return self._row("composition", q, self._city_answers(self.b.cities[country.capital]),
                         [(w.doc_id, w.title), (p.doc_id, p.name), (c.doc_id, c.name), (country.doc_id, country.name)])

    def composition_founder_currency(self) -> dict | None:
        o = self.rng.choice(self.b.orgs)
        p = self.b.persons[o.founder]
        c = self.b.cities[p.birthplace]
        country = self.b.countries[c.country]
        q = f"What currency is used in the country where the founder of {_the(o.name)} was born?"
        return self._row("composition", q, [country.currency],
                         [(o.doc_id, o.name), (p.doc_id, p.name), (c.doc_id, c.name), (country.doc_id, country.name)])

    def generate(self, n: int) -> list[QAItem]:
        templates = [
            self.bridge_work_birthplace, self.bridge_work_birthyear, self.bridge_org_founder_birthplace,
            self.bridge_person_country, self.bridge_work_org_city, self.bridge_work_org_founder,
            self.bridge_employer_founded, self.bridge_setting_country, self.bridge_city_capital,
            self.comparison_born_first, self.comparison_founded_first, self.comparison_population,
            self.comparison_same_birthplace, self.comparison_released_first, self.comparison_person_vs_creator,
            self.comparison_older_creator, self.composition_work_country, self.composition_founder_city_population,
            self.composition_spouse_employer, self.composition_creator_alma_founder, self.composition_work_capital,
            self.composition_founder_currency,
        ]
        items: list[QAItem] = []
        seen: set[str] = set()
        max_attempts = n * 20
        for attempt in range(max_attempts):
            if len(items) >= n:
                break
            template = templates[attempt % len(templates)] if attempt < len(templates) else self.rng.choice(templates)
            row = template()
            if row is None or row["question"] in seen:
                continue
            seen.add(row["question"])
            row["id"] = f"mh-{len(items):05d}"
            items.append(qa_from_row(row, len(items), "generator"))
        return items


def generate_world(n_articles: int = DEFAULT_N_ARTICLES, seed: int = 0, n_questions: int = DEFAULT_N_QUESTIONS) -> World:
    """Generate a fictional encyclopedia and multi-hop questions (deterministic in its arguments).

    Args:
        n_articles: Number of articles, >= :data:`MIN_ARTICLES`.
        seed: World seed; the same arguments always give the same world, byte for byte.
        n_questions: Number of questions to generate (>= 0); changing it does not change the articles.

    Returns:
        The :class:`World`.

    Raises:
        ValueError: If ``n_articles < MIN_ARTICLES`` or ``n_questions < 0``.
    """
    if n_articles < MIN_ARTICLES:
        raise ValueError(f"n_articles must be >= {MIN_ARTICLES}, got {n_articles}")
    if n_questions < 0:
        raise ValueError(f"n_questions must be >= 0, got {n_questions}")
    builder = _Builder(n_articles, seed)
    builder.build()
    documents = builder.documents()
    questions = _Questions(builder, seed, documents).generate(n_questions)
    return World(seed, n_articles, documents, questions)


def world_cache_path(n_articles: int, seed: int, n_questions: int) -> Path:
    """Where :func:`load_world` caches a world: ``cache_root()/search/worlds/world-v<V>-n<N>-s<seed>-q<Q>.json``."""
    return cache_root() / "search" / "worlds" / f"world-v{WORLD_VERSION}-n{n_articles}-s{seed}-q{n_questions}.json"


_MEMORY: dict[tuple[int, int, int], World] = {}
_CACHE_FILE_MODE = 0o644


def load_world(
    n_articles: int = DEFAULT_N_ARTICLES, seed: int = 0, n_questions: int = DEFAULT_N_QUESTIONS, *, use_cache: bool = True
) -> World:
    """Return the world for these parameters: from memory, else the disk cache, else generated (and cached).

    A corrupt or unreadable cache file is regenerated; a cache directory that cannot be written is skipped
    (the world is still returned).

    Args:
        n_articles: See :func:`generate_world`.
        seed: See :func:`generate_world`.
        n_questions: See :func:`generate_world`.
        use_cache: False skips both the memory and the disk cache.

    Raises:
        ValueError: As :func:`generate_world`.
    """
    key = (n_articles, seed, n_questions)
    if use_cache and key in _MEMORY:
        return _MEMORY[key]
    path = world_cache_path(*key)
    world: World | None = None
    if use_cache and path.is_file():
        try:
            with path.open(encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("version") == WORLD_VERSION:
                world = World.from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            world = None
    if world is None:
        world = generate_world(n_articles, seed, n_questions)
        if use_cache:
            _write_atomic(path, world.to_json())
    if use_cache:
        _MEMORY[key] = world
    return world


def _write_atomic(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False)
        os.chmod(tmp, _CACHE_FILE_MODE)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache is not an error: the world is regenerated next time
