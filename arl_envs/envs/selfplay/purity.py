"""The static "pure computation, no I/O" check of self-play programs: an allow-list of what a program may reach.

A proposed (or solver-written) program is Python source defining ``f``. It runs in the sandbox whatever this check
says; the check keeps the *task* honest (deterministic computation on the inputs, nothing read from outside) and
tells the proposer why a program is refused. Everything a program names must be on one of these lists:

- **Names** it loads: the builtins of :data:`ALLOWED_BUILTINS`, or names the program binds itself (functions,
  classes, parameters, variables, loop/``with``/``except``/``match`` targets, imports). A builtin outside the list
  (``open``, ``getattr``, ``eval``, ``type``, ``vars``...) may not appear at all, not even as a binding (a binding in
  one scope would not shadow it in another), and no name may start with ``__`` (``__builtins__``, ``__loader__``,
  ``__spec__``... are module globals).
- **Modules**: ``import m`` / ``import m as a`` / ``from m import n`` for the modules of :data:`ALLOWED_MODULES`
  only (no dotted ``import a.b``), and of a module only the names its list gives. A module may only be used as
  ``m.name`` (never bare: no aliasing, passing or storing it), so ``m.name`` is always checked against ``m``'s list
  (``typing.sys`` is refused: ``sys`` is not on ``typing``'s list).
- **Attributes** (``x.name``, and the ``name=`` keywords of a ``match`` class pattern, which read attributes too):
  never one starting with ``_``; otherwise a public attribute of a value type of :data:`VALUE_TYPES` (``str.split``,
  ``list.append``, ``Counter.most_common``...; ``str.format``/``format_map`` only on a literal whose fields name no
  attribute or index path, which they would walk), or an attribute the program defines itself (assigned as ``x.name = ...`` or in a class body), as
  long as no object of Python's own has it (a frame's ``f_globals``, a generator's ``gi_frame``, a function's
  code object's ``co_code``: :data:`PYTHON_ATTRIBUTES`), so a class cannot make ``gi_frame`` "its own".

So no attribute chain, dunder walk or string-computed access reaches ``sys``, ``os``, ``builtins`` or ``importlib``:
each step of the chain must be on a list, and the lists hold only values and functions of values.
"""

from __future__ import annotations

import ast
import builtins
import collections
import fractions
import re
import string
import types
from typing import Any

from arl_envs.core.actions import parse_untrusted_python

