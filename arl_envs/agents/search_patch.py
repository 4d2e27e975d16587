"""A fixed, scripted "search and patch" agent for ``arl/code.swe-v0`` (no language model, no privileged state).

:class:`SearchPatchAgent` plays only through the env's tools and what their observations say:

1. It reads the failing test ids from the issue (the ``- `<node id>``` lines) and runs the first one with
   ``bash`` (``pytest --tb=short``) to get a traceback with file and line of every frame.
2. Where the traceback passes through library code (files that are not tests), those frames are the suspects,
   deepest first. Where it does not, it greps the repository for the definitions of the functions that the failing
   test line calls. For each suspect it prints the code around it (``awk`` with line numbers) and finds the
   enclosing function.
3. Candidate fixes are single-token reversals of common bug families on the lines of that function, nearest to the
   suspect line first: a comparison (``<``/``<=``, ``==``/``!=``, ``in``/``not in``, ...), a binary operator
   (``+``/``-``, ``*``/``//``, ...), an integer constant -1 (0/1 swapped), a ``+ 1`` removed, a boolean keyword or
   default flipped, a ``not`` removed, the first two arguments of a call swapped; then a ``not`` added and a
   constant +1.
4. Each candidate is one ``apply_patch`` (a one-line hunk that also undoes the previous candidate) followed by
   ``run_tests`` on the failing test. When it passes, ``run_tests`` on the issue's test files checks that nothing
   else broke, then it submits. It submits whatever it has when its turns run out.

It never edits a test file. Bugs that deleted code (a dropped statement, branch, return or method) are out of its
reach by construction.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from arl_envs.agents.agents import Agent
from arl_envs.core.env import AgentEnv
from arl_envs.core.errors import ArlError

#: Lines shown around a suspect line (before, after).
WINDOW = (70, 30)
#: Lines shown from a function's ``def`` line found by grep.
DEF_WINDOW = 110
#: Suspect locations examined at most.
MAX_SUSPECTS = 4
#: Calls on a test line that are never the code under test.
_NOT_UNDER_TEST = frozenset(
    "assert len list set dict str int float tuple sorted repr type isinstance range print next iter bytes bool "
    "raises approx fixture mark parametrize warns deprecated_call getattr setattr hasattr sum min max any all "
    "enumerate zip map filter reversed frozenset object super callable id hash abs round divmod pow format vars "
    "open eval exec".split())
_FRAME = re.compile(r"^(?P<path>[^\s:][^:\n]*\.py):(?P<line>\d+): in (?P<func>\S+)", re.M)
_ISSUE_TEST = re.compile(r"^- `(?P<id>[^`\s]+::[^`]+)`", re.M)
_MAX_TURNS = re.compile(r"You have (\d+) turns")

_INVERSE_BINOP: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.FloorDiv, ast.Div), ast.FloorDiv: (ast.Mult, ast.Mod),
    ast.LShift: (ast.RShift,), ast.RShift: (ast.LShift,), ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,),
}
_INVERSE_CMP: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}


def is_test_file(path: str) -> bool:
    """Whether ``path`` looks like a test file (never edited by the agent)."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (name.startswith("test") or name.endswith("_test.py") or name == "conftest.py"
            or any(p in ("tests", "test", "testing") for p in parts[:-1]))


def failing_tests(issue: str) -> list[str]:
    """The test node ids listed in an issue text."""
    return [m.group("id") for m in _ISSUE_TEST.finditer(issue)]


def traceback_frames(text: str) -> list[tuple[str, int, str]]:
    """``(path, line, function)`` of each frame of a ``--tb=short`` traceback, outermost first."""
    out = []
    for m in _FRAME.finditer(text):
        path = m.group("path").strip()
        path = path[len("/work/"):] if path.startswith("/work/") else path
        out.append((path, int(m.group("line")), m.group("func")))
    return out


def called_names(code: str) -> list[str]:
    """Names of the functions and methods called in ``code`` (source lines), first seen first."""
    names = re.findall(r"(?:\b|\.)([A-Za-z_]\w*)\s*\(", code)
    seen: list[str] = []
    for n in names:
        if n not in seen and n not in _NOT_UNDER_TEST and not n.startswith(("assert", "test")):
            seen.append(n)
    return seen


