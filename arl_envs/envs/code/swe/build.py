"""Building and validating ``arl/code.swe-v0`` instances (``arl-envs swe build``).

Per project (deterministic: every order comes from ``random.Random(<name>-<version>)``):

1. **Baseline**: the whole suite of the pristine tree runs :data:`BASELINE_RUNS` times; the tests that pass every
   time are the *stable* ones (flaky, skipped and failing tests are never selected).
2. **Candidates**: :func:`~arl_envs.envs.code.swe.mutate.mutations` of every listed module, shuffled per family
   and taken round-robin over the families.
3. **Validation** of a candidate: only the test files that mention the mutated module run (all when none does);
   kept when at least one stable test fails. ``FAIL_TO_PASS`` = the stable tests of those files that do not pass,
   ``PASS_TO_PASS`` = the rest of them. Rejections are counted per family and reason (``no_failure``,
   ``timeout``, ``suite_broken``: nothing was collected).
4. The problem statement comes from the failing tests' output (:func:`problem_statement`).

Resumable: every verdict is appended to ``<cache>/build/<project>.jsonl`` (keyed by the mutation's hash) and
reused; the shipped metadata (``arl_envs/envs/code/data/swe/``) is rewritten from those verdicts at the end.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arl_envs.envs.code.swe.mutate import FAMILIES, Mutation, mutations, unified_diff
from arl_envs.envs.code.swe.projects import PROJECTS, Project, cache_dir, project_tree, toolchain_dir, tree_files
from arl_envs.envs.code.swe.testrun import run_pytest_host

#: Runs of the pristine suite; a test is stable when it passed in all of them.
BASELINE_RUNS = 3
#: Failing tests named in a problem statement.
MAX_TESTS_NAMED = 3
#: Characters of failure output quoted in a problem statement.
MAX_QUOTE_CHARS = 1200
#: Where the shipped instance metadata lives.
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "swe"


def test_files(project: Project, tree: Path) -> list[str]:
    """The project's test files (``test*.py`` / ``*_test.py`` under its test paths), sorted."""
    out = []
    for t in project.tests:
        p = tree / t
        files = [p] if p.is_file() else sorted(p.rglob("*.py"))
        for f in files:
            name = f.name
            if name.startswith("test") or name.endswith("_test.py"):
                out.append(f.relative_to(tree).as_posix())
    return sorted(set(out))


def files_for_module(project: Project, tree: Path, module: str) -> list[str]:
    """Test files that mention the module's import name (all test files when none does)."""
    stem = Path(module).stem
    name = Path(module).parent.name if stem == "__init__" else stem
    files = test_files(project, tree)
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    hits = [f for f in files if pattern.search((tree / f).read_text(encoding="utf-8", errors="replace"))]
    return hits or files


def baseline(project: Project, tree: Path, toolchain: Path) -> dict[str, list[str]]:
    """``{test file: stable passing node ids}`` (cached in ``<cache>/build/<project>.baseline.json``)."""
    path = cache_dir() / "build" / f"{project.key}.baseline.json"
    if path.exists():
        return json.loads(path.read_text())
    files = test_files(project, tree)
    runs = []
    for _ in range(BASELINE_RUNS):
        res = run_pytest_host(tree, project.src, toolchain, files)
        if res is None:
            raise RuntimeError(f"{project.key}: the pristine suite did not finish")
        runs.append(res)
    stable = set.intersection(*({k for k, (o, _) in r.items() if o == "passed"} for r in runs))
    out: dict[str, list[str]] = {f: [] for f in files}
    for nodeid in sorted(stable):
        out.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=0, sort_keys=True))
    return out


def ordered_candidates(project: Project, tree: Path) -> list[Mutation]:
    """All mutations of the project's modules, shuffled per family (seeded) and interleaved round-robin."""
    by_family: dict[str, list[Mutation]] = {f: [] for f in FAMILIES}
    for module in project.modules:
        for m in mutations(module, (tree / module).read_text(encoding="utf-8")):
            by_family[m.family].append(m)
    rng = random.Random(project.key)
    for fam in FAMILIES:
        rng.shuffle(by_family[fam])
    out = []
    while any(by_family.values()):
        for fam in FAMILIES:
            if by_family[fam]:
                out.append(by_family[fam].pop(0))
    return out


