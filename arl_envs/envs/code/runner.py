"""The in-sandbox test runner of the code envs (standard library only; it runs INSIDE the sandbox).

This file is not imported by the sandboxed programs: the host reads its source and sends it, with the tests and
a per-run secret, on the standard input of ``python3 -I -S -B -c BOOTSTRAP`` (see
:mod:`arl_envs.envs.code.harness`). The runner is three sources, run in this order in one namespace by
:data:`~arl_envs.envs.code.protocol.BOOTSTRAP`: :mod:`arl_envs.envs.code.protocol` (value codec, comparisons,
CPU limits; the host imports it too, so both sides share one implementation), :mod:`arl_envs.envs.code.processes`
(the child processes, clean-up, scratch space) and this one (the payload's jobs and test cases, the record).

Process layout inside one sandbox run::

    runner parent  (pid 1 of the run's pid namespace under bwrap; non-dumpable; never imports submitted code)
      └── child    (fresh `python3 -I -S -B`, :mod:`arl_envs.envs.code.child`; imports the submission; one at a
                    time; restarted after a crash)

Guarantees (each is a test in ``arl_envs_tests/envs/code/test_hack_battery.py``):

* **Trusted channel.** Only the parent holds the run's stdout. Children get their own pipes; the parent is made
  non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``) before it reads the payload, so ``/proc/<ppid>/fd``,
  ``/proc/<ppid>/mem`` and ``ptrace`` are closed to same-uid children. The final record is authenticated with
  HMAC-SHA256 keyed by a secret that arrives on stdin and never reaches a child (children are fresh ``exec``'d
  interpreters, started after stdin was read and closed). The host accepts a verdict only from a record with a
  valid MAC and the run's nonce: printing ``=== 5 passed ===``, exiting 0 early or killing the parent yields no
  such record, hence no pass.
* **Comparison outside the submission.** A child returns a *serialisation* of each return value (exact built-in
  types only: an ``int`` subclass, or any object with a custom ``__eq__``, is refused). The parent rebuilds
  plain built-in values and compares them with a strict, type-checked equality (``True`` is not ``1``, a tuple
  is not a list). Programs' stdout is compared exactly and in order (whitespace-normalised per line only for
  tests marked ``"lines"``).
* **Tests loaded after, and out of reach of, the solution.** Test code (HumanEval ``check`` bodies, MBPP
  asserts) runs in the parent with ``candidate`` bound to a proxy that calls the child; the solution never sees
  the test module, expected values, or the hidden test list.
* **Reference out of reach.** A reference run's package (the correct repository of ``code.repo-v1``'s CPU
  calibration, run just before the submission) is sent to its child, which imports it from memory: it is never
  written to any file system, so no later process of the run (the submission) can read or copy it.
* **Config files ignored.** All interpreters run with ``-I -S -B``: no current directory on ``sys.path``, no
  ``site``/``sitecustomize``/``usercustomize``/``.pth``, no ``PYTHON*`` variables; no pytest is involved, so
  ``conftest.py``/``pytest.ini`` mean nothing.
* **Limits.** Per-test CPU seconds (from ``/proc/<pid>/stat``, kernel-accounted) and a wall deadline derived from
  it (extended only while the child is runnable, i.e. starved by load, never while it sleeps); an address-space
  limit and ``oom_score_adj=1000`` for children; after a crash or timeout, every other process of the run
  (``kill(-1, SIGKILL)`` when the parent is the namespace's pid 1, else the child's process group) is killed and
  reaped, so fork-and-hang leftovers neither hold pipes nor survive.
* **Set-up the submission cannot void** (``arl_envs_tests/envs/test_tampering_battery.py``). The submission runs as
  the runner's own user, so it can change every path, mode, free block and inode the runner could use, signal the
  runner and lower its rlimits (``prlimit``). So: (1) the runner's scratch space (:class:`Scratch`: one directory
  per job under ``/tmp/arl-run-<random>``, made with plain ``mkdir``) exists before any submitted code runs and is
  reached afterwards only through open directory fds (a child's working directory is ``/proc/self/fd/<fd>``, its
  mode restored with ``fchmod``), never by walking ``/tmp`` again; (2) the runner ignores ``SIGINT`` (Python
  would raise ``KeyboardInterrupt`` in it; children get the default handler back); (3) a set-up failure
  (``OSError``/``MemoryError``: no fd, no process slot, no memory) is attributed by when it happens: before any
  process running submitted code was started in this run it is the sandbox's (a ``harness_error``, which the host
  reports as ``env_error``); after, it is the submission's doing, and its cases fail with a message saying so
  (scored). Killing or stopping the runner leaves no authenticated record: every test fails (scored).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import signal
from typing import Any

if __name__ != "arl_runner":  # imported on the host; in the sandbox BOOTSTRAP ran these sources in this namespace first
    from arl_envs.envs.code.processes import (
        MAX_PROGRAM_OUTPUT_BYTES,
        MAX_RESPONSE_BYTES,
        SUBMISSION_RAN,
        Child,
        JobDir,
        Scratch,
        kill_others,
    )
    from arl_envs.envs.code.protocol import (
        MAX_REPR_CHARS,
        PROTOCOL_VERSION,
        RESULT_MARKER,
        UNCALIBRATED_CPU_S,
        CodecError,
        cpu_limit_from_reference,
        decode,
        outputs_match,
        safe_repr,
        strict_equal,
    )

#: CPU seconds allowed for starting a child and importing the submission.
IMPORT_CPU_S = 2.0
#: Characters of a traceback kept in a case report.
MAX_TRACEBACK_CHARS = 1500
#: Exit code of a child whose init failed before the submission ran.
CHILD_INIT_FAILED = 96


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]" + text[-(limit - 5):]


# ----------------------------------------------------------------------------------------------- parent side
def main(payload: dict) -> None:
    """Entry point of the runner parent (called by :data:`BOOTSTRAP`). Writes one authenticated record."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a child's kill(ppid, SIGINT) is no KeyboardInterrupt here
    key = bytes.fromhex(payload.pop("key"))
    nonce = str(payload["nonce"])
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # stdin (already read to EOF) is closed to everyone from now on
    os.close(devnull)
    scratch: Scratch | None = None
    try:
        record: dict = {"version": PROTOCOL_VERSION}
        limits: list[float] | None = None
        # Set-up, before any submitted code runs: a failure here is the sandbox's (a harness error).
        scratch = Scratch(len(payload["jobs"]) + 1)
        if payload.get("calibration"):
            cal = _run_job(dict(payload["calibration"], trusted=True), payload, scratch.dirs[-1])
            ref_cpu = [float(c["cpu_s"]) for c in cal["cases"]]
            limits = [cpu_limit_from_reference(c) for c in ref_cpu]
            failed = [i for i, c in enumerate(cal["cases"]) if not c["passed"]]
            record["calibration"] = {
                "reference_cpu_s": ref_cpu,
                "cpu_limits_s": limits,
                "reference_passed": not failed and cal["import_error"] is None,
                "first_failure": (cal["import_error"] or str(cal["cases"][failed[0]])[:600]) if failed else None,
            }
        resolved = []
        for job in payload["jobs"]:
            cases = []
            for case in job["cases"]:
                if "cal" in case:
                    case = dict(case, cpu_s=limits[case["cal"]] if limits else UNCALIBRATED_CPU_S)
                cases.append(case)
            resolved.append(dict(job, cases=cases))
        # a child may serve consecutive jobs with the same code: its CPU rlimit covers all of them
        payload["_child_cpu_s"] = IMPORT_CPU_S + 1.0 + sum(float(c["cpu_s"]) for j in resolved for c in j["cases"])
        payload["_reuse"] = {}  # a live child of the previous job, reused when the next job has the same code
        jobs: list[dict] = []
        for index, job in enumerate(resolved):
            gate = job.get("only_if_passed")
            if gate is not None and not _all_passed(jobs[gate]):
                jobs.append({"skipped": True, "import_error": None, "import_cpu_s": 0.0, "cases": []})
                continue
            try:
                result = _run_job(job, payload, scratch.dirs[index])
            except (OSError, MemoryError) as exc:
                if not SUBMISSION_RAN[0]:
                    raise  # nothing submitted ran in this run yet: the sandbox itself is broken
                result = _setup_broken(job, exc)
            result["cpu_limits_s"] = [c["cpu_s"] for c in job["cases"]]
            jobs.append(result)
        for child in payload["_reuse"].values():
            child.kill()
        record["jobs"] = jobs
    except (OSError, MemoryError) as exc:
        if SUBMISSION_RAN[0]:  # out of fds, memory, processes once submitted code ran: its doing, scored
            record = {"version": PROTOCOL_VERSION, "jobs": [_setup_broken(job, exc) for job in payload["jobs"]]}
        else:
            record = _harness_error()
    except BaseException:  # noqa: BLE001 - a runner bug: reported as such (the host turns it into env_error)
        record = _harness_error()
    finally:
        kill_others(None)
        if scratch is not None:
            scratch.remove()
    body = base64.b64encode(json.dumps(record).encode()).decode()
    mac = hmac.new(key, f"{nonce} {body}".encode(), hashlib.sha256).hexdigest()
    data = f"\n{RESULT_MARKER} {nonce} {body} {mac}\n".encode()
    while data:
        data = data[os.write(1, data):]


