"""Procedural bug injection over a module's AST, SWE-smith style, without any language model.

:func:`mutations` lists every candidate mutation of one source file, in source order, each a small text edit of
the original (one node's source segment replaced, or one statement's lines removed), so the patch is a minimal
diff. Families (:data:`FAMILIES`):

* ``operator``: a binary operator swapped (``+``/``-``, ``*``/``//``, ``<<``/``>>``, ``&``/``|``, ``%``/``//``);
* ``comparison``: a comparison changed (``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``in``/``not in``,
  ``is``/``is not``);
* ``constant``: an integer constant ``n`` -> ``n + 1`` (0 -> 1, 1 -> 0);
* ``boundary``: a slice bound ``b`` -> ``b + 1``;
* ``drop_condition``: one operand of an ``and``/``or`` dropped;
* ``drop_branch``: the ``else`` branch of an ``if`` removed;
* ``drop_statement``: an assignment or expression statement removed (from a block with more than one statement);
* ``drop_return``: an early-return guard (``if c: return x``) removed;
* ``swap_args``: the first two positional arguments of a call swapped;
* ``invert_flag``: ``not x`` -> ``x``, or a ``True``/``False`` keyword argument or default inverted;
* ``remove_override``: a method of a class with base classes removed (a dunder other than ``__init__`` kept).
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

FAMILIES = ("operator", "comparison", "constant", "boundary", "drop_condition", "drop_branch", "drop_statement",
            "drop_return", "swap_args", "invert_flag", "remove_override")

_BINOPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult, ast.Div: ast.Mult,
           ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
           ast.Mod: ast.FloorDiv}
_CMPOPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


@dataclass(frozen=True)
class Mutation:
    """One candidate bug.

    Attributes:
        family: One of :data:`FAMILIES`.
        path: The mutated file (relative to the project tree).
        line: First line of the changed code (1-based; build bookkeeping, never shown to the agent).
        source: The whole mutated file.
    """

    family: str
    path: str
    line: int
    source: str


def unified_diff(path: str, old: str, new: str) -> str:
    """A ``git diff``-style unified diff of one file (``a/<path>`` -> ``b/<path>``)."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


class _Source:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line))

    def _off(self, line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        raw = self.lines[line - 1].encode("utf-8")[:col].decode("utf-8", "replace")
        return self.offsets[line - 1] + len(raw)

    def replace_node(self, node: ast.AST, new_text: str) -> str:
        start = self._off(node.lineno, node.col_offset)
        end = self._off(node.end_lineno, node.end_col_offset)
        return self.text[:start] + new_text + self.text[end:]

    def drop_lines(self, first: int, last: int, keep_pass: bool = False) -> str:
        indent = self.lines[first - 1][: len(self.lines[first - 1]) - len(self.lines[first - 1].lstrip())]
        repl = [f"{indent}pass\n"] if keep_pass else []
        return "".join(self.lines[: first - 1] + repl + self.lines[last:])


def _swap(node: ast.AST, **changes: object) -> str:
    import copy  # noqa: PLC0415

    new = copy.copy(node)
    for k, v in changes.items():
        setattr(new, k, v)
    return ast.unparse(new)


def _single_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", 0) == getattr(node, "end_lineno", -1)


def mutations(path: str, text: str) -> list[Mutation]:
    """Every candidate mutation of the file ``path`` with content ``text``, in a deterministic order.

    Only edits inside function bodies are made (module-level code runs at import and breaks everything);
    each result still parses.
    """
    tree = ast.parse(text)
    src = _Source(text)
    out: list[Mutation] = []

    def add(family: str, node: ast.AST, new_text: str) -> None:
        try:
            ast.parse(new_text)
        except SyntaxError:
            return
        if new_text != text:
            out.append(Mutation(family, path, node.lineno, new_text))

    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for fn in functions:
        for node in ast.walk(fn):
            if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            _node_mutations(node, src, add)
        _block_mutations(fn, src, add)
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.bases]:
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for m in methods:
            if m.name == "__init__" or len(cls.body) < 2:
                continue
            first = min([m.lineno] + [d.lineno for d in m.decorator_list])
            add("remove_override", m, src.drop_lines(first, m.end_lineno))
    out.sort(key=lambda m: (m.line, FAMILIES.index(m.family)))
    seen: set[str] = set()
    unique = []
    for m in out:
        if m.source not in seen:
            seen.add(m.source)
            unique.append(m)
    return unique


def _node_mutations(node: ast.AST, src: _Source, add) -> None:  # noqa: ANN001
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS and _single_line(node):
        add("operator", node, src.replace_node(node, _swap(node, op=_BINOPS[type(node.op)]())))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS and _single_line(node):
        add("comparison", node, src.replace_node(node, _swap(node, ops=[_CMPOPS[type(node.ops[0])]()])))
    elif isinstance(node, ast.Constant) and type(node.value) is int and _single_line(node):
        v = node.value
        add("constant", node, src.replace_node(node, str({0: 1, 1: 0}.get(v, v + 1))))
    elif isinstance(node, ast.Slice) and _single_line(node):
        for part in ("lower", "upper"):
            b = getattr(node, part)
            if b is not None and _single_line(b):
                add("boundary", b, src.replace_node(b, f"({ast.unparse(b)} + 1)"))
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2 and _single_line(node):
        for keep in node.values:
            add("drop_condition", node, src.replace_node(node, f"({ast.unparse(keep)})"))
    elif isinstance(node, ast.Call) and _single_line(node):
        pos = node.args
        if len(pos) >= 2 and not any(isinstance(a, ast.Starred) for a in pos[:2]):
            args = [pos[1], pos[0], *pos[2:]]
            add("swap_args", node, src.replace_node(node, _swap(node, args=args)))
        for kw in node.keywords:
            if isinstance(kw.value, ast.Constant) and type(kw.value.value) is bool:
                add("invert_flag", kw.value, src.replace_node(kw.value, str(not kw.value.value)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and _single_line(node):
        add("invert_flag", node, src.replace_node(node, f"({ast.unparse(node.operand)})"))
    elif isinstance(node, ast.arguments):
        for d in [*node.defaults, *(k for k in node.kw_defaults if k is not None)]:
            if isinstance(d, ast.Constant) and type(d.value) is bool:
                add("invert_flag", d, src.replace_node(d, str(not d.value)))


def _block_mutations(fn: ast.AST, src: _Source, add) -> None:  # noqa: ANN001
    for node in ast.walk(fn):
        if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            for stmt in block:
                if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)) and len(block) > 1:
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                        continue  # a docstring
                    add("drop_statement", stmt, src.drop_lines(stmt.lineno, stmt.end_lineno))
                if (isinstance(stmt, ast.If) and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Return)
                        and not stmt.orelse and len(block) > 1):
                    add("drop_return", stmt, src.drop_lines(stmt.lineno, stmt.end_lineno))
                if isinstance(stmt, ast.If) and stmt.orelse and not (
                        len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If)):
                    first = stmt.orelse[0].lineno - 1  # the `else:` line
                    line = src.lines[first - 1].strip()
                    if line.startswith("else") and line.rstrip().endswith(":"):
                        add("drop_branch", stmt, src.drop_lines(first, stmt.orelse[-1].end_lineno))