def mutation_key(m: Mutation) -> str:
    """A stable id of a mutation: sha256 of its path and mutated source, 10 hex digits."""
    return hashlib.sha256(f"{m.path}\0{m.source}".encode()).hexdigest()[:10]


def _scrub(text: str, module: str) -> str:
    """Remove any mention of the mutated file and of line numbers from failure output."""
    for name in {module, Path(module).name}:
        text = text.replace(name, "<source>")
    return re.sub(r":\d+\b", "", text)


#: An object's memory address in pytest's output (``<function f at 0x7f14acca00e0>``): different in every process.
_ADDRESS_RE = re.compile(r"\b0x[0-9a-f]{4,}")


def mask_addresses(text: str) -> str:
    """``text`` with every hex memory address replaced by ``0x...`` (so a rebuild writes the same statement)."""
    return _ADDRESS_RE.sub("0x...", text)


def _first_frame(message: str) -> str:
    """The failing test's own line (the first ``>`` line) and the error lines (``E``): frames inside the library,
    which would show the changed code, are left out."""
    lines = message.splitlines()
    first = next((line for line in lines if line.startswith(">")), None)
    return "\n".join(([first] if first else []) + [line for line in lines if line.startswith("E ")])


def problem_statement(project: Project, module: str, failing: dict[str, str], n_fail: int) -> str:
    """An issue text from the failing tests' output: names, the first failure's assertion and test line, and
    the reproduction command. It never names the mutated file or a line number."""
    names = sorted(failing)[:MAX_TESTS_NAMED]
    first = names[0]
    quote = mask_addresses(_scrub(_first_frame(failing[first]), module).strip()[:MAX_QUOTE_CHARS])
    lines = [f"`{first.rsplit('::', 1)[-1]}` and other tests of {project.name} fail", "",
             f"{n_fail} test(s) of {project.name} {project.version} fail on the current code, e.g.:"]
    lines += [f"- `{n}`" for n in names]
    if quote:
        lines += ["", f"The first failure (`{first}`):", "```", quote, "```"]
    lines += ["", "To reproduce:", "```", f"python3 -m pytest -q '{first}'", "```", "",
              "Expected: these tests pass. Fix the library code, not the tests."]
    return "\n".join(lines)


def validate(project: Project, tree: Path, toolchain: Path, stable: dict[str, list[str]], m: Mutation,
             work: Path) -> dict[str, Any]:
    """The verdict on one candidate: ``{"key", "family", "kept", "reason", ...instance fields when kept}``."""
    key = mutation_key(m)
    verdict: dict[str, Any] = {"key": key, "family": m.family, "path": m.path}
    files = [f for f in files_for_module(project, tree, m.path) if stable.get(f)]
    if not files:
        return dict(verdict, kept=False, reason="no_tests")
    target = work / m.path
    original = target.read_text(encoding="utf-8")
    target.write_text(m.source, encoding="utf-8")
    try:
        res = run_pytest_host(work, project.src, toolchain, files)
    finally:
        target.write_text(original, encoding="utf-8")
    if res is None:
        return dict(verdict, kept=False, reason="timeout")
    selected = [t for f in files for t in stable[f]]
    if not any(t in res for t in selected):
        return dict(verdict, kept=False, reason="suite_broken")
    f2p = [t for t in selected if res.get(t, ("missing", ""))[0] != "passed"]
    if not f2p:
        return dict(verdict, kept=False, reason="no_failure")
    failing = {t: res.get(t, ("missing", "the test was not collected"))[1] for t in f2p}
    return dict(verdict, kept=True, reason="kept", FAIL_TO_PASS=f2p, test_files=files,
                mutation_patch=unified_diff(m.path, original, m.source),
                patch=unified_diff(m.path, m.source, original),
                problem_statement=problem_statement(project, m.path, failing, len(f2p)))


