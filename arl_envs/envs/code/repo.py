"""Generating ``arl/code.repo-v1`` tasks: a repository from a template, an injected bug, visible and hidden tests.

``repo_task(template, bug, seed)`` (id ``repo/<template>/<bug>/<seed>``):

1. fills the template's parameters from ``random.Random("repo/<template>/<bug>/<seed>")``;
2. injects the bug (an exact, unique snippet replacement in one module);
3. draws candidate arguments for every public function, evaluates the correct AND the buggy package on the
   host (both are our generated code, never the agent's) and keeps the cases whose expected value is the
   correct package's result; a case *exposes* the bug when the buggy package returns something else or raises;
4. visible tests: the first case of every function, plus the first exposing case if none of those exposes the
   bug; they are written to ``tests/test_<module>.py`` (``unittest``) in the repository;
5. hidden tests: every visible case again plus up to ``HIDDEN_PER_FUNCTION`` further cases per function
   (never written anywhere the agent can read), at least one of them exposing the bug; reward 1 needs them all;
6. the expert's fix is the unified diff that reverts the snippet (``a/``/``b/`` paths, ``patch -p1``).

A draw that cannot meet 4-5 is redrawn deterministically (see :func:`repo_task`), so every seed resets.
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass
from typing import Any

from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.code.isolated import IsolatedPackage
from arl_envs.envs.code.repo_templates import TEMPLATES, BugSite, RepoTemplate, bug_params, fill
from arl_envs.envs.code.protocol import strict_equal
from arl_envs.envs.code.tasks import TestCase

#: Candidate argument draws per public function.
CANDIDATES_PER_FUNCTION = 12
#: Extra rounds of draws (one per function each) while no visible and hidden-only case both expose the bug.
EXTRA_CANDIDATES = 200
#: Further draws (seeded from the task id and the attempt number, so still deterministic) when a draw exposes
#: the bug in no visible or no hidden-only case.
MAX_REDRAWS = 20
#: Hidden-only cases kept per function.
HIDDEN_PER_FUNCTION = 4
#: Command that runs the visible tests inside the repository.
TEST_COMMAND = "python3 -m unittest discover -s tests -t ."


@dataclass(frozen=True)
class RepoTask:
    """A bug-fixing task.

    Attributes:
        task_id: ``repo/<template>/<bug>/<seed>``.
        template: Template name.
        bug: The injected :class:`BugSite` (placeholders unfilled).
        package: Import name of the package.
        files: The repository as given to the agent (buggy package, visible tests, README).
        correct_files: The correct package sources (``<package>/<module>.py``), for the reference run.
        bug_path: Path of the buggy module (``<package>/<module>.py``).
        correct_source: Correct content of ``bug_path``.
        buggy_source: Buggy content of ``bug_path``.
        visible: Visible test cases (also in ``tests/``).
        hidden: Hidden test cases (include the visible ones).
        initial_visible_passed: Visible cases the buggy repository passes (evaluated on the host, compared
            strictly as the harness does): the baseline of the ``progress`` reward.
        issue: A bug report derived from the first visible case that exposes the bug.
        expert_patch: Unified diff reverting the bug.
    """

    task_id: str
    template: str
    bug: BugSite
    package: str
    files: dict[str, str]
    correct_files: dict[str, str]
    bug_path: str
    correct_source: str
    buggy_source: str
    visible: tuple[TestCase, ...]
    hidden: tuple[TestCase, ...]
    initial_visible_passed: int
    issue: str
    expert_patch: str


def all_bug_ids() -> list[tuple[str, str]]:
    """Every ``(template, bug)`` pair."""
    return [(t.name, b.name) for t in TEMPLATES.values() for b in t.bugs]


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def _call(fn: Any, args: tuple[Any, ...]) -> tuple[bool, Any]:
    try:
        return True, fn(*_copy(args))
    except Exception as exc:  # noqa: BLE001 - the buggy package may raise; that exposes the bug
        return False, f"{type(exc).__name__}: {exc}"


def _package_files(template: RepoTemplate, params: dict[str, Any]) -> dict[str, str]:
    files = {f"{template.package}/__init__.py": f'"""{template.summary}"""\n'}
    for mod, src in template.modules.items():
        files[f"{template.package}/{mod}"] = fill(src, params)
    return files


def _literal(value: Any) -> str:
    return repr(value)


def _test_files(package: str, cases: list[tuple[str, str, TestCase]]) -> dict[str, str]:
    """``tests/test_<module>.py`` files (unittest) for visible ``(module, function, case)`` triples."""
    by_module: dict[str, list[tuple[str, TestCase]]] = {}
    for module, fn, case in cases:
        by_module.setdefault(module, []).append((fn, case))
    files = {"tests/__init__.py": ""}
    for module, items in by_module.items():
        fns = sorted({fn for fn, _ in items})
        lines = ["import unittest", "", f"from {package}.{module} import {', '.join(fns)}", "", ""]
        lines.append(f"class Test{module.title().replace('_', '')}(unittest.TestCase):")
        counters: dict[str, int] = {}
        for fn, case in items:
            counters[fn] = counters.get(fn, 0) + 1
            args = ", ".join(_literal(a) for a in case.args)
            lines += [
                f"    def test_{fn}_{counters[fn]}(self):",
                f"        self.assertEqual({fn}({args}), {_literal(case.expected)})",
                "",
            ]
        lines += ["", 'if __name__ == "__main__":', "    unittest.main()", ""]
        files[f"tests/test_{module}.py"] = "\n".join(lines)
    return files


def _diff(path: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


def repo_task(template_name: str, bug_name: str, seed: int) -> RepoTask:
    """Generate the task ``repo/<template_name>/<bug_name>/<seed>``.

    A draw whose inputs expose the bug in no visible or no hidden-only case is redrawn (parameters and inputs)
    from ``Random("<task id>#redraw<k>")``, k = 1..MAX_REDRAWS, so every seed gives a task, always the same one.

    Raises:
        TaskLoadError: Unknown template or bug, or (a template bug) a bug no draw exposes.
    """
    template = TEMPLATES.get(template_name)
    if template is None:
        raise TaskLoadError(f"unknown repo template {template_name!r}; known: {sorted(TEMPLATES)}")
    bugs = {b.name: b for b in template.bugs}
    if bug_name not in bugs:
        raise TaskLoadError(f"unknown bug {bug_name!r} for template {template_name!r}; known: {sorted(bugs)}")
    bug = bugs[bug_name]
    task_id = f"repo/{template_name}/{bug_name}/{seed}"
    failure: _Unexposed | None = None
    for attempt in range(MAX_REDRAWS + 1):
        rng = random.Random(task_id if attempt == 0 else f"{task_id}#redraw{attempt}")
        try:
            return _generate(task_id, template, bug, rng)
        except _Unexposed as exc:
            failure = exc
    raise TaskLoadError(f"{failure} (after {MAX_REDRAWS} redraws)")


class _Unexposed(TaskLoadError):
    """This draw of parameters and inputs exposes the bug in no visible or no hidden-only case (redrawn)."""


def _visible_indices(per_fn: list[list[tuple[TestCase, bool]]]) -> list[tuple[int, int]]:
    """``(function, case)`` indices of the visible tests: each function's first case, plus the first case that
    exposes the bug when none of those does."""
    visible = [(i, 0) for i, cases in enumerate(per_fn) if cases]
    if not any(per_fn[i][j][1] for i, j in visible):
        first = next(((i, j) for i, cases in enumerate(per_fn) for j, (_, e) in enumerate(cases) if e), None)
        if first is not None:
            visible.append(first)
    return visible


def _exposes_twice(per_fn: list[list[tuple[TestCase, bool]]]) -> bool:
    """Whether a visible case and a hidden-only case both expose the bug."""
    visible = set(_visible_indices(per_fn))
    exposing = {(i, j) for i, cases in enumerate(per_fn) for j, (_, e) in enumerate(cases) if e}
    return bool(exposing & visible) and bool(exposing - visible)


def _generate(task_id: str, template: RepoTemplate, bug: BugSite, rng: random.Random) -> RepoTask:
    """One draw of the task's parameters and test inputs from ``rng``.

    Raises:
        _Unexposed: no visible or no hidden-only case exposes the bug (the caller redraws).
        TaskLoadError: a template bug (the snippet is not unique, the reference raises).
    """
    params = template.params(rng)
    correct = _package_files(template, params)
    bug_path = f"{template.package}/{bug.module}"
    original = fill(bug.original, params)
    replacement = fill(bug.buggy, {**params, **bug_params(template, params)})
    source = correct[bug_path]
    if source.count(original) != 1:
        raise TaskLoadError(f"{task_id}: bug snippet occurs {source.count(original)} times in {bug_path}")
    buggy = dict(correct)
    buggy[bug_path] = source.replace(original, replacement)

    per_fn: list[list[tuple[TestCase, bool]]] = [[] for _ in template.functions]
    seen: set[str] = set()
    buggy_results: dict[tuple[int, int], tuple[bool, Any]] = {}  # (function, case) -> what the bug gives
    # both packages load into private module tables (no sys.modules / sys.meta_path entry)
    good, bad = IsolatedPackage(template.package, correct), IsolatedPackage(template.package, buggy)
    fns = [(good.function(s.module, s.name), bad.function(s.module, s.name)) for s in template.functions]

    def draw(i: int) -> None:
        spec = template.functions[i]
        args = spec.gen(rng)
        key = f"{spec.module}.{spec.name}{args!r}"
        if key in seen:
            return
        seen.add(key)
        ok, expected = _call(fns[i][0], args)
        if not ok:
            raise TaskLoadError(f"{task_id}: reference {spec.module}.{spec.name}{args!r} raised {expected}")
        ok_bad, got = _call(fns[i][1], args)
        exposes = not ok_bad or type(got) is not type(expected) or got != expected
        case = TestCase("call", fn=f"{template.package}.{spec.module}:{spec.name}", args=tuple(args),
                        expected=expected)
        buggy_results[(i, len(per_fn[i]))] = (ok_bad, got)
        per_fn[i].append((case, exposes))

    for _ in range(CANDIDATES_PER_FUNCTION):
        for i in range(len(template.functions)):
            draw(i)
    extra = 0
    # one exposing case for the visible set and one for the hidden-only set: draw more until both exist
    while not _exposes_twice(per_fn) and extra < EXTRA_CANDIDATES:
        for i in range(len(template.functions)):
            draw(i)
        extra += 1

    visible_idx = _visible_indices(per_fn)
    if not any(per_fn[i][j][1] for i, j in visible_idx):
        raise _Unexposed(f"{task_id}: no generated input exposes the bug")
    hidden_idx = list(visible_idx)
    for i, cases in enumerate(per_fn):
        rest = [j for j in range(len(cases)) if (i, j) not in visible_idx]
        exposing = [j for j in rest if cases[j][1]]
        chosen = (exposing[:1] + [j for j in rest if j not in exposing[:1]])[:HIDDEN_PER_FUNCTION]
        hidden_idx += [(i, j) for j in sorted(chosen)]
    if not any(per_fn[i][j][1] for i, j in hidden_idx if (i, j) not in visible_idx):
        raise _Unexposed(f"{task_id}: no hidden-only case exposes the bug")

    visible = tuple(per_fn[i][j][0] for i, j in visible_idx)
    hidden = tuple(per_fn[i][j][0] for i, j in hidden_idx)
    triples = [(template.functions[i].module, template.functions[i].name, per_fn[i][j][0]) for i, j in visible_idx]
    files = dict(buggy)
    files.update(_test_files(template.package, triples))
    files["README.md"] = (
        f"# {template.package}\n\n{template.summary}\n\nRun the tests from the repository root:\n\n"
        f"    {TEST_COMMAND}\n"
    )
    issue = _issue(template, per_fn, visible_idx, buggy_results, task_id)
    return RepoTask(
        task_id=task_id,
        template=template.name,
        bug=bug,
        package=template.package,
        files=files,
        correct_files=correct,
        bug_path=bug_path,
        correct_source=correct[bug_path],
        buggy_source=buggy[bug_path],
        visible=visible,
        hidden=hidden,
        initial_visible_passed=sum(  # compared strictly, as the harness does
            buggy_results[i, j][0] and strict_equal(buggy_results[i, j][1], per_fn[i][j][0].expected)
            for i, j in visible_idx
        ),
        issue=issue,
        expert_patch=_diff(bug_path, buggy[bug_path], correct[bug_path]),
    )


def _issue(template: RepoTemplate, per_fn: list, visible_idx: list, buggy_results: dict, task_id: str) -> str:
    for i, j in visible_idx:
        case, exposes = per_fn[i][j]
        if not exposes:
            continue
        spec = template.functions[i]
        ok, got = buggy_results[i, j]
        args = ", ".join(_literal(a) for a in case.args)
        call = f"{template.package}.{spec.module}.{spec.name}({args})"
        what = f"returns {got!r}" if ok else f"raises {got}"
        return f"Bug report: `{call}` {what}, but it should return {case.expected!r}."
    raise TaskLoadError(f"{task_id}: no visible case exposes the bug")


def parse_repo_id(task_id: str) -> tuple[str, str, int]:
    """``"repo/<template>/<bug>/<seed>"`` -> ``(template, bug, seed)``.

    Raises:
        TaskLoadError: Malformed id.
    """
    parts = task_id.split("/")
    if len(parts) != 4 or parts[0] != "repo":
        raise TaskLoadError(f"not a repo task id (repo/<template>/<bug>/<seed>): {task_id!r}")
    try:
        return parts[1], parts[2], int(parts[3])
    except ValueError:
        raise TaskLoadError(f"malformed repo task id {task_id!r}") from None
