"""The house rules that keep the code base easy to carry on, checked on the source (``ast``, no import needed).

* Imports point down: ``import arl_envs`` loads no domain module (``arl_envs.envs.*``) and nothing of
  ``arl_baselines``; no ``arl_envs`` module imports ``arl_baselines`` (the command line aside: it is the top of the
  house and runs the baseline's commands); no import cycle in ``arl_envs`` or ``arl_baselines``; benchmarks import
  from the packages, never from test modules.
* The env contract is closed: no env but the PettingZoo games defines ``reset``, ``step`` or ``_parse``
  (``arl_envs.core.env.SEALED_METHODS``), and ``check_conformance`` flags a subclass that does.
* Product code says what it does now: no dates and no ``issue N`` tags in ``arl_envs/`` and ``baselines/`` (history
  goes to CHANGELOG.md, numbers to benchmarks/RESULTS.md).

Which imports count for cycles: every ``import``/``from ... import`` statement of a file, at module level, inside
functions and under ``if TYPE_CHECKING:`` alike. A function-level import still ties the two files together (it
only defers the tie to a call), and a type-only import is a dependency of the reader, so a cycle through either
is a cycle of the design. An import names the module it names (``from a.b import c`` is ``a.b.c`` when that is a
module, else ``a.b``); the parent packages it also initialises are not edges (every module would otherwise be in
a cycle with ``arl_envs/__init__.py``). ``importlib.import_module`` of a computed name (Gymnasium entry points,
the game modules of the multi-agent view) is not an edge: that is the lazy registration the rules ask for.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"arl_envs": ROOT / "arl_envs", "arl_baselines": ROOT / "baselines" / "arl_baselines"}
#: PettingZoo's env classes: a class derived from one (by name, in ``arl_envs/envs``) is a multi-agent game with
#: PettingZoo's own ``reset``/``step``, not an ``AgentEnv``.
PETTINGZOO_ROOTS = {"AECEnv", "ParallelEnv", "turn_based_aec_to_parallel_wrapper"}
#: ``issue 12``, ``issues 9, 11``, ``(issue #5)``; ISO dates ``2026-12-01``.
HISTORY_TAG = re.compile(r"\bissues?\s*#?\d+|\b(?:19|20)\d\d-[01]\d-[0-3]\d\b", re.IGNORECASE)


# ----------------------------------------------------------------------------- the import graph
@cache
def modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package ``__init__``) for both packages."""
    out = {}
    for directory in PACKAGES.values():
        for path in sorted(directory.rglob("*.py")):
            parts = list(path.relative_to(directory.parent).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def imports_of(path: Path, name: str, is_pkg: bool, *, module_level_only: bool = False) -> set[str]:
    """Absolute names of the modules ``path`` imports (see the module docstring for what counts).

    Args:
        module_level_only: Only what runs when the module is imported: statements outside functions and outside
            ``if TYPE_CHECKING:`` blocks.
    """
    known = modules()
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if module_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if module_level_only and isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]))
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in known else target)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


@cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the modules of both packages it imports (all imports)."""
    mods = modules()
    return {m: frozenset(t for t in imports_of(p, m, pkg) if t in mods and t != m) for m, (p, pkg) in mods.items()}


def cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def loaded_by_import(top: str) -> set[str]:
    """Every module that ``import top`` runs, by module-level imports (parent packages included)."""
    mods = modules()
    seen: set[str] = set()
    todo = [top]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in mods:
            continue
        path, is_pkg = mods[name]
        for target in imports_of(path, name, is_pkg, module_level_only=True):
            parts = target.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return seen


# ----------------------------------------------------------------------------- imports point down
def test_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_no_import_cycles() -> None:
    found = cycles(graph())
    detail = [" <-> ".join(c) + ": " + "; ".join(f"{m} imports {sorted(graph()[m] & set(c))}" for m in c)
              for c in found]
    assert not found, "import cycles:\n" + "\n".join(detail)


def test_import_arl_envs_loads_no_domain_module_and_no_baseline() -> None:
    static = loaded_by_import("arl_envs")
    assert "arl_envs.registration" in static and "arl_envs.core.env" in static  # the walk does reach modules
    bad = sorted(m for m in static if m.startswith(("arl_envs.envs.", "arl_baselines")))
    assert not bad, f"import arl_envs runs these modules at import time: {bad}"
    # and the interpreter agrees
    out = subprocess.run(
        [sys.executable, "-c", "import sys, arl_envs; print(' '.join(sorted(sys.modules)))"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    bad = [m for m in out if m.startswith(("arl_envs.envs.", "arl_baselines"))]
    assert not bad, f"import arl_envs loaded {bad}"


def test_arl_envs_never_imports_arl_baselines() -> None:
    bad = []
    for name, (path, is_pkg) in modules().items():
        if not name.startswith("arl_envs"):
            continue
        up = sorted(t for t in imports_of(path, name, is_pkg) if t.split(".")[0] == "arl_baselines")
        if up:
            bad.append(f"{path.relative_to(ROOT)} imports {up}")
    assert not bad, "arl_envs must not import arl_baselines:\n" + "\n".join(bad)


def test_benchmarks_import_no_test_module() -> None:
    bad = []
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        for target in imports_of(path, f"benchmarks.{path.stem}", False):
            leaf = target.split(".")[-1]
            if target.split(".")[0] == "arl_envs_tests" or leaf == "conftest" or leaf.startswith("test_"):
                bad.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not bad, "benchmarks import test modules:\n" + "\n".join(bad)


# ----------------------------------------------------------------------------- the contract is closed
def test_no_env_defines_reset_step_or_parse() -> None:
    from arl_envs.core.env import SEALED_METHODS

    classes = []
    bases: dict[str, set[str]] = {}
    for path in sorted((ROOT / "arl_envs" / "envs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                classes.append((path.relative_to(ROOT).as_posix(), node))
                bases.setdefault(node.name, set()).update(ast.unparse(b).split(".")[-1] for b in node.bases)

    def pettingzoo(name: str, seen: frozenset[str] = frozenset()) -> bool:
        return name in PETTINGZOO_ROOTS or any(
            pettingzoo(b, seen | {name}) for b in bases.get(name, ()) if b not in seen)

    assert pettingzoo("TextGameEnv") and not pettingzoo("GameSeatEnv")
    bad = []
    for rel, node in classes:
        if pettingzoo(node.name):
            continue
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in SEALED_METHODS:
                bad.append(f"{rel}: {node.name}.{item.name}")
    assert not bad, "use the AgentEnv hooks (parse_action, _reset_info, _step_info, Transition) instead of:\n" + \
        "\n".join(bad)


def test_every_registered_env_class_uses_the_hooks() -> None:
    from arl_envs.core.env import sealed_overrides
    from arl_envs.registration import ENVS

    classes = set()
    for row in ENVS:
        module, _, attr = row.entry_point.partition(":")
        try:
            classes.add(getattr(importlib.import_module(module), attr))
        except ImportError as exc:  # an optional extra missing here; the static test above still covers it
            pytest.skip(f"{row.id}: {exc}")
    bad = [name for cls in classes for name in sealed_overrides(cls)]
    assert not bad, f"registered env classes override sealed methods: {bad}"


def test_check_conformance_flags_a_subclass_that_overrides_step() -> None:
    from arl_envs.envs.example.guess import GuessEnv
    from arl_envs.testing import check_conformance

    class PatchedGuess(GuessEnv):
        def step(self, action: str):  # type: ignore[override]
            return super().step(action)

    others = ("gymnasium_check_env", "api_misuse", "determinism", "reset_sequence", "expert_solves",
              "random_agent", "fuzz", "close_twice", "snapshot", "process_state")
    bad = check_conformance(PatchedGuess, skip=others)
    assert [(r.name, r.passed) for r in bad.results] == [("contract_hooks", False)]
    assert "PatchedGuess.step" in bad.results[0].message
    good = check_conformance(GuessEnv, skip=others)
    assert [(r.name, r.passed) for r in good.results] == [("contract_hooks", True)]


@pytest.mark.parametrize("leak", ["decimal", "numpy", "random", "recursion", "cwd", "environ", "close"])
def test_check_conformance_flags_an_episode_that_changes_process_state(leak: str, tmp_path) -> None:
    import decimal
    import itertools
    import os
    import random

    import numpy as np

    from arl_envs.envs.example.guess import GuessEnv
    from arl_envs.testing import check_conformance

    here, resets, limit = os.getcwd(), itertools.count(), sys.getrecursionlimit()

    class LeakyGuess(GuessEnv):
        def _reset_task(self, task_id):
            if leak == "decimal":
                decimal.getcontext().prec = 12
            elif leak == "numpy":
                np.random.seed(7)
            elif leak == "random":
                random.random()
            elif leak == "recursion":
                sys.setrecursionlimit(sys.getrecursionlimit() + 1)
            elif leak == "cwd":  # a new directory on every reset
                target = tmp_path / f"d{next(resets)}"
                target.mkdir()
                os.chdir(target)
            elif leak == "environ":
                os.environ["ARL_LEAK_TEST"] = os.environ.get("ARL_LEAK_TEST", "") + "x"
            return super()._reset_task(task_id)

        def _close(self):
            if leak == "close":
                os.environ["ARL_LEAK_TEST"] = "closed"
            super()._close()

    others = ("gymnasium_check_env", "contract_hooks", "api_misuse", "determinism", "reset_sequence",
              "expert_solves", "random_agent", "fuzz", "close_twice", "snapshot")
    prec = decimal.getcontext().prec
    try:
        bad = check_conformance(LeakyGuess, skip=others)
    finally:
        os.chdir(here)
        os.environ.pop("ARL_LEAK_TEST", None)
        decimal.getcontext().prec = prec
        sys.setrecursionlimit(limit)
    assert [(r.name, r.passed) for r in bad.results] == [("process_state", False)], bad.summary()
    expected = {"decimal": "decimal context", "numpy": "NumPy", "random": "random module", "cwd": "working dir",
                "recursion": "recursion limit", "environ": "ARL_LEAK_TEST", "close": "ARL_LEAK_TEST"}[leak]
    assert expected in bad.results[0].message
    good = check_conformance(GuessEnv, skip=others)
    assert [(r.name, r.passed) for r in good.results] == [("process_state", True)]


# ----------------------------------------------------------------------------- present-tense prose
def test_history_tag_pattern() -> None:
    for text in ("see issue 12", "(issues 9, 11)", "Issue #5 item 2", "changed 2026-12-01"):
        assert HISTORY_TAG.search(text), text
    for text in ("Sun et al., 2025", "issue a warning", "tissue 3", "v0: first version"):
        assert not HISTORY_TAG.search(text), text


def test_product_code_has_no_dates_or_issue_tags() -> None:
    bad = []
    for directory in (ROOT / "arl_envs", ROOT / "baselines"):
        for path in sorted(directory.rglob("*.py")):
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if HISTORY_TAG.search(line):
                    bad.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:100]}")
    assert not bad, ("history in product code (move it to CHANGELOG.md / benchmarks/RESULTS.md):\n"
                     + "\n".join(bad))


# ----------------------------------------------------------------------------- one job per file
#: Most lines of one product file (``arl_envs/``, ``baselines/arl_baselines/``) and of one class.
MAX_FILE_LINES = 650
MAX_CLASS_LINES = 400


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    """Lines per product file and per class (``path:Class``, nested classes included)."""
    files, classes = {}, {}
    for directory in PACKAGES.values():
        for path in sorted(directory.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            files[rel] = len(text.splitlines())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef):
                    classes[f"{rel}:{node.name}"] = node.end_lineno - node.lineno + 1
    return files, classes


def test_no_product_file_or_class_over_the_limit() -> None:
    files, classes = _sizes()
    big_files = {f: n for f, n in files.items() if n > MAX_FILE_LINES}
    big_classes = {c: n for c, n in classes.items() if n > MAX_CLASS_LINES}
    assert not big_files, f"files over {MAX_FILE_LINES} lines (split them by job): {big_files}"
    assert not big_classes, f"classes over {MAX_CLASS_LINES} lines (split them by job): {big_classes}"