@dataclass(frozen=True)
class Edit:
    """A candidate one-line fix: ``line`` (1-based) of ``path`` goes from ``old`` to ``new``."""

    path: str
    line: int
    old: str
    new: str


def _parse_line(stripped: str) -> ast.Module | None:
    text = ("if   " + stripped[5:]) if stripped.startswith("elif ") else stripped  # same length: offsets hold
    for attempt in (text, text + "\n    pass"):
        try:
            return ast.parse(attempt)
        except SyntaxError:
            continue
    return None


def _segment(body: bytes, node: ast.AST) -> tuple[int, int] | None:
    if getattr(node, "lineno", 0) != 1 or getattr(node, "end_lineno", 0) != 1:
        return None
    return node.col_offset, node.end_col_offset  # type: ignore[attr-defined]


def line_candidates(line: str) -> tuple[list[str], list[str]]:
    """Single-token reversals of ``line`` (a source line, indentation kept): ``(likely, unlikely)`` new lines."""
    stripped = line.strip()
    if not stripped or stripped.startswith(("#", "@", "else", "try", "finally", "except")):
        return [], []
    indent = line[: len(line) - len(line.lstrip())]
    tree = _parse_line(stripped)
    if tree is None:
        return [], []
    body = stripped.encode("utf-8")
    likely: list[str] = []
    unlikely: list[str] = []

    def put(bucket: list[str], node: ast.AST, text: str) -> None:
        seg = _segment(body, node)
        if seg is None:
            return
        new = indent + (body[: seg[0]] + text.encode("utf-8") + body[seg[1]:]).decode("utf-8")
        if new.strip() != stripped and _parse_line(new.strip()) is not None and new not in bucket:
            bucket.append(new)

    def negated(node: ast.AST) -> str:
        text = ast.unparse(node)
        return f"not {text}" if isinstance(node, (ast.Name, ast.Attribute, ast.Call)) else f"not ({text})"

    def swapped(node: ast.AST, **changes: Any) -> str:
        import copy  # noqa: PLC0415

        new = copy.copy(node)
        for k, v in changes.items():
            setattr(new, k, v)
        return ast.unparse(new)

    nodes = sorted(ast.walk(tree), key=lambda n: (getattr(n, "col_offset", 0), -getattr(n, "end_col_offset", 0)))
    for node in nodes:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _INVERSE_CMP:
            put(likely, node, swapped(node, ops=[_INVERSE_CMP[type(node.ops[0])]()]))
        elif isinstance(node, ast.BinOp) and type(node.op) in _INVERSE_BINOP:
            if isinstance(node.op, ast.Add) and isinstance(node.right, ast.Constant) and node.right.value == 1:
                put(likely, node, ast.unparse(node.left))
            for op in _INVERSE_BINOP[type(node.op)]:
                put(likely, node, swapped(node, op=op()))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            v = node.value
            put(likely, node, str({0: 1, 1: 0}.get(v, v - 1)))
            if v >= 1:
                put(unlikely, node, str(v + 1))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            put(likely, node, f"({ast.unparse(node.operand)})")
        elif isinstance(node, ast.Call):
            pos = node.args
            if len(pos) >= 2 and not any(isinstance(a, ast.Starred) for a in pos[:2]):
                put(likely, node, swapped(node, args=[pos[1], pos[0], *pos[2:]]))
            for kw in node.keywords:
                if isinstance(kw.value, ast.Constant) and type(kw.value.value) is bool:
                    put(likely, kw.value, str(not kw.value.value))
        elif isinstance(node, ast.arguments):
            for d in [*node.defaults, *(k for k in node.kw_defaults if k is not None)]:
                if isinstance(d, ast.Constant) and type(d.value) is bool:
                    put(likely, d, str(not d.value))
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) and not isinstance(node.test, ast.UnaryOp):
            put(unlikely, node.test, negated(node.test))
        elif isinstance(node, ast.Return) and isinstance(node.value, (ast.Compare, ast.BoolOp, ast.Name,
                                                                      ast.Attribute, ast.Call)):
            put(unlikely, node.value, negated(node.value))
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                if not isinstance(v, ast.UnaryOp):
                    put(unlikely, v, negated(v))
    return likely, unlikely


