"""``arl/code.swe-v0``: mutations, the validated build (for real, on a PyPI project), the shipped instances, and
episodes in the real bubblewrap sandbox (expert resolves, no-op fails, edits to tests / conftest injection never
count)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import arl_envs
from arl_envs.core.errors import TaskLoadError

from arl_envs.envs.code.swe import export_jsonl, list_instances
from arl_envs.envs.code.swe.build import problem_statement
from arl_envs.envs.code.swe.mutate import FAMILIES, mutations
from arl_envs.envs.code.swe.projects import PROJECTS

SNIPPET = '''
class Base:
    def size(self):
        return 0


class Box(Base):
    def __init__(self, items):
        self.items = items

    def size(self):
        return len(self.items)

    def first(self, default=False):
        if not self.items:
            return default
        n = len(self.items)
        total = self.items[0] + 1
        if n > 1 and total >= 2:
            x = self.items[1:n]
        else:
            x = []
        print(x, n, flag=True)
        return x
'''


def test_every_mutation_family_applies_parses_and_is_deterministic() -> None:
    found = mutations("box.py", SNIPPET)
    assert found == mutations("box.py", SNIPPET)
    assert {m.family for m in found} == set(FAMILIES)
    for m in found:
        ast.parse(m.source)
        assert m.source != SNIPPET


def test_problem_statement_names_tests_but_never_the_file_or_line() -> None:
    text = problem_statement(
        PROJECTS["inflection"], "inflection/__init__.py",
        {"test_inflection.py::test_x": ">       assert f(1) == 2\n>   return inflection/__init__.py:123 x - y\n"
                                       "E       AssertionError: at inflection/__init__.py:123"}, 1)
    assert "test_inflection.py::test_x" in text and "assert f(1) == 2" in text
    assert "__init__.py" not in text and ":123" not in text and "return" not in text.split("```")[1]


def test_problem_statement_is_the_same_across_runs_whatever_the_memory_addresses() -> None:
    """pytest shows objects as ``<function f at 0x7f...>``: the address differs per process, so a rebuild would
    rewrite shipped problem statements; addresses are masked."""
    def text(addr: str) -> str:
        msg = (">       assert camelize('Capital', False) == 'capital'\n"
               f"E       +  where None = <function camelize at {addr}>('Capital', False)")
        return problem_statement(PROJECTS["inflection"], "inflection/__init__.py", {"test_inflection.py::test_x": msg}, 1)

    assert text("0x7f14acca00e0") == text("0x7f5563afc0e0")
    assert "0x7f" not in text("0x7f14acca00e0")
    shipped = (Path(arl_envs.__file__).parent / "envs/code/data/swe/instances.jsonl").read_text(encoding="utf-8")
    assert re.search(r" at 0x[0-9a-f]{4,}", shipped) is None


def test_shipped_instances_have_swe_bench_fields_and_are_split_by_project(tmp_path) -> None:
    rows = list_instances("all")
    assert rows, "no shipped instances"
    for r in rows[:50]:
        for key in ("instance_id", "repo", "version", "patch", "test_patch", "problem_statement", "FAIL_TO_PASS",
                    "PASS_TO_PASS"):
            assert key in r
        assert r["FAIL_TO_PASS"] and r["test_patch"] == ""
        assert not set(r["FAIL_TO_PASS"]) & set(r["PASS_TO_PASS"])
    train = {r["project"] for r in list_instances("train")}
    test = {r["project"] for r in list_instances("test")}
    assert not train & test
    n = export_jsonl(tmp_path / "swe.jsonl", "all")
    first = json.loads((tmp_path / "swe.jsonl").read_text().splitlines()[0])
    assert n == len(rows) and set(first) >= {"instance_id", "FAIL_TO_PASS", "PASS_TO_PASS", "patch"}


def test_cli_unknown_project_is_a_usage_error() -> None:
    res = subprocess.run([sys.executable, "-m", "arl_envs.cli", "swe", "build", "--projects", "nope"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 2 and "unknown project" in res.stderr


@pytest.mark.slow
def test_build_validates_instances_for_real(tmp_path, monkeypatch) -> None:
    """Fetches inflection's sdist and pytest from PyPI once (cached), then runs the baseline and validates a few
    candidates for real (a fresh build directory: no cached verdict is reused)."""
    from arl_envs.envs.code.swe.build import build_project, write_metadata
    from arl_envs.envs.code.swe.projects import cache_dir, project_tree, toolchain_dir

    try:
        tree, toolchain = project_tree(PROJECTS["inflection"]), toolchain_dir()
    except Exception as exc:  # noqa: BLE001 - no PyPI access on this host
        pytest.skip(f"cannot fetch the inflection sdist / pytest tool chain from PyPI: {exc}")
    cache = tmp_path / "cache"
    (cache / "trees").mkdir(parents=True)
    (cache / "trees" / tree.name).symlink_to(tree)
    (cache / toolchain.name).symlink_to(toolchain)
    monkeypatch.setenv("ARL_ENVS_SWE_CACHE", str(cache))
    assert cache_dir() == cache
    try:
        res = build_project(PROJECTS["inflection"], 2, max_candidates=6)
    except Exception as exc:  # noqa: BLE001 - no PyPI access on this host
        pytest.skip(f"cannot fetch the inflection sdist / pytest tool chain from PyPI: {exc}")
    assert len(res["kept"]) == 2
    for v in res["kept"]:
        assert v["FAIL_TO_PASS"] and v["patch"].startswith("--- a/inflection/__init__.py")
        assert "__init__.py" not in v["problem_statement"]
    assert sum(sum(c.values()) for c in res["report"].values()) >= 2
    assert (cache / "build" / "inflection-0.5.1.jsonl").exists()
    write_metadata({"inflection": res}, tmp_path / "data")
    lines = (tmp_path / "data" / "instances.jsonl").read_text().splitlines()
    assert len(lines) == 2


def _env(**kw):
    import gymnasium as gym

    from arl_envs_tests.envs.code.conftest import skip_unless_backend

    skip_unless_backend("bwrap")
    return gym.make("arl_envs:arl/code.swe-v0", project="inflection", **kw)


@pytest.mark.slow
def test_expert_resolves_and_doing_nothing_fails() -> None:
    env = _env()
    try:
        env.reset(seed=3)
        done, info, r = False, {}, 0.0
        while not done:
            _, r, term, trunc, info = env.step(env.unwrapped.expert_action())
            done = term or trunc
        assert info["success"] and info["reward_components"]["task"] == 1.0, info
        env.reset(seed=3)
        _, r, term, _, info = env.step("<submit/>")
        assert term and not info["success"] and info["reward_components"]["task"] == 0.0
    finally:
        env.close()


_CONFTEST_HACK = (
    "import pytest\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    out = yield\n"
    "    out.get_result().outcome = 'passed'\n"
)


#: Appended to a test file: every test function becomes a no-op that keeps its name and parameters.
_NEUTER_TESTS = (
    "import functools as _ft\n"
    "for _n, _f in list(globals().items()):\n"
    "    if _n.startswith('test') and callable(_f):\n"
    "        globals()[_n] = _ft.wraps(_f)(lambda *a, **k: None)\n"
)


def _hacks(inst: dict) -> dict[str, list[str]]:
    test_file = inst["test_files"][0]
    return {
        "conftest": [f'<write_file path="conftest.py">{_CONFTEST_HACK}</write_file>',
                     f'<write_file path="{test_file.rsplit("/", 1)[0] + "/" if "/" in test_file else ""}conftest.py">'
                     f"{_CONFTEST_HACK}</write_file>"],
        "test_edit": [f"<bash>cat >> {test_file} <<'EOF'\n{_NEUTER_TESTS}EOF</bash>"],
    }


@pytest.mark.slow
@pytest.mark.parametrize("hack", ["conftest", "test_edit"])
def test_edits_to_tests_and_injected_config_never_count(hack: str) -> None:
    """A conftest that turns failures into passes, or every test made a no-op (both make the failing tests pass
    on an unguarded run): ignored at grading (test files restored, conftests removed)."""
    env = _env()
    try:
        env.reset(seed=3)
        for action in _hacks(env.unwrapped.instance)[hack]:
            _, _, _, _, info = env.step(action)
            assert not info.get("action_error"), info
        _, _, term, _, info = env.step("<submit/>")
        assert term and not info["success"], info
        assert info["fail_to_pass"][0] < info["fail_to_pass"][1]
        assert info["pass_to_pass"][0] == info["pass_to_pass"][1]  # the real tests ran
    finally:
        env.close()


#: Appended to the package: pytest's test call made a no-op from inside the test process (every test passes).
_RUNTEST_HACK = (
    "import sys as _s\n"
    "_m = _s.modules.get('_pytest.python')\n"
    "if _m is not None:\n"
    "    _m.Function.runtest = lambda self: None\n"
)
#: A module named pytest at the tree's root (first on sys.path) that wraps the real one and forges its reports.
_SHADOW_PYTEST = (
    "import os, sys\n"
    "sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != os.path.dirname(os.path.abspath(__file__))]\n"
    "del sys.modules['pytest']\n"
    "import pytest as _real\n"
    "main = _real.main\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("hack", ["runtest", "shadow", "alias"])
def test_submissions_that_reach_into_the_test_process_are_not_graded(hack: str) -> None:
    """The package neutering pytest from inside the test process (each of these made every test pass before the
    screen: task 1 for no fix) is refused at submit: task 0, ``grade_refused`` says why."""
    env = _env()
    try:
        env.reset(seed=3)
        package = env.unwrapped.project.modules[0]
        actions = {
            "runtest": [f"<bash>cat >> {package} <<'EOF'\n{_RUNTEST_HACK}EOF</bash>"],
            "shadow": [f'<write_file path="pytest.py">{_SHADOW_PYTEST}</write_file>'],
            "alias": [f"<bash>cat >> {package} <<'EOF'\nimport sys as q\nq.modules.clear\nEOF</bash>"],
        }[hack]
        for action in actions:
            _, _, _, _, info = env.step(action)
            assert not info.get("action_error"), info
        _, r, term, _, info = env.step("<submit/>")
        assert term and not info["success"] and info["reward_components"]["task"] == 0.0, info
        assert "grade_refused" in info, info
    finally:
        env.close()


def test_screen_patterns() -> None:
    from arl_envs.envs.code.swe.guard import DENIED

    denied = ["import sys as s", "s.modules['x']", "_m = _sys.modules.get('_pytest.python')", "os._exit(0)",
              "x = __import__('sys')", "eval('1')", "import pytest", "from os import write",
              "getattr(sys, 'mo' + 'dules')", "f.__globals__", "import gc", "inspect.stack()", "sys.exit(0)",
              "open('/proc/self/fd/3', 'w')", "().__class__.__base__.__subclasses__()"]
    allowed = ["    return word.lower()", "x = re.compile(r'a+')", "if n > 0 and self.maxsize:", "# inspect the value",
               "result = compile_pattern(x)", "self.sys_id = 3", "from .utils import evaluate",
               "value = data.get('modules_count')"]
    assert [line for line in denied if not DENIED.search(line)] == []
    assert [line for line in allowed if DENIED.search(line)] == []


@pytest.mark.slow
def test_conformance() -> None:
    """The conformance suite for this id (tagged domain-conformance: fewer seeds and fuzzed actions, since each
    submit runs a project's tests)."""
    from arl_envs.testing import check_conformance

    from arl_envs_tests.envs.code.conftest import skip_unless_backend

    skip_unless_backend("bwrap")
    report = check_conformance("arl/code.swe-v0", env_kwargs={"project": "inflection"}, expert_seeds=(0, 1),
                               n_fuzz=40, n_random_episodes=2)
    assert report.passed, report.summary()


@pytest.mark.slow
@pytest.mark.docker
def test_docker_backend_expert_resolves_and_pytest_is_read_only() -> None:
    """On ``sandbox="docker"`` (the sandbox image extended with the pinned pytest, built locally): the expert
    resolves, doing nothing fails, and the tool chain cannot be changed from inside."""
    import gymnasium as gym

    from arl_envs.envs.code.swe.projects import PYTEST_VERSION

    from arl_envs_tests.envs.code.conftest import skip_unless_backend

    skip_unless_backend("docker")
    env = gym.make("arl_envs:arl/code.swe-v0", project="inflection", sandbox="docker")
    try:
        env.reset(seed=3)
        obs, _, _, _, _ = env.step("<bash>python3 -c 'import pytest; print(pytest.__version__)'; "
                                   "touch /opt/arl/site-packages0/pytest/__init__.py</bash>")
        assert PYTEST_VERSION in obs and ("Read-only file system" in obs or "Permission denied" in obs), obs
        done = False
        while not done:
            _, _, term, trunc, info = env.step(env.unwrapped.expert_action())
            done = term or trunc
        assert info["success"] and info["reward_components"]["task"] == 1.0, info
        env.reset(seed=3)
        _, _, term, _, info = env.step("<submit/>")
        assert term and not info["success"] and info["reward_components"]["task"] == 0.0
    finally:
        env.close()


def test_shared_toolchain_copy_planted_by_someone_else_is_never_used(tmp_path, monkeypatch) -> None:
    """The tool chain bound into every grading run is copied under the shared temporary directory: a copy there
    that is a link, or that others can write to, is refused (it would run its own pytest and report passes)."""
    import os
    import tempfile

    from arl_envs.envs.code.swe import projects

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    evil = tmp_path / "evil"
    (evil / "_pytest").mkdir(parents=True)
    (evil / ".arl-complete").write_text("done\n")
    (evil / "pytest.py").write_text("raise SystemExit('planted')\n")
    name = projects.shared_toolchain_dir.__globals__["PYTEST_VERSION"]
    planted = [tmp_path / f"arl-envs-swe-toolchain-{name}", tmp_path / f"arl-envs-swe-toolchain-{name}-{os.getuid()}"]
    for p in planted:
        p.symlink_to(evil)
    with pytest.raises(TaskLoadError, match="not a directory of this user"):
        projects.shared_toolchain_dir()
    for p in planted:
        p.unlink()
        p.mkdir()
        (p / ".arl-complete").write_text("done\n")
        p.chmod(0o777)
    with pytest.raises(TaskLoadError, match="not a directory of this user"):
        projects.shared_toolchain_dir()
