"""The fictional encyclopedia of ``arl/search.multihop-v1``: entities, their relations, and one article each.

:class:`EncyclopediaBuilder` draws, from a seed, countries, cities, people, organisations and works (novels,
films, albums, paintings) with attributes (years, populations, currencies, occupations) and relations (born in,
located in, founded by, written by, published by, employed by, studied at, married to, set in), then writes one
article per entity. Articles are written so that no multi-hop question can be answered from a single article:
a person's article names their birthplace but not its country, a city's article names its country but not the
country's capital, a work's article names its creator but not the creator's birthplace. The questions over the
built world are :mod:`arl_envs.envs.search.questions`'s; caching and the public entry points are
:mod:`arl_envs.envs.search.world`'s.

Determinism: only :class:`random.Random` seeded with strings is used (stable across Python versions and
platforms), never ``hash()`` or set iteration order.
"""

from __future__ import annotations

import bisect
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from arl_envs.envs.search.corpus import Document

#: Bump when generation changes in any way: it is part of every cache key.
WORLD_VERSION = 2

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
YES, NO = "yes", "no"
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
CREATORS: dict[str, tuple[str, str, str, str, str]] = {
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
class Country:
    """A country: names, currency, founding year, its cities (indices) and capital."""

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
class City:
    """A city: its country (index), population, founding year and trade."""

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
class Person:
    """A person: names, life years, birthplace, occupation, and their employer, school, spouse and works."""

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
class Org:
    """An organisation: kind, founding year, headquarters city, founder, acronym."""

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
class Work:
    """A work (novel, film, album, painting): genre, year, creator, publishing organisation, setting."""

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


def the_org(org_name: str) -> str:
    """An organisation name as used in running text: "the University of X", but "Foo Press"."""
    return f"the {org_name}" if org_name.split()[0] in ("University", "Museum") else org_name


def normal_words(text: str) -> str:
    """Lower-case words separated by single spaces (for whole-word containment tests)."""
    return " ".join(re.findall(r"\w+", text.lower()))


def with_commas(n: int) -> str:
    """``1234567`` -> ``"1,234,567"``."""
    return f"{n:,}"


class EncyclopediaBuilder:
    """Builds the entities (:meth:`build`), then one article each (:meth:`documents`); the questions over them are
    :class:`~arl_envs.envs.search.questions.QuestionBuilder`'s."""

    def __init__(self, n_articles: int, seed: int):
        self.n = n_articles
        self.seed = seed
        self.rng = random.Random(f"arl-search-world-{WORLD_VERSION}-{seed}")
        self.names = _Names(self.rng)
        self.countries: list[Country] = []
        self.cities: list[City] = []
        self.persons: list[Person] = []
        self.orgs: list[Org] = []
        self.works: list[Work] = []

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
        self.natives: dict[int, list[Person]] = {}
        for p in self.persons:
            self.natives.setdefault(p.birthplace, []).append(p)
        self.founded_by: dict[int, list[Org]] = {}
        for o in self.orgs:
            self.founded_by.setdefault(o.founder, []).append(o)
        self.staff: dict[int, list[Person]] = {}
        for p in self.persons:
            if p.employer is not None:
                self.staff.setdefault(p.employer, []).append(p)
        self.produced: dict[int, list[Work]] = {}
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
            self.countries.append(Country(i, name, demonym, official, currency, founded))

    def _cities(self, n: int) -> None:
        rng = self.rng
        for i in range(n):
            # The first cities cover every country once, so every country has a capital.
            country = i if i < len(self.countries) else rng.randrange(len(self.countries))
            name = self.names.unique(lambda: self.names.root((1, 2)) + rng.choice(_CITY_SUFFIXES))
            population = _spread(rng, *_POPULATION_RANGE)
            founded = rng.randint(_FIRST_YEAR - 600, _LAST_YEAR - 200)
            city = City(i, name, country, population, founded, rng.choice(_CITY_TRADES))
            self.cities.append(city)
            self.countries[country].cities.append(i)
        for country in self.countries:
            country.capital = max(country.cities, key=lambda c: self.cities[c].population)

    def _persons(self, n: int) -> None:
        rng = self.rng
        creators = list(CREATORS)
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
            person = Person(
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

    def _org_name(self, kind: str, founder: Person, hq: City) -> str:
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
            self.orgs.append(Org(i, name, kind, founded, hq.idx, founder.idx, acronym))

    def _sorted_by_founding(self, kinds: tuple[str, ...]) -> tuple[list[Org], list[int]]:
        orgs = sorted((o for o in self.orgs if o.kind in kinds), key=lambda o: (o.founded, o.idx))
        return orgs, [o.founded for o in orgs]

    def _pick_founded_by(self, orgs: tuple[list[Org], list[int]], year: int) -> Org | None:
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
            if person.occupation not in CREATORS and rng.random() < 0.85:
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
        creators = [p for p in self.persons if p.occupation in CREATORS]
        by_kind = {k: self._sorted_by_founding((k,)) for k in _ORG_KINDS}
        for i in range(n):
            creator = rng.choice(creators)
            kind, _, _, org_kind, _ = CREATORS[creator.occupation]
            last = min(creator.death or _LAST_YEAR, _LAST_YEAR)
            year = min(creator.birth + rng.randint(*_WORK_AGE), last)
            publisher = self._pick_founded_by(by_kind[org_kind], year)
            org = publisher.idx if publisher is not None and rng.random() < 0.9 else None
            setting = rng.randrange(len(self.cities)) if kind in ("novel", "film") and rng.random() < 0.7 else None
            title = self.names.unique(lambda k=kind: self._work_title(k))
            self.works.append(Work(i, title, kind, rng.choice(_GENRES[kind]), year, creator.idx, org, setting))
            creator.works.append(i)

    # ----------------------------------------------------------------- articles
    def documents(self) -> list[Document]:
        docs = [self._country_doc(c) for c in self.countries]
        docs += [self._city_doc(c) for c in self.cities]
        docs += [self._person_doc(p) for p in self.persons]
        docs += [self._org_doc(o) for o in self.orgs]
        docs += [self._work_doc(w) for w in self.works]
        return docs

    def _country_doc(self, c: Country) -> Document:
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

    def _city_doc(self, c: City) -> Document:
        country = self.countries[c.country]
        capital = country.capital == c.idx
        role = f"the capital of {country.name}" if capital else f"a city in {country.name}"
        text = (
            f"{c.name} is {role}. It was founded in {c.founded} and has a population of "
            f"{with_commas(c.population)}. {c.name} is known for its {c.trade}. "
        )
        natives = self.natives.get(c.idx, [])[:3]
        if natives:
            text += f"Notable people born in {c.name} include {', '.join(p.name for p in natives)}."
        return Document(c.doc_id, c.name, text.strip())

    def _person_doc(self, p: Person) -> Document:
        rng = self.rng
        he, his = p.pronoun, {"he": "his", "she": "her"}[p.pronoun]
        life = f"{p.birth}–{p.death}" if p.death else f"born {p.birth}"
        born = self.cities[p.birthplace].name
        tense = "was" if p.death else "is"
        text = f"{p.name} ({life}) {tense} {_a(p.occupation)} {p.occupation} born in {born} in {p.birth}. "
        if p.works:
            kind, role = CREATORS[p.occupation][0], CREATORS[p.occupation][1]
            titles = [self.works[w].title for w in p.works[:3]]
            text += f"As {_a(role)} {role}, {p.family} is remembered for the {kind}"
            text += f"{'s' if len(titles) > 1 else ''} {', '.join(titles)}. "
        style1, style2 = rng.sample(_STYLES, 2)
        text += f"Critics described {his} work as {style1} and {style2}. "
        if p.alma_mater is not None:
            text += f"{p.family} studied at {the_org(self.orgs[p.alma_mater].name)}. "
        if p.employer is not None:
            text += f"{he.capitalize()} later worked for {the_org(self.orgs[p.employer].name)}. "
        if p.spouse is not None:
            text += f"{p.family} was married to {self.persons[p.spouse].name}. "
        founded = self.founded_by.get(p.idx, [])[:2]
        if founded:
            text += f"{he.capitalize()} founded {' and '.join(the_org(o.name) for o in founded)}. "
        if p.death:
            text += f"{p.family} died in {p.death}."
        return Document(p.doc_id, p.name, text.strip())

    def _org_doc(self, o: Org) -> Document:
        founder = self.persons[o.founder]
        hq = self.cities[o.hq]
        a_or_an = _a(o.kind)
        alias = f" ({o.acronym})" if o.acronym else ""
        emblem_adj, emblem_noun = self.rng.choice(_ADJECTIVES), self.rng.choice(_NOUNS)
        text = (
            f"{the_org(o.name)[:1].upper()}{the_org(o.name)[1:]}{alias} is {a_or_an} {o.kind} based in {hq.name}. It was founded in {o.founded} by "
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

    def _work_doc(self, w: Work) -> Document:
        creator = self.persons[w.creator]
        _, role, made_by, _, org_verb = CREATORS[creator.occupation]
        text = f"{w.title} is {_a(w.genre)} {w.genre} {made_by} {creator.name} in {w.year}. "
        if w.org is not None:
            text += f"It was {org_verb} {the_org(self.orgs[w.org].name)}. "
        if w.setting is not None:
            text += f"The story is set in {self.cities[w.setting].name}. "
        text += f"Reviewers called it {self.rng.choice(_STYLES)}, and the {role} returned to its themes in later years."
        return Document(w.doc_id, w.title, text)
