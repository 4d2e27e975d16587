"""Answer scoring: SQuAD normalisation, exact match and F1, with the issue's edge cases."""

from __future__ import annotations

import pytest

from arl_envs.envs.search.scoring import best_score, exact_match, f1, normalize_answer


def test_normalize_squad_rules() -> None:
    assert normalize_answer("  The  Eiffel-Tower! ") == "eiffeltower"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("") == ""


def test_one_letter_answer_survives_article_stripping() -> None:
    assert normalize_answer("A") == "a"
    assert exact_match("A", "A") == 1.0
    assert f1("A", "A") == 1.0
    assert exact_match("a.", "A") == 1.0
    assert exact_match("B", "A") == 0.0


def test_empty_answer_scores_zero() -> None:
    assert exact_match("", "Paris") == 0.0
    assert f1("", "Paris") == 0.0
    assert exact_match("   ", "Paris") == 0.0
    assert exact_match("", "the") == 0.0  # SQuAD would give 1 for "" == "" after normalisation


def test_list_of_candidates_is_not_an_exact_match() -> None:
    assert exact_match("A or B or C", "B") == 0.0


def test_no_substring_credit_for_numbers() -> None:
    assert exact_match("100", "10") == 0.0
    assert f1("100", "10") == 0.0


def test_f1_repeated_token() -> None:
    assert f1("Paris Paris Paris Paris Paris", "Paris") == pytest.approx(1 / 3)
    assert exact_match("Paris Paris Paris Paris Paris", "Paris") == 0.0


def test_best_score_over_aliases_and_metric() -> None:
    golds = ["Republic of Velmaria", "Velmaria"]
    assert best_score("velmaria", golds) == 1.0
    assert best_score("the republic of velmaria", golds) == 1.0
    assert best_score("Velmaria city", golds, "f1") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert best_score("x", [], "em") == 0.0
    with pytest.raises(ValueError, match="metric"):
        best_score("x", golds, "bleu")