def _harness_error() -> dict:
    """The record of a run the runner itself could not carry out (the host reports it as ``env_error``)."""
    import traceback  # noqa: PLC0415 - only on this path (saves ~4 ms of start-up)

    return {"version": PROTOCOL_VERSION, "harness_error": traceback.format_exc()[-4000:]}


def _all_passed(job_result: dict) -> bool:
    """A job ran, imported, and passed every case (vacuously true for a job without cases)."""
    return (
        not job_result.get("skipped")
        and job_result.get("import_error") is None
        and all(c["passed"] for c in job_result["cases"])
    )


class _CallFailed(BaseException):
    """Raised inside test code when a candidate call failed (BaseException: test code cannot swallow it)."""

    def __init__(self, result: dict) -> None:
        super().__init__(result.get("error") or result.get("status"))
        self.result = result


#: Why a job could not be set up after submitted code ran (the case error of every one of its cases).
SETUP_BROKEN = (
    "the test process could not be set up after your code ran ({exc}): what your code did to its sandbox "
    "(files, permissions, processes, limits) broke it; these tests count as failed"
)


def _setup_broken(job: dict, exc: BaseException) -> dict:
    """The result of a job whose set-up failed after submitted code ran: a scored failure of every case.

    The submission shares this runner's user, processes and file systems, so a set-up failure once it has run
    (no pipes left: it lowered this process's RLIMIT_NOFILE; no memory; no process slot) is its doing, and the
    sandbox worked until then (the set-up before it ran succeeded).
    """
    message = SETUP_BROKEN.format(exc=f"{type(exc).__name__}: {exc}"[:300])
    return {
        "import_error": message,
        "import_cpu_s": 0.0,
        "cases": [_result(False, "error", case, error=message) for case in job["cases"]],
    }