def numbered_lines(text: str) -> dict[int, str]:
    """``{line number: text}`` from ``awk`` output of ``NR<TAB>line`` rows."""
    out = {}
    for row in text.splitlines():
        num, sep, rest = row.partition("\t")
        if sep and num.strip().isdigit():
            out[int(num)] = rest
    return out


def enclosing_function(lines: dict[int, str], line: int) -> list[int]:
    """Line numbers of the function around ``line`` within ``lines`` (what is shown of it), nearest first."""
    def indent(s: str) -> int:
        return len(s) - len(s.lstrip())

    start = line
    target_indent = indent(lines.get(line, "")) if lines.get(line, "").strip() else 10**6
    for n in range(line, min(lines, default=line) - 1, -1):
        s = lines.get(n, "")
        if re.match(r"\s*(async\s+)?def\s", s) and (indent(s) < target_indent or n == line):
            start = n
            break
    else:
        start = min(lines, default=line)
    def_indent = indent(lines.get(start, ""))
    end = start
    for n in range(start + 1, max(lines, default=start) + 1):
        s = lines.get(n, "")
        if s.strip() and indent(s) <= def_indent and not s.strip().startswith(")"):
            break
        end = n
    in_string = False
    body = []
    for n in range(start, end + 1):
        s = lines.get(n)
        if s is None:
            continue
        quotes = s.count('"""') + s.count("'''")
        if not in_string and not quotes and s.strip():
            body.append(n)
        if quotes % 2:
            in_string = not in_string
    return sorted(body, key=lambda n: (abs(n - line), -n if n <= line else n))


def patch_text(path: str, line: int, old: str, new: str) -> str:
    """A unified diff replacing line ``line`` of ``path`` (``old`` -> ``new``), no context."""
    return f"--- a/{path}\n+++ b/{path}\n@@ -{line},1 +{line},1 @@\n-{old}\n+{new}\n"


