"""Runs a project's pytest tests and reports each test's outcome (standard library + pytest only).

Started as ``python3 -I -S -B -c <this source> <config json>`` with the work tree as its working directory, both
by the instance build on the host (:func:`arl_envs.envs.code.swe.testrun.run_pytest_host`) and, inside the sandbox,
by the grading runner (:mod:`arl_envs.envs.code.swe.swe_runner`). ``-I -S`` means no ``site``, no
``sitecustomize``/``usercustomize``/``.pth`` and no ``PYTHON*`` variables; ``sys.path`` is set here to the tree's
source directory, the tree and the tool chain. The config json: ``{"path": [...], "args": [pytest args],
"fd": result fd}``. One JSON line per test goes to the result fd: ``{"id": nodeid, "o": "passed" | "failed" |
"skipped" | "error", "m": message}`` (the message: the assertion lines and the failing test line), then
``{"done": exit code}``.
"""

import json
import os
import sys

MAX_MESSAGE_CHARS = 2000


def _message(report):
    try:
        text = report.longreprtext or ""
    except Exception:  # noqa: BLE001
        text = ""
    keep = [line for line in text.splitlines() if line.startswith(("E ", ">"))]
    return "\n".join(keep)[:MAX_MESSAGE_CHARS]


class Recorder:
    """A pytest plugin object (never a conftest): collects the outcome of every test."""

    def __init__(self, fd):
        self.fd = fd
        self.outcome = {}

    def _emit(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]

    def pytest_runtest_logreport(self, report):
        nodeid = report.nodeid
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.passed:
                outcome = "passed"
            elif report.skipped:
                outcome = "skipped"
            else:
                outcome = "failed" if report.when == "call" else "error"
            self.outcome[nodeid] = (outcome, "" if report.passed or report.skipped else _message(report))
        elif report.when == "teardown" and report.failed:
            self.outcome[nodeid] = ("error", _message(report))
        if report.when == "teardown":
            outcome, msg = self.outcome.pop(nodeid, ("error", "the test did not run"))
            self._emit({"id": nodeid, "o": outcome, "m": msg})

    def pytest_collectreport(self, report):
        if report.failed:
            self._emit({"id": report.nodeid, "o": "error", "m": _message(report)})


def main():
    config = json.loads(sys.argv[1])
    sys.path[:0] = [p for p in config["path"]]
    sys.dont_write_bytecode = True
    import pytest

    recorder = Recorder(int(config["fd"]))
    code = pytest.main(list(config["args"]), plugins=[recorder])
    recorder._emit({"done": int(code)})


if __name__ == "__main__":
    main()