def build_project(project: Project, max_instances: int, progress: Callable[[str, int, int], None] | None = None,
                  max_candidates: int | None = None) -> dict[str, Any]:
    """Validate candidates of ``project`` until ``max_instances`` are kept (or candidates run out).

    Returns:
        ``{"kept": [verdicts], "report": {family: Counter of reasons}, "stable": {file: ids}}``.
    """
    tree = project_tree(project)
    toolchain = toolchain_dir()
    stable = baseline(project, tree, toolchain)
    log_path = cache_dir() / "build" / f"{project.key}.jsonl"
    done: dict[str, dict] = {}
    if log_path.exists():
        for line in log_path.read_text().splitlines():
            try:
                v = json.loads(line)
                done[v["key"]] = v
            except (ValueError, KeyError):
                continue  # a line cut by an interrupted build
    kept: list[dict] = []
    report: dict[str, Counter] = {f: Counter() for f in FAMILIES}
    candidates = ordered_candidates(project, tree)
    if max_candidates is not None:
        candidates = candidates[:max_candidates]
    work = Path(tempfile.mkdtemp(prefix=f"arl-swe-{project.name}-"))
    try:
        copied = False
        with log_path.open("a") as log:
            for i, m in enumerate(candidates):
                if len(kept) >= max_instances:
                    break
                key = mutation_key(m)
                v = done.get(key)
                if v is None:
                    if not copied:
                        shutil.copytree(tree, work / "t", ignore=shutil.ignore_patterns("__pycache__"))
                        copied = True
                    v = validate(project, tree, toolchain, stable, m, work / "t")
                    log.write(json.dumps(v) + "\n")
                    log.flush()
                report[m.family][v["reason"]] += 1
                if v["kept"]:
                    kept.append(v)
                if progress is not None:
                    progress(project.name, len(kept), i + 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"kept": kept, "report": report, "stable": stable}


def instance_record(project: Project, v: dict[str, Any]) -> dict[str, Any]:
    """The shipped metadata of one kept verdict (``PASS_TO_PASS`` is derived at load time from the baseline)."""
    return {
        "instance_id": f"{project.name}__{v['family']}__{v['key']}",
        "project": project.name,
        "repo": project.repo,
        "version": project.version,
        "split": project.split,
        "family": v["family"],
        "patch": v["patch"],
        "mutation_patch": v["mutation_patch"],
        "test_files": v["test_files"],
        "problem_statement": mask_addresses(v["problem_statement"]),  # verdicts cached by older builds too
        "FAIL_TO_PASS": v["FAIL_TO_PASS"],
    }


def write_metadata(results: dict[str, dict[str, Any]], data_dir: Path = DATA_DIR) -> Path:
    """Write ``instances.jsonl`` (kept instances, sorted by id) and ``baselines.json`` ({project: {file: stable
    ids}}) into ``data_dir``, merged with what is there for projects not in ``results``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    inst_path, base_path = data_dir / "instances.jsonl", data_dir / "baselines.json"
    records: dict[str, dict] = {}
    if inst_path.exists():
        for line in inst_path.read_text().splitlines():
            r = json.loads(line)
            if r["project"] not in results:
                records[r["instance_id"]] = r
    bases = json.loads(base_path.read_text()) if base_path.exists() else {}
    for name, res in results.items():
        project = PROJECTS[name]
        bases[name] = res["stable"]
        for v in res["kept"]:
            r = instance_record(project, v)
            records[r["instance_id"]] = r
    inst_path.write_text("".join(json.dumps(records[k], sort_keys=True) + "\n" for k in sorted(records)))
    base_path.write_text(json.dumps(bases, sort_keys=True, separators=(",", ":")))
    return inst_path


def format_report(results: dict[str, dict[str, Any]]) -> str:
    """A markdown table: per family, candidates tried, kept and rejected by reason."""
    total: dict[str, Counter] = {f: Counter() for f in FAMILIES}
    for res in results.values():
        for fam, c in res["report"].items():
            total[fam].update(c)
    reasons = ["no_failure", "timeout", "suite_broken", "no_tests"]
    lines = ["| family | tried | kept | " + " | ".join(reasons) + " |", "|---" * (3 + len(reasons)) + "|"]
    for fam in FAMILIES:
        c = total[fam]
        lines.append(f"| {fam} | {sum(c.values())} | {c['kept']} | " + " | ".join(str(c[r]) for r in reasons) + " |")
    allc = sum(total.values(), Counter())
    lines.append(f"| all | {sum(allc.values())} | {allc['kept']} | " + " | ".join(str(allc[r]) for r in reasons) + " |")
    return "\n".join(lines)


__all__ = ["build_project", "format_report", "problem_statement", "write_metadata", "tree_files"]
