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

Modules: :mod:`~arl_envs.envs.search.encyclopedia` builds the entities and writes the articles, :mod:`~arl_envs.envs.search.questions` builds the questions; this one holds :class:`World`,
:func:`generate_world` and the cache (:func:`load_world`).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from arl_envs.envs.search.corpus import Document, QAItem, cache_root, qa_from_row
from arl_envs.envs.search.encyclopedia import WORLD_VERSION, EncyclopediaBuilder
from arl_envs.envs.search.questions import QuestionBuilder

#: Default number of articles of the ``arl/search.multihop-v1`` world.
DEFAULT_N_ARTICLES = 3000
#: Default number of generated questions.
DEFAULT_N_QUESTIONS = 3000
#: Smallest world that still has every entity kind and every question template.
MIN_ARTICLES = 60


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
    builder = EncyclopediaBuilder(n_articles, seed)
    builder.build()
    documents = builder.documents()
    questions = QuestionBuilder(builder, seed, documents).generate(n_questions)
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
