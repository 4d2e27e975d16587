"""The tiny sample corpus and QA file shipped for ``arl/search.qa-v1``, and the code that makes them.

The sample is a small generated world (:func:`arl_envs.envs.search.world.generate_world`) written in the formats
real Search-R1 setups use: the corpus as wiki-18 JSONL (``{"id": "0", "contents": "\\"Title\\"\\ntext"}``, numeric
string ids) and the questions as JSONL rows ``{"id", "question", "golden_answers", "supporting_ids", "type",
"hops"}`` (``supporting_ids`` and the last two keys are optional extras our loader understands).

Regenerate (deterministic; a test checks the shipped files are identical)::

    python -m arl_envs.envs.search.sample arl_envs/envs/search/data
"""

from __future__ import annotations

import sys
from pathlib import Path

from arl_envs.envs.search.corpus import Document, QAItem, write_corpus, write_qa
from arl_envs.envs.search.world import generate_world

SAMPLE_N_ARTICLES = 200
SAMPLE_N_QUESTIONS = 100
SAMPLE_SEED = 7
CORPUS_FILENAME = "sample_corpus.jsonl"
QA_FILENAME = "sample_qa.jsonl"


def sample_data() -> tuple[list[Document], list[QAItem]]:
    """The sample corpus (wiki-18 style numeric ids) and its questions (ids ``"sample-<3 digits>"``)."""
    world = generate_world(SAMPLE_N_ARTICLES, SAMPLE_SEED, SAMPLE_N_QUESTIONS)
    new_id = {doc.id: str(i) for i, doc in enumerate(world.documents)}
    docs = [Document(new_id[d.id], d.title, d.text) for d in world.documents]
    items = [
        QAItem(
            id=f"sample-{n:03d}",
            question=q.question,
            answers=q.answers,
            supporting_ids=tuple(new_id[s] for s in q.supporting_ids),
            qtype=q.qtype,
            hops=q.hops,
        )
        for n, q in enumerate(world.questions)
    ]
    return docs, items


def write_sample(directory: str | Path) -> tuple[Path, Path]:
    """Write ``sample_corpus.jsonl`` and ``sample_qa.jsonl`` into ``directory`` (created if needed).

    Returns:
        ``(corpus_path, qa_path)``.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    docs, items = sample_data()
    corpus_path, qa_path = out / CORPUS_FILENAME, out / QA_FILENAME
    write_corpus(docs, corpus_path)
    write_qa(items, qa_path)
    return corpus_path, qa_path


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent / "data")
    for path in write_sample(target):
        print(path)