def _run_job(job: dict, payload: dict, job_dir: JobDir) -> dict:
    """Run every case of one job in ``job_dir``; returns ``{"import_error", "cases": [...], "import_cpu_s"}``."""
    job_dir.claim()
    try:
        return _run_job_in(dict(job, cwd=job_dir.fd_path, home=job_dir.path), payload)
    finally:
        job_dir.empty()


def _run_job_in(job: dict, payload: dict) -> dict:
    """:func:`_run_job` with ``job["cwd"]`` (an empty private directory) as the children's working directory.

    A job's ``files`` (the correct repository of a reference run) are sent to its child, which imports them from
    memory (:class:`~arl_envs.envs.code.child.SourceImporter`): they are never written to a file system that a
    later process of the run (the submission) could read.
    """
    child_source = payload["child"]
    cases = job["cases"]
    job["child_cpu_s"] = payload.get("_child_cpu_s") or IMPORT_CPU_S + sum(float(c["cpu_s"]) for c in cases) + 1.0
    if job["mode"] == "program":
        return {"import_error": None, "import_cpu_s": 0.0, "cases": [_run_program_case(job, c, child_source) for c in cases]}
    key = (job["mode"], job["source"], job.get("prelude", ""), job.get("entry_point", ""), job.get("repo_root"))
    reuse = payload.get("_reuse") or {}
    kept = reuse.pop(key, None) if not job.get("files") else None
    for other in reuse.values():
        other.kill()
    reuse.clear()
    state: dict = {"child": kept, "import_error": None, "import_cpu": 0.0}
    results = []
    base_ns: dict | None = None
    try:
        for case in cases:
            if state["import_error"] is not None:
                results.append(_result(False, "error", case, error=state["import_error"]))
                continue
            if case["kind"] == "check" and base_ns is None:
                base_ns = {"__name__": "arl_tests"}
                exec(compile(job.get("test_prelude", ""), "<test-prelude>", "exec"), base_ns)  # trusted task text
            if case["kind"] == "call":
                results.append(_run_call_case(job, case, state, child_source))
            else:
                results.append(_run_check_case(job, case, state, child_source, base_ns or {}))
    except BaseException:
        if state["child"] is not None:
            state["child"].kill()
        raise
    if state["child"] is not None:
        if "_reuse" in payload and not job.get("files") and state["child"].alive():
            payload["_reuse"][key] = state["child"]  # e.g. the hidden job right after the visible one
        else:
            state["child"].kill()
    return {"import_error": state["import_error"], "import_cpu_s": round(state["import_cpu"], 4), "cases": results}


