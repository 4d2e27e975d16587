"""The web task interface: registry, answer and URL helpers, example tasks (no browser needed)."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from arl_envs.envs.web import tasks
from arl_envs.envs.web.task import (
    REGISTRY,
    ExpertError,
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    answer_matches,
    canonical_url,
    js_value,
    normalize_answer,
    register_task,
    urls_match,
)


@pytest.mark.parametrize(
    "answer, expected, ok",
    [
        ("1,000", "1000", True),
        ("1000", "1,000", True),
        ("$1,000.50", "1000.5", True),
        ("7.0", "7", True),
        ("12%", "12", True),
        ("1001", "1000", False),
        ("10000", "1,000", False),
        ("New York", "NYC |OR| New York", True),
        ("  nyc. ", "NYC |OR| New York", True),
        ("York", "NYC |OR| New York", False),
        ("New York City", "NYC |OR| New York", False),
        ('"Paris"', "paris", True),
        ("", "x |OR| ", False),
        (None, "x", False),
        ("1,00", "100", False),  # not a thousands grouping: text, not the number 100
        # Exact numbers: float rounding must not turn a wrong answer into the right one.
        ("2184.99999999999999999", "2185", False),
        ("12345678901234567891", "12345678901234567890", False),
        ("1000.0000", "1,000", True),
        # A currency sign goes before or after the number, never inside it.
        ("1$0$0$0", "1000", False),
        ("1000 €", "1000", True),
        ("-$5", "-5", True),
    ],
)
def test_answer_matches(answer, expected, ok):
    assert answer_matches(answer, expected) is ok


def test_answer_matches_is_exact_under_a_lowered_decimal_context():
    """Another library in the process may lower ``decimal.getcontext().prec``; the check stays exact."""
    import decimal

    with decimal.localcontext() as ctx:
        ctx.prec = 5
        assert not answer_matches("2184.99999999999999999", "2185")
        assert not answer_matches("12345678901234567891", "12345678901234567890")
        assert answer_matches("1,000.50", "1000.5")
        assert normalize_answer("0.000123400") == "0.0001234"


def test_normalize_answer_collapses_space_and_case():
    assert normalize_answer("  Hello\n  World!  ") == "hello world"


@pytest.mark.parametrize(
    "a, b, ok",
    [
        ("//catalog", "/catalog", True),
        ("/catalog/", "/catalog", True),
        ("/reports/viewedX", "/reports/viewed", False),
        ("/reports/viewed", "/reports", False),
        ("/a/./b/../c", "/a/c", True),
        ("/p?b=2&a=1", "/p?a=1&b=2", True),
        ("/p?a=1", "/p?a=2", False),
        ("/p#frag", "/p", True),
        ("http://ARL.test//x", "http://arl.test/x", True),
    ],
)
def test_urls_match(a, b, ok):
    assert urls_match(a, b) is ok


def test_canonical_url_relative_to_base():
    base = "http://arl.test/shop"
    assert canonical_url("http://arl.test/shop//catalog/", base) == "/catalog"
    assert canonical_url("http://arl.test/shop", base) == "/"
    assert canonical_url("http://arl.test/shop/", base) == "/"
    # a sibling task whose name extends the base is NOT under it
    assert canonical_url("http://arl.test/shopping/x", base) == "http://arl.test/shopping/x"


def test_act_round_trips_through_ast():
    text = 'a\nb it\'s "q" \\ done'
    s = act("fill", "12", text)
    call = ast.parse(s, mode="eval").body
    assert isinstance(call, ast.Call) and call.func.id == "fill"
    assert [a.value for a in call.args] == ["12", text]
    assert act("scroll", 0, 250) == "scroll(0, 250)"
    with pytest.raises(TypeError):
        act("click", True)


def test_js_value_cannot_close_script():
    v = js_value({"x": "</script><script>alert(1)</script>"})
    assert "</script" not in v and "<" not in v


def test_register_task_rejects_bad_names_and_duplicates():
    class Bad(WebTask):
        """A complete task class whose name is malformed: registration refuses it before any hook runs."""

        name = "Bad Name"
        description = "x"

        def setup(self, rng):  # pragma: no cover - never reached: registration fails first
            return {}

        def validate(self, state, goal, answer):  # pragma: no cover - never reached
            return False

        def expert(self, view, goal):  # pragma: no cover - never reached
            return []

    with pytest.raises(ValueError):
        register_task(Bad)
    Bad.name = "click-button"
    with pytest.raises(ValueError, match="duplicate"):
        register_task(Bad)
    with pytest.raises(TypeError):
        register_task(int)
    assert REGISTRY["click-button"].__name__ == "ClickButton"


def test_expert_view_bid_raises_when_nothing_matches():
    view = ExpertView("tree", "/index.html", {}, resolver=lambda sel: ["a3", "a4"] if sel == "button" else [])
    assert view.bid("button") == "a3" and view.bids("button") == ["a3", "a4"]
    with pytest.raises(ExpertError):
        view.bid("#nothing")


@pytest.mark.parametrize("name", sorted(tasks.load_all()))
def test_every_task_is_seeded_and_well_formed(name):
    cls = REGISTRY[name]
    a, b = cls().setup(np.random.default_rng(3)), cls().setup(np.random.default_rng(3))
    assert isinstance(a, TaskInstance) and a == b
    assert "index.html" in a.files and "arlState" in str(a.files["index.html"])
    assert a.utterance and cls.n_subgoals >= 1 and cls.max_turns >= 1
    # an empty / broken page state never raises in the validator and is never success
    score = cls().validate({"page_ok": False, "url": "/index.html", "tabs": [], "active_tab": 0}, a.goal, None)
    assert isinstance(score, Score) and not score.success
    seeds = {repr(cls().setup(np.random.default_rng(s)).goal) for s in range(10)}
    assert len(seeds) > 1, "the instance does not depend on the seed"


def test_click_button_validator_exact():
    t = REGISTRY["click-button"]()
    inst = t.setup(np.random.default_rng(0))
    target = inst.goal["label"]
    assert t.validate({"clicked": target}, inst.goal, None) == Score(True, True, frozenset({"clicked-target"}))
    wrong = t.validate({"clicked": target + "x"}, inst.goal, None)
    assert wrong.done and not wrong.success and not wrong.subgoals
    assert not t.validate({"clicked": None}, inst.goal, None).done


def test_enter_text_validator_exact():
    t = REGISTRY["enter-text"]()
    goal = {"text": "Amber river"}
    assert t.validate({"value": "Amber river", "submitted": None}, goal, None).subgoals == {"typed"}
    s = t.validate({"value": "amber river", "submitted": "amber river"}, goal, None)
    assert s.done and not s.success and not s.subgoals
    assert t.validate({"value": "Amber river", "submitted": "Amber river"}, goal, None).success
