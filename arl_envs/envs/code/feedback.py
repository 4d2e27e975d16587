"""Rendering test results as observations the agent can act on (which tests failed, input, expected, got,
error, truncated traceback), plus the shared sandbox holder of the code envs."""

from __future__ import annotations

from typing import Any

from arl_envs.envs.code.harness import CaseResult, JobResult
from arl_envs.envs.code.tasks import TestCase

#: Failing tests shown in detail per observation (the rest are counted).
MAX_DETAILED_FAILURES = 6
#: Characters of an error/traceback shown per failing test.
MAX_ERROR_CHARS = 800
#: Characters of printed output shown per failing test.
MAX_STDOUT_CHARS = 300
#: Characters of an import error shown.
MAX_IMPORT_ERROR_CHARS = 1500


def _cut_tail(text: str, limit: int) -> str:
    text = text.rstrip()
    return text if len(text) <= limit else "[...]" + text[-(limit - 5):]


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


def render_results(label: str, cases: tuple[TestCase, ...] | list[TestCase], result: JobResult, name: str = "") -> str:
    """A report of one job: ``"<label>: k/n passed."`` and details of the failing tests.

    Args:
        label: E.g. ``"Visible tests"``.
        cases: The tests that were run (for inputs and expected values).
        result: What the harness returned.
        name: Function name used when describing calls.
    """
    if result.error is not None:
        return f"{label}: 0/{len(cases)} passed.\n{result.error}"
    lines = [f"{label}: {result.n_passed}/{len(cases)} passed."]
    if result.import_error is not None:
        lines.append("Your code failed to load, so every test failed:")
        lines.append(_indent(_cut_tail(result.import_error, MAX_IMPORT_ERROR_CHARS)))
        return "\n".join(lines)
    shown = 0
    for i, (case, res) in enumerate(zip(cases, result.cases), 1):
        if res.passed:
            lines.append(f"[PASS] test {i}: {case.describe(name)}")
            continue
        if shown >= MAX_DETAILED_FAILURES:
            lines.append(f"[{res.status.upper()}] test {i}")
            continue
        shown += 1
        lines.append(_case_detail(i, case, res, name))
    return "\n".join(lines)


def _case_detail(i: int, case: TestCase, res: CaseResult, name: str) -> str:
    out = [f"[{res.status.upper()}] test {i}: {case.describe(name)}"]
    if case.kind == "stdio":
        out.append(f"  expected output: {case.expected_text()}")
        if res.got is not None:
            out.append(f"  your output:     {res.got}")
    elif case.kind == "call":
        out.append(f"  expected: {case.expected_text()}")
        if res.got is not None:
            out.append(f"  got:      {res.got}")
    elif res.got is not None:
        out.append(f"  calls: {res.got}")
    if res.error:
        out.append("  error:")
        out.append(_indent(_cut_tail(res.error, MAX_ERROR_CHARS)))
    if res.stdout:
        out.append(f"  printed: {_cut_tail(res.stdout, MAX_STDOUT_CHARS)!r}")
    return "\n".join(out)


class SandboxHolder:
    """Creates a sandbox on first use, wipes its work directory per episode, closes it once.

    Args:
        backend: ``"bwrap"`` or ``"docker"`` (see :func:`arl_envs.sandbox.get_sandbox`).
        kwargs: Extra arguments for the backend.
    """

    def __init__(self, backend: str, kwargs: dict[str, Any] | None = None) -> None:
        from arl_envs.sandbox import check_backend  # noqa: PLC0415

        check_backend(backend, kwargs)  # ValueError now, not an env_error at the first step
        self.backend = backend
        self.kwargs = dict(kwargs or {})
        self._sandbox: Any = None

    def get(self) -> Any:
        """The sandbox (created now if needed).

        Raises:
            SandboxUnavailable: the backend is missing (the message has the install step).
        """
        if self._sandbox is None or getattr(self._sandbox, "closed", False):
            from arl_envs.sandbox import get_sandbox  # noqa: PLC0415

            self._sandbox = get_sandbox(self.backend, **self.kwargs)
        return self._sandbox

    def new_episode(self) -> str | None:
        """Give the next episode a fresh work directory; returns an error message instead of raising."""
        if self._sandbox is None:
            return None
        try:
            self._sandbox.reset()
        except Exception as exc:  # noqa: BLE001 - a broken sandbox is replaced on next use
            self.close()
            return f"{type(exc).__name__}: {exc}"
        return None

    def close(self) -> None:
        """Close the sandbox (idempotent)."""
        sb, self._sandbox = self._sandbox, None
        if sb is not None:
            try:
                sb.close()
            except Exception:  # noqa: BLE001, S110 - closing is best effort
                pass