def _unhex(text: Any) -> str:
    """Decode a hex-encoded UTF-8 text field from a child (garbage becomes a placeholder)."""
    try:
        return bytes.fromhex(str(text)).decode("utf-8", "replace")
    except ValueError:
        return "<malformed message from the test process>"


def _result(passed: bool, status: str, case: dict, **kw: Any) -> dict:
    out = {"passed": passed, "status": status, "cpu_s": 0.0}
    out.update({k: v for k, v in kw.items() if v is not None})
    return out


def _ensure_child(job: dict, state: dict, child_source: str) -> Child | None:
    """Start (and import the submission in) a child unless one is alive; None when the import failed."""
    child = state["child"]
    if child is not None and child.alive():
        return child
    if child is not None:
        child.kill()
        state["child"] = None
    try:
        child = Child(job, child_source)
    except OSError as exc:  # fork failed (pids limit hit by leftovers): clean up once and retry
        kill_others(None)
        try:
            child = Child(job, child_source)
        except OSError:
            if not SUBMISSION_RAN[0]:
                raise  # the first process of the run: the sandbox cannot start one (a harness error)
            state["import_error"] = f"could not start the test process: {exc}"
            return None
    status, resp, used = child.wait_for("response", IMPORT_CPU_S, rid=0)
    state["import_cpu"] += used
    if status == "ok" and resp.get("ready") is True:
        state["child"] = child
        return child
    out, err = child.captured()
    child.kill()
    if status == "ok" and "import_error" in resp:
        state["import_error"] = _cut(_unhex(resp["import_error"]), MAX_TRACEBACK_CHARS)
    elif status == "timeout":
        state["import_error"] = f"importing your code exceeded the time limit ({IMPORT_CPU_S:g} s CPU)"
    elif status == "died":
        state["import_error"] = f"{resp} while importing your code" + (f"\nstderr: {_cut(err, 600)}" if err.strip() else "")
    else:
        state["import_error"] = "the test process sent an invalid reply while importing your code"
    return None