class SearchPatchAgent(Agent):
    """The scripted search-and-patch agent (see the module docstring).

    Args:
        env: The ``arl/code.swe-v0`` env it plays (used only to write calls in the env's action format).
    """

    def __init__(self, env: gym.Env) -> None:
        base = env.unwrapped
        if not isinstance(base, AgentEnv):
            raise ArlError(f"expected an arl-envs AgentEnv, got {type(base).__name__}")
        self._render = base.render_call
        self._gen: Generator[str, str, None] | None = None
        self.edits_tried = 0

    def reset(self, seed: int | None = None) -> None:
        self._gen = None
        self.edits_tried = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """The next call; a reset observation (``info["turn"] == 0``) starts the script over on its issue."""
        if self._gen is None or info.get("turn") == 0:
            self.edits_tried = 0
            self._gen = self._play(observation)
            return next(self._gen)
        try:
            return self._gen.send(observation)
        except StopIteration:
            return self._render("submit", {})

    # ------------------------------------------------------------------ the script
    def _play(self, issue: str) -> Generator[str, str, None]:
        m = _MAX_TURNS.search(issue)
        turns_left = int(m.group(1)) if m else 30

        def call(name: str, args: dict[str, Any]) -> Generator[str, str, str]:
            nonlocal turns_left
            turns_left -= 1
            return (yield self._render(name, args))

        tests = failing_tests(issue)
        if not tests:
            yield self._render("submit", {})
            return
        first = tests[0]
        tb = yield from call("bash", {"command": f"python3 -m pytest -q -x --tb=short -p no:cacheprovider -o addopts='' "
                                                 f"'{first}' 2>&1 | tail -n 80"})
        frames = traceback_frames(tb)
        suspects = [(p, n) for p, n, f in reversed(frames) if not is_test_file(p) and f != "<module>"]
        defs: set[tuple[str, int]] = set()
        test_frames = [(p, n) for p, n, _ in frames if is_test_file(p)]
        if len(suspects) < MAX_SUSPECTS and test_frames:
            path, line = test_frames[0]
            out = yield from call("bash", {"command": self._show(path, line - 40, line)})
            shown = numbered_lines(out)
            body = sorted(n for n in enclosing_function(shown, line) if n <= line)
            code = [shown[line]] if line in shown else []
            code += [ln for ln in issue.splitlines() if ln.startswith(">")]
            code += [shown[n] for n in reversed(body)]
            names = called_names("\n".join(code))[:12]
            if names:
                alt = "|".join(re.escape(n) for n in names)
                out = yield from call("bash", {"command": f"grep -rnE '^\\s*(async\\s+)?def ({alt})\\b' "
                                                          "--include='*.py' . | grep -vE '(^|/)(tests?|testing)/"
                                                          "|/test_[^/:]*:|_test\\.py:|conftest' | head -n 40"})
                found: dict[str, tuple[str, int]] = {}
                for row in out.splitlines():
                    mm = re.match(r"^\./(?P<p>[^:]+\.py):(?P<n>\d+):\s*(async\s+)?def (?P<f>\w+)", row)
                    if mm and not is_test_file(mm.group("p")):
                        found.setdefault(mm.group("f"), (mm.group("p"), int(mm.group("n"))))
                defs = {found[n] for n in names if n in found}
                suspects += [found[n] for n in names if n in found]
        seen: set[tuple[str, int]] = set()
        suspects = [s for s in suspects if not (s in seen or seen.add(s))][:MAX_SUSPECTS]  # type: ignore[func-returns-value]

        applied: Edit | None = None
        later: list[Edit] = []
        tried: set[tuple[str, int, str]] = set()

        def attempts(edits: list[Edit]) -> Generator[str, str, bool]:
            nonlocal applied
            for edit in edits:
                if turns_left <= 2:
                    return False
                if (edit.path, edit.line, edit.new) in tried:
                    continue
                tried.add((edit.path, edit.line, edit.new))
                out = yield from call("apply_patch", {"patch": self._patch(applied, edit)})
                if not out.startswith("Patch applied"):
                    continue
                applied = edit
                self.edits_tried += 1
                out = yield from call("run_tests", {"target": first})
                if not _all_passed(out):
                    continue
                out = yield from call("run_tests", {"target": ""})
                if _all_passed(out):
                    return True
            return False

        for path, line in suspects:
            if turns_left <= 3:
                break
            lo, hi = (line, line + DEF_WINDOW) if (path, line) in defs else (line - WINDOW[0], line + WINDOW[1])
            out = yield from call("bash", {"command": self._show(path, lo, hi)})
            lines = numbered_lines(out)
            likely: list[Edit] = []
            for n in enclosing_function(lines, line):
                good, bad = line_candidates(lines[n])
                likely += [Edit(path, n, lines[n], new) for new in good]
                later += [Edit(path, n, lines[n], new) for new in bad]
            if (yield from attempts(likely)):
                break
        else:
            yield from attempts(later)
        yield self._render("submit", {})

    @staticmethod
    def _show(path: str, first: int, last: int) -> str:
        """A shell command printing lines ``first..last`` of ``path`` as ``NR<TAB>line``."""
        return f"awk 'NR>={max(1, first)} && NR<={last} {{print NR \"\\t\" $0}}' '{path}'"

    @staticmethod
    def _patch(applied: Edit | None, edit: Edit) -> str:
        """A diff that undoes ``applied`` (if any) and makes ``edit``."""
        if applied is None:
            return patch_text(edit.path, edit.line, edit.old, edit.new)
        if applied.path != edit.path:
            return (patch_text(applied.path, applied.line, applied.new, applied.old)
                    + patch_text(edit.path, edit.line, edit.old, edit.new))
        if applied.line == edit.line:
            return patch_text(edit.path, edit.line, applied.new, edit.new)
        hunks = sorted([(applied.line, applied.new, applied.old), (edit.line, edit.old, edit.new)])
        return f"--- a/{edit.path}\n+++ b/{edit.path}\n" + "".join(
            f"@@ -{n},1 +{n},1 @@\n-{o}\n+{w}\n" for n, o, w in hunks)


def _all_passed(run_tests_output: str) -> bool:
    """Whether a ``run_tests`` observation reports passing tests and no failure, error or cut run."""
    head = run_tests_output.splitlines()[0] if run_tests_output else ""
    summary = head.rsplit("] ", 1)[-1]
    return "passed" in summary and not re.search(r"\d+ (failed|error)", summary) and "(" not in summary
