"""Answer scoring for the search environments: SQuAD-style normalisation, exact match and token F1.

Source: the official SQuAD v1.1 evaluation script (``normalize_answer``, ``exact_match_score``, ``f1_score``),
which Search-R1 (``verl/utils/reward_score/qa_em.py``) also uses for its exact-match reward. Two deliberate
differences, both for robustness of an RL reward:

* An empty (or whitespace-only) prediction scores 0 against every gold answer. SQuAD's F1 returns 1 when both
  sides normalise to no tokens, which would reward ``<answer></answer>`` against a gold answer such as ``"The"``.
* Article stripping never erases a whole answer: if removing ``a``/``an``/``the`` would leave nothing (the
  one-letter answer ``"A"``), the articles are kept. Otherwise ``"A"`` would normalise to ``""`` and either
  match everything empty or nothing at all.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable

_ARTICLES_RE = re.compile(r"\b(a|an|the)\b", flags=re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace (SQuAD v1.1), after putting
    the text in Unicode NFC (so a decomposed ``"cafe\\u0301"`` matches ``"café"``; our addition).

    Args:
        text: Any answer string.

    Returns:
        The normalised string (possibly empty for an empty or punctuation-only input). Articles are kept when
        removing them would leave nothing, so ``normalize_answer("A") == "a"``.
    """
    lowered = (text if text.isascii() else unicodedata.normalize("NFC", text)).lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES_RE.sub(" ", no_punct)
    collapsed = " ".join(no_articles.split())
    if not collapsed:
        # Only articles (e.g. the answer "A"): keep them rather than erase the whole answer.
        collapsed = " ".join(no_punct.split())
    return collapsed


def exact_match(prediction: str, gold: str) -> float:
    """1.0 if the normalised prediction equals the normalised gold answer, else 0.0 (empty prediction: 0.0)."""
    pred = normalize_answer(prediction)
    if not pred:
        return 0.0
    return float(pred == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    """Bag-of-tokens F1 between the normalised prediction and gold answer (SQuAD v1.1), in [0, 1].

    Example: ``f1("Paris Paris Paris Paris Paris", "Paris")`` is 2 * (1/5 * 1) / (1/5 + 1) = 1/3.
    An empty prediction scores 0.0.
    """
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return 0.0
    common = Counter(pred_tokens) & Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


METRICS = {"em": exact_match, "f1": f1}


def best_score(prediction: str, golds: Iterable[str], metric: str = "em") -> float:
    """Maximum of ``metric`` over all gold answers (answers plus aliases), as in SQuAD and Search-R1.

    Args:
        prediction: The model's answer text.
        golds: Gold answers and aliases (at least one).
        metric: ``"em"`` (exact match) or ``"f1"`` (token F1).

    Returns:
        A score in [0, 1]; 0.0 when ``golds`` is empty.

    Raises:
        ValueError: If ``metric`` is not ``"em"`` or ``"f1"``.
    """
    try:
        fn = METRICS[metric]
    except KeyError:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}") from None
    return max((fn(prediction, g) for g in golds), default=0.0)