def _call(job: dict, state: dict, child_source: str, fn: str, args: list, kwargs: dict, budget: list) -> dict:
    """One call of the submission in the child. ``budget``: [cpu seconds left for this case]."""
    child = _ensure_child(job, state, child_source)
    if child is None:
        return {"status": "error", "error": state["import_error"]}
    n_out, n_err = len(child.out), len(child.err)
    try:
        rid = child.send_call(fn, args, kwargs)
    except ValueError as exc:
        return {"status": "error", "error": f"test argument cannot be sent: {exc}"}
    status, resp, used = child.wait_for("response", max(budget[0], 0.0), rid=rid)
    budget[0] -= used
    budget.append(used)
    out = child.out[n_out:].decode("utf-8", "replace")
    err = child.err[n_err:].decode("utf-8", "replace")
    extra = {"stdout": _cut(out, 600) if out else None}
    if status == "timeout":
        child.kill()
        state["child"] = None
        kind = "CPU time" if resp == "cpu" else "wall-clock time"
        return {"status": "timeout", "error": f"time limit exceeded ({kind}; limit {job['_case_cpu']:g} s CPU)", **extra}
    if status == "overflow":
        child.kill()
        state["child"] = None
        return {"status": "error", "error": f"the return value is larger than {MAX_RESPONSE_BYTES} bytes", **extra}
    if status == "died":
        child.kill()
        state["child"] = None
        detail = f"\nstderr: {_cut(err, 600)}" if err.strip() else ""
        return {"status": "crash", "error": f"{resp} during the call (no value was returned){detail}", **extra}
    if resp.get("malformed") or resp.get("id") != rid:
        child.kill()
        state["child"] = None
        return {"status": "error", "error": "the test process sent an invalid reply", **extra}
    if "exc" in resp:
        return {"status": "error", "error": _cut(_unhex(resp["exc"]), MAX_TRACEBACK_CHARS), **extra}
    if "ok" not in resp:
        return {"status": "error", "error": _cut(_unhex(resp.get("bad_value", "")) or "no value returned", MAX_REPR_CHARS), **extra}
    try:
        value = decode(resp["ok"])
    except (CodecError, RecursionError) as exc:
        return {"status": "error", "error": f"invalid return value: {exc}", **extra}
    return {"status": "ok", "value": value, **extra}


def _run_call_case(job: dict, case: dict, state: dict, child_source: str) -> dict:
    job["_case_cpu"] = float(case["cpu_s"])
    budget = [float(case["cpu_s"])]
    try:
        args, kwargs, expected = decode(case["args"]), decode(case["kwargs"]), decode(case["expected"])
    except CodecError as exc:
        return _result(False, "error", case, error=f"malformed test case: {exc}")
    res = _call(job, state, child_source, case["fn"], args, kwargs, budget)
    cpu = round(sum(budget[1:]), 4)
    if res["status"] != "ok":
        return _result(False, res["status"], case, error=res.get("error"), stdout=res.get("stdout"), cpu_s=cpu)
    tol = case.get("tolerance") or [0.0, 0.0]
    try:
        ok = strict_equal(res["value"], expected, float(tol[0]), float(tol[1]))
    except RecursionError:
        ok = False
    got = safe_repr(res["value"])
    if not ok and got == safe_repr(expected):
        got += f" (type {_type_desc(res['value'])}, expected type {_type_desc(expected)})"
    return _result(ok, "pass" if ok else "fail", case, got=got, stdout=res.get("stdout"), cpu_s=cpu)


def _type_desc(value: Any) -> str:
    t = type(value).__name__
    if type(value) in (list, tuple, set, frozenset) and value:
        inner = sorted({type(v).__name__ for v in value})
        return f"{t}[{'|'.join(inner)}]"
    return t