#: Longest program accepted, characters.
MAX_PROGRAM_CHARS = 4_000
#: Builtins a program may use: constructors and functions of values, exceptions. Not: I/O (open, print, input),
#: introspection (getattr, vars, dir, type, globals, id, hash), dynamic code (eval, exec, compile, __import__).
ALLOWED_BUILTINS = frozenset(
    {
        "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "complex", "dict",
        "divmod", "enumerate", "filter", "float", "frozenset", "hex", "int", "isinstance", "issubclass", "iter",
        "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow", "range", "repr", "reversed",
        "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip", "True", "False", "None", "NotImplemented",
        "Ellipsis", "Exception", "ArithmeticError", "AssertionError", "IndexError", "KeyError", "LookupError",
        "OverflowError", "RecursionError", "RuntimeError", "StopIteration", "TypeError", "ValueError",
        "ZeroDivisionError", "NotImplementedError", "staticmethod", "classmethod", "property",
    }
    # Every exception class is a value too (raise / except).
    | {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)}
)
#: Modules a program may import, and the names of each it may use.
ALLOWED_MODULES: dict[str, frozenset[str]] = {
    "math": frozenset(
        {"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "comb", "copysign", "cos", "cosh",
         "degrees", "dist", "e", "erf", "erfc", "exp", "expm1", "fabs", "factorial", "floor", "fmod", "frexp",
         "fsum", "gamma", "gcd", "hypot", "inf", "isclose", "isfinite", "isinf", "isnan", "isqrt", "lcm", "ldexp",
         "lgamma", "log", "log10", "log1p", "log2", "modf", "nan", "perm", "pi", "pow", "prod", "radians",
         "remainder", "sin", "sinh", "sqrt", "tan", "tanh", "tau", "trunc"}
    ),
    "itertools": frozenset(
        {"accumulate", "chain", "combinations", "combinations_with_replacement", "compress", "count", "cycle",
         "dropwhile", "filterfalse", "groupby", "islice", "pairwise", "permutations", "product", "repeat",
         "starmap", "takewhile", "tee", "zip_longest"}
    ),
    "functools": frozenset({"reduce", "lru_cache", "cache", "partial", "cmp_to_key", "total_ordering"}),
    "collections": frozenset({"Counter", "defaultdict", "deque", "OrderedDict", "namedtuple", "ChainMap"}),
    "string": frozenset(
        {"ascii_letters", "ascii_lowercase", "ascii_uppercase", "digits", "hexdigits", "octdigits", "punctuation",
         "whitespace", "printable"}
    ),
    "re": frozenset(
        {"compile", "search", "match", "fullmatch", "split", "findall", "finditer", "sub", "subn", "escape",
         "IGNORECASE", "I", "MULTILINE", "M", "DOTALL", "S", "VERBOSE", "X", "ASCII", "A"}
    ),
    "heapq": frozenset({"heappush", "heappop", "heapify", "heapreplace", "heappushpop", "nlargest", "nsmallest",
                        "merge"}),
    "bisect": frozenset({"bisect", "bisect_left", "bisect_right", "insort", "insort_left", "insort_right"}),
    "operator": frozenset(
        {"abs", "add", "and_", "concat", "contains", "countOf", "eq", "floordiv", "ge", "gt", "index", "indexOf",
         "inv", "invert", "itemgetter", "le", "lshift", "lt", "mod", "mul", "ne", "neg", "not_", "or_", "pos",
         "pow", "rshift", "sub", "truediv", "truth", "xor"}
    ),
    "fractions": frozenset({"Fraction"}),
    "statistics": frozenset(
        {"mean", "fmean", "geometric_mean", "harmonic_mean", "median", "median_low", "median_high",
         "median_grouped", "mode", "multimode", "pstdev", "pvariance", "stdev", "variance", "quantiles"}
    ),
    "typing": frozenset(
        {"Any", "Callable", "Dict", "FrozenSet", "Iterable", "Iterator", "List", "Optional", "Sequence", "Set",
         "Tuple", "Union", "Mapping", "Generator", "Hashable", "Deque", "DefaultDict", "Counter", "NamedTuple"}
    ),
    "dataclasses": frozenset({"dataclass", "field", "astuple", "asdict", "replace"}),
    "copy": frozenset({"copy", "deepcopy"}),
}
#: Types whose public attributes (methods and data) a program may use on its values.
VALUE_TYPES: tuple[type, ...] = (
    str, bytes, bytearray, int, float, complex, bool, list, tuple, dict, set, frozenset, range, slice,
    collections.Counter, collections.deque, collections.defaultdict, collections.OrderedDict, collections.ChainMap,
    fractions.Fraction, re.Pattern, re.Match, property,
)
#: Public methods of value types that a program may call only on a string literal whose fields are plain
#: (``"{}-{0}".format(...)``): with a field like ``{0.__class__}`` they walk attribute paths written in the string.
STRING_WALKS = frozenset({"format", "format_map"})
ALLOWED_ATTRIBUTES = frozenset(
    name for t in VALUE_TYPES for name in dir(t) if not name.startswith("_") and name not in STRING_WALKS
)
#: Public attributes of Python's own objects (the types of :mod:`types`: functions, code, frames, generators,
#: coroutines, tracebacks, modules, methods; and classes, exceptions, properties): a program may not define these
#: as its own attributes (that would let ``g.gi_frame.f_globals`` through as "the program's").
PYTHON_ATTRIBUTES = frozenset(
    name
    for obj in (
        *(t for t in vars(types).values() if isinstance(t, type)), type, object, BaseException, property,
        staticmethod, classmethod, super,
    )
    for name in dir(obj)
    if not name.startswith("_")
) - ALLOWED_ATTRIBUTES
_BUILTIN_NAMES = frozenset(dir(builtins))
_POSITION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the program binds anywhere (assignments, defs, parameters, targets, imports, patterns)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _own_attributes(tree: ast.AST) -> set[str]:
    """Attributes the program defines: ``x.name = ...`` targets and the names bound in class bodies."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            own.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    own.add(stmt.name)
                for sub in ast.walk(stmt) if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign) else ():
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                        own.add(sub.id)
    return own


def check_program(program: str) -> str | None:
    """Why ``program`` is not an acceptable proposal/solution (None when it is): see the module docstring.

    Also: it parses, is at most :data:`MAX_PROGRAM_CHARS` characters and defines a top-level function ``f``.
    """
    if len(program) > MAX_PROGRAM_CHARS:
        return f"the program is longer than {MAX_PROGRAM_CHARS} characters"
    try:
        tree = parse_untrusted_python(program, "exec")
    except SyntaxError as exc:
        return f"the program does not parse: {exc}"
    if not any(isinstance(n, ast.FunctionDef) and n.name == "f" for n in tree.body):
        return "the program must define a top-level function f(x)"
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        reason = _check_import(node, modules)
        if reason is not None:
            return reason
    own = _own_attributes(tree)
    usable = (_bound_names(tree) | ALLOWED_BUILTINS) - (_BUILTIN_NAMES - ALLOWED_BUILTINS)
    parents: dict[int, ast.AST] = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    # Source order; in a chain ``a.b.c`` the inner ``a.b`` (it ends first) comes first.
    nodes = sorted(ast.walk(tree), key=lambda n: tuple(getattr(n, k, 0) for k in _POSITION))
    for node in nodes:  # names first (in source order), then attributes: the message names the first gateway
        if isinstance(node, ast.Name):
            reason = _check_name(node, parents, modules, usable)
        elif isinstance(node, ast.arg | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.arg if isinstance(node, ast.arg) else node.name
            reason = _check_binding(name, in_class=isinstance(parents.get(id(node)), ast.ClassDef))
        else:
            reason = None
        if reason is not None:
            return reason
    for node in nodes:
        if isinstance(node, ast.Attribute):
            reason = _check_attribute(node.attr, node.value, modules, own)
        elif isinstance(node, ast.MatchClass):
            reason = next((r for a in node.kwd_attrs if (r := _check_attribute(a, None, modules, own))), None)
        else:
            reason = None
        if reason is not None:
            return reason
    return None


def _check_import(node: ast.AST, modules: dict[str, str]) -> str | None:
    allowed = ", ".join(sorted(ALLOWED_MODULES))
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in ALLOWED_MODULES:
                return f"importing {alias.name!r} is not allowed (allowed: {allowed})"
            modules[alias.asname or alias.name] = alias.name
    elif isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level or module not in ALLOWED_MODULES:
            return f"importing {module!r} is not allowed (allowed: {allowed})"
        for alias in node.names:
            if alias.name.startswith("_"):
                return f"importing private names ({alias.name}) is not allowed"
            if alias.name not in ALLOWED_MODULES[module]:
                return (
                    f"importing {module}.{alias.name} is not allowed (no I/O, introspection or dynamic code; "
                    f"allowed from {module}: {', '.join(sorted(ALLOWED_MODULES[module]))})"
                )
    return None


def _check_binding(name: str, *, in_class: bool) -> str | None:
    if name in _BUILTIN_NAMES and name not in ALLOWED_BUILTINS:
        return f"using {name!r} is not allowed (no I/O, introspection or dynamic code)"
    if name.startswith("__") and not (in_class and name.endswith("__")):
        return f"names starting with '__' ({name}) are not allowed"
    return None


def _check_name(node: ast.Name, parents: dict[int, ast.AST], modules: dict[str, str], usable: set[str]) -> str | None:
    name = node.id
    if name.startswith("__"):
        return f"names starting with '__' ({name}) are not allowed"
    if name in _BUILTIN_NAMES and name not in ALLOWED_BUILTINS:
        return f"using {name!r} is not allowed (no I/O, introspection or dynamic code)"
    if name in modules:
        parent = parents.get(id(node))
        if not (isinstance(parent, ast.Attribute) and parent.value is node) or isinstance(node.ctx, ast.Store):
            return f"the module {name!r} may only be used as {name}.<name> (not stored, passed or rebound)"
        return None
    if isinstance(node.ctx, ast.Load) and name not in usable:
        return f"the name {name!r} is not defined by the program nor an allowed builtin"
    return None


def _check_attribute(attr: str, base: Any, modules: dict[str, str], own: set[str]) -> str | None:
    if attr.startswith("_"):
        return f"private and dunder attributes ({attr}) are not allowed"
    if isinstance(base, ast.Name) and base.id in modules:
        module = modules[base.id]
        if attr not in ALLOWED_MODULES[module]:
            return (
                f"using {module}.{attr} is not allowed (no I/O, introspection or dynamic code; allowed from "
                f"{module}: {', '.join(sorted(ALLOWED_MODULES[module]))})"
            )
        return None
    if attr in ALLOWED_ATTRIBUTES or (attr in own and attr not in PYTHON_ATTRIBUTES | STRING_WALKS):
        return None
    if attr in STRING_WALKS and isinstance(base, ast.Constant) and isinstance(base.value, str):
        if _plain_format(base.value):
            return None
        return f"str.{attr} with attribute or index paths in its fields is not allowed ({base.value[:40]!r})"
    why = " (it belongs to Python's own objects)" if attr in PYTHON_ATTRIBUTES else ""
    return f"the attribute {attr!r} is not allowed{why}: only methods of values and the program's own attributes"


def _plain_format(template: str) -> bool:
    """Whether a format string's fields (nested ones in format specs too) are plain: ``{}``, ``{0}``, ``{name}``,
    never an attribute or index path (``{0.__class__}``, ``{0[x]}``), which ``str.format`` would walk."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        return False
    for _, field_name, spec, _ in parts:
        if field_name is not None and ("." in field_name or "[" in field_name):
            return False
        if spec and not _plain_format(spec):
            return False
    return True
