"""Multi-hop questions over a built fictional encyclopedia (:class:`QuestionBuilder`).

22 templates in the style of HotpotQA (*bridge*, *comparison*), 2WikiMultihopQA (*bridge-comparison*, here under
``comparison`` with 3 or 4 hops) and MuSiQue (*composition* chains of 3-4 single-hop steps). Every question has a
gold answer with aliases, the ids of its supporting articles in reasoning order, and the expert's search queries;
a question whose answer appears in its first article is dropped.
"""

from __future__ import annotations

import random

from arl_envs.envs.search.corpus import Document, QAItem, qa_from_row
from arl_envs.envs.search.encyclopedia import (
    CREATORS,
    NO,
    WORLD_VERSION,
    YES,
    City,
    Country,
    EncyclopediaBuilder,
    Org,
    Person,
    Work,
    normal_words,
    the_org,
    with_commas,
)


class QuestionBuilder:
    """Question templates over a built world. Each template returns a row dict or None (not applicable)."""

    def __init__(self, b: EncyclopediaBuilder, seed: int, documents: list[Document]):
        self.b = b
        self.doc_words = {d.id: f" {normal_words(d.title + ' ' + d.text)} " for d in documents}
        self.rng = random.Random(f"arl-search-questions-{WORLD_VERSION}-{seed}")
        self.works_with_org = [w for w in b.works if w.org is not None]
        self.works_with_setting = [w for w in b.works if w.setting is not None]
        self.employed = [p for p in b.persons if p.employer is not None]
        self.studied = [p for p in b.persons if p.alma_mater is not None]
        self.married_employed = [p for p in b.persons if p.spouse is not None and b.persons[p.spouse].employer is not None]
        self.by_birthplace = b.natives
        self.works_by_kind: dict[str, list[Work]] = {}
        for w in b.works:
            self.works_by_kind.setdefault(w.kind, []).append(w)
        creators_with_alma = {p.idx for p in self.studied}
        self.works_creator_studied = [w for w in b.works if w.creator in creators_with_alma]

    def _leaks(self, answers: list[str], doc_id: str) -> bool:
        """Whether an answer appears (as whole words) in the first article of a chain, e.g. by coincidence a
        film set in the city where its studio is based: such a question could be answered from one article."""
        text = self.doc_words[doc_id]
        return any(f" {normal_words(a)} " in text for a in answers)

    # Aliases -------------------------------------------------------------
    def _person_answers(self, p: Person) -> list[str]:
        return [p.name]

    def _city_answers(self, c: City) -> list[str]:
        return [c.name, f"{c.name}, {self.b.countries[c.country].name}"]

    def _country_answers(self, c: Country) -> list[str]:
        return [c.name, c.official]

    def _org_answers(self, o: Org) -> list[str]:
        return [o.name] + ([o.acronym] if o.acronym else [])

    @staticmethod
    def _year_answers(n: int) -> list[str]:
        return [str(n)]

    @staticmethod
    def _count_answers(n: int) -> list[str]:
        return [str(n)] + ([with_commas(n)] if n >= 1000 else [])

    def _role(self, w: Work) -> str:
        return CREATORS[self.b.persons[w.creator].occupation][1]

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
        q = f"Where was the founder of {the_org(o.name)} born?"
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
        verb = CREATORS[self.b.persons[w.creator].occupation][4].replace(" by", "")
        q = f"In which city is the {o.kind} that {verb} \"{w.title}\" based?"
        return self._row("bridge", q, self._city_answers(self.b.cities[o.hq]), [(w.doc_id, w.title), (o.doc_id, o.name)])

    def bridge_work_org_founder(self) -> dict | None:
        w = self.rng.choice(self.works_with_org)
        o = self.b.orgs[w.org]
        verb = CREATORS[self.b.persons[w.creator].occupation][4].replace(" by", "")
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
        q = f"Which was founded earlier, {the_org(o1.name)} or {the_org(o2.name)}?"
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
        answer = YES if p1.birthplace == p2.birthplace else NO
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
        q = f"What is the population of the city where the founder of {the_org(o.name)} was born?"
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
        q = f"What currency is used in the country where the founder of {the_org(o.name)} was born?"
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