def _run_check_case(job: dict, case: dict, state: dict, child_source: str, base_ns: dict) -> dict:
    """Run trusted test statements in THIS process with ``candidate`` proxied to the child."""
    job["_case_cpu"] = float(case["cpu_s"])
    budget = [float(case["cpu_s"])]
    calls: list[str] = []
    failure: list[dict] = []
    entry = job.get("entry_point") or "candidate"

    def candidate(*args: Any, **kwargs: Any) -> Any:
        res = _call(job, state, child_source, entry, list(args), kwargs, budget)
        shown = ", ".join([safe_repr(a, 120) for a in args] + [f"{k}={safe_repr(v, 60)}" for k, v in kwargs.items()])
        if res["status"] != "ok":
            calls.append(f"{entry}({shown}) -> {res['status']}")
            failure.append(res)
            raise _CallFailed(res)
        calls.append(f"{entry}({shown}) -> {safe_repr(res['value'], 200)}")
        return res["value"]

    ns = dict(base_ns)
    ns["candidate"] = candidate
    if job.get("entry_point"):
        ns[job["entry_point"]] = candidate
    ns["__arl_eq__"] = strict_equal
    import random  # noqa: PLC0415 - only check-style tests need it

    random.seed(0)  # some test bodies draw from the global random module
    code = case.get("context", "") + "\n" + case["source"]
    error = None
    status = "pass"
    try:
        exec(compile(code, "<test>", "exec"), ns)  # noqa: S102 - dataset test code, never submission code
    except _CallFailed as exc:
        status, error = exc.result["status"], exc.result.get("error")
    except AssertionError as exc:
        status, error = "fail", "assertion failed" + (f": {safe_repr(exc.args[0], 200)}" if exc.args else "")
    except BaseException as exc:  # noqa: BLE001 - e.g. a TypeError on a wrong return type
        status, error = "error", f"{type(exc).__name__}: {safe_repr(str(exc), 300)}"
    cpu = round(sum(budget[1:]), 4)
    got = "; ".join(calls[-3:]) if calls else None
    stdout = failure[-1].get("stdout") if failure else None
    return _result(status == "pass", status, case, got=got, error=error, stdout=stdout, cpu_s=cpu)


def _run_program_case(job: dict, case: dict, child_source: str) -> dict:
    """Run the submission as a program on ``case["stdin"]`` and compare its stdout."""
    cpu_limit = float(case["cpu_s"])
    job = dict(job, child_cpu_s=cpu_limit + IMPORT_CPU_S)
    try:
        child = Child(job, child_source, stdin_data=str(case["stdin"]).encode())
    except OSError as exc:
        if not SUBMISSION_RAN[0]:
            raise  # the first process of the run: the sandbox cannot start one (a harness error)
        kill_others(None)
        return _result(False, "error", case, error=f"could not start the program: {exc}")
    status, code, used = child.wait_for("exit", cpu_limit + IMPORT_CPU_S)
    out, err = child.captured()
    child.kill()
    cpu = round(used, 4)
    if status == "timeout":
        return _result(False, "timeout", case, error=f"time limit exceeded (limit {cpu_limit:g} s CPU)", cpu_s=cpu,
                       got=safe_repr(_cut(out, 300)))
    if status == "overflow":
        return _result(False, "error", case, error=f"output larger than {MAX_PROGRAM_OUTPUT_BYTES} bytes", cpu_s=cpu)
    if code != 0:
        if code == CHILD_INIT_FAILED:
            return _result(False, "error", case, error="the program could not be started", cpu_s=cpu)
        why = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return _result(False, "error", case, error=f"runtime error ({why})" + (f"\n{_cut(err, MAX_TRACEBACK_CHARS)}" if err else ""),
                       got=safe_repr(out), cpu_s=cpu)
    ok = outputs_match(out, str(case["expected"]), case.get("compare", "exact"))
    return _result(ok, "pass" if ok else "fail", case, got=safe_repr(out), cpu_s=cpu)
