"""The self-play purity check is an allow-list: no chain of attributes, names or strings reaches sys/os/builtins.

Each bypass below ran (or would run) I/O or introspection while the documented check said "pure computation".
"""

from __future__ import annotations

import ast

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.envs.selfplay.propose_solve import TEMPLATES
from arl_envs.envs.selfplay.purity import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_BUILTINS,
    ALLOWED_MODULES,
    PYTHON_ATTRIBUTES,
    check_program,
)
from arl_envs_tests.sandbox.conftest import bwrap_skip_reason

G = "(i for i in [1])"
BYPASSES = {
    # an allowed module's attribute that is a module (the reported one), and its relatives
    "typing_sys_modules": 'import typing\ndef f(x):\n    return typing.sys.modules["os"].getcwd()',
    "re_enum_sys": "import re\ndef f(x):\n    return re.enum.sys.modules",
    "re_functools": "import re\ndef f(x):\n    return re.functools.sys",
    "copy_sys": "import copy\ndef f(x):\n    return copy.sys",
    "dataclasses_sys": "import dataclasses\ndef f(x):\n    return dataclasses.sys.modules",
    "dataclasses_builtins": "import dataclasses\ndef f(x):\n    return dataclasses.builtins.open",
    "statistics_sys": "import statistics\ndef f(x):\n    return statistics.sys",
    "fractions_sys": "import fractions\ndef f(x):\n    return fractions.sys",
    "typing_importlib": "import typing\ndef f(x):\n    return typing.functools.sys",
    "from_typing_import_sys": "from typing import sys\ndef f(x):\n    return sys.modules",
    "from_dataclasses_import_builtins": "from dataclasses import builtins\ndef f(x):\n    return 1",
    "dotted_import": "import collections.abc\ndef f(x):\n    return 1",
    "relative_import": "from . import os\ndef f(x):\n    return 1",
    "import_importlib": "import importlib\ndef f(x):\n    return importlib.import_module('os')",
    "import_sys": "import sys\ndef f(x):\n    return 1",
    # a module object aliased, stored or passed, so the attribute is no longer checked against its list
    "module_alias": "import typing\nt = typing\ndef f(x):\n    return t.sys",
    "module_in_container": "import typing\ndef f(x):\n    return [typing][0].sys",
    "module_as_argument": "import typing\ndef g(m):\n    return m.sys\ndef f(x):\n    return g(typing)",
    "module_rebound": "import math\ndef f(x):\n    math = x\n    return math",
    # dunder walks
    "subclasses_walk": "def f(x):\n    return ().__class__.__base__.__subclasses__()",
    "function_globals": "def f(x):\n    return f.__globals__['__builtins__']",
    "lambda_globals": "def f(x):\n    return (lambda: 0).__globals__",
    "builtins_global": "def f(x):\n    return __builtins__",
    "loader_global": "def f(x):\n    return __loader__.load_module('os')",
    "spec_global": "def f(x):\n    return __spec__",
    "import_builtin": "def f(x):\n    return __import__('os')",
    # frames, code and tracebacks through public attribute names
    "generator_frame": f"def f(x):\n    return {G}.gi_frame.f_globals['__builtins__']",
    "frame_back": f"def f(x):\n    return {G}.gi_frame.f_back",
    "code_object": f"def f(x):\n    return {G}.gi_code.co_consts",
    "class_claims_frame_names": f"class A:\n    gi_frame = 1\n    f_globals = 2\ndef f(x):\n    return {G}.gi_frame.f_globals",
    "attribute_store_claims_names": f"def f(x):\n    a = x\n    a.gi_frame = 1\n    return {G}.gi_frame",
    "match_class_reads_attribute": f"def f(x):\n    match {G}:\n        case object(gi_frame=fr):\n            return fr",
    "traceback_frame": "def f(x):\n    try:\n        1 / 0\n    except ZeroDivisionError as e:\n        return e.__traceback__.tb_frame",
    "type_mro": "def f(x):\n    return type(x).mro()[-1].__subclasses__()",
    # computed strings
    "getattr_computed": "def f(x):\n    return getattr(x, '__cl' + 'ass__')",
    "attrgetter": "import operator\ndef f(x):\n    return operator.attrgetter('__globals__')(f)",
    "methodcaller": "import operator\ndef f(x):\n    return operator.methodcaller('__reduce__')(x)",
    "str_format_walk": "def f(x):\n    return '{0.__class__.__mro__}'.format(x)",
    "str_format_map": "def f(x):\n    return '{a.__class__}'.format_map({'a': x})",
    "string_formatter": "import string\ndef f(x):\n    return string.Formatter().vformat('{0.__globals__}', [f], {})",
    "get_type_hints": "import typing\ndef f(x: 'os') -> int:\n    return typing.get_type_hints(f)",
    "eval_name": "def f(x):\n    return eval('1')",
    "vars_builtin": "def f(x):\n    return vars()",
    "globals_builtin": "def f(x):\n    return globals()['__builtins__']",
    "dir_builtin": "def f(x):\n    return dir()",
    "open_builtin": "def f(x):\n    return open('/etc/passwd').read()",
    "print_builtin": "def f(x):\n    print(x)\n    return x",
    # a builtin bound in one scope is still the builtin in another
    "shadowed_open": "def g(open):\n    return 1\ndef f(x):\n    return open('/etc/passwd')",
    "rebound_getattr": "def f(x):\n    getattr = 1\n    return getattr",
    "private_import": "from typing import _eval_type\ndef f(x):\n    return x",
}
HONEST = {
    "math": "import math\ndef f(x):\n    return math.isqrt(x) + math.gcd(x, 6)",
    "counter": "from collections import Counter\ndef f(xs):\n    return Counter(xs).most_common(1)[0][0]",
    "node_class": "class Node:\n    def __init__(self, v):\n        self.v = v\n        self.next = None\n"
    "    def __lt__(self, other):\n        return self.v < other.v\ndef f(x):\n    n = Node(x)\n    return n.v + (n.next or 0)",
    "dataclass": "import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int\n    b: int = 0\ndef f(x):\n    return P(x).a",
    "strings": "def f(s):\n    return '-'.join(w.capitalize() for w in s.split()) + f'{len(s):>4}'",
    "exceptions": "def f(x):\n    try:\n        return 10 // x\n    except ZeroDivisionError:\n        raise ValueError('zero')",
    "typing_and_functools": "import functools\nimport typing\n@functools.lru_cache(maxsize=None)\n"
    "def f(n: int) -> typing.Tuple[int, int]:\n    return (n, n) if n < 2 else (f(n - 1)[0] + f(n - 2)[0], n)",
    "regex": "import re\ndef f(s):\n    return [m.group(0) for m in re.finditer(r'[aeiou]+', s)]",
    "property": "class C:\n    def __init__(self):\n        self.w = 1\n    @property\n    def v(self):\n        return 2\n"
    "def f(x):\n    return C().v + x",
}


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_bypass_class_is_refused(name: str) -> None:
    reason = check_program(BYPASSES[name])
    assert reason is not None, name
    assert any(why in reason for why in ("not allowed", "not defined", "may only be used")), reason


@pytest.mark.parametrize("name", sorted(HONEST))
def test_pure_programs_pass(name: str) -> None:
    assert check_program(HONEST[name]) is None


def test_the_templates_of_the_scripted_proposer_pass() -> None:
    for program, _ in TEMPLATES:
        assert check_program(program) is None, program


def test_allow_lists_hold_no_gateway() -> None:
    """The lists themselves: no module or Python-internal attribute is allowed, no dangerous builtin."""
    import importlib

    for module, names in ALLOWED_MODULES.items():
        mod = importlib.import_module(module)
        for name in names:
            assert hasattr(mod, name), (module, name)
            assert not isinstance(getattr(mod, name), type(ast)), (module, name)  # never a module
    assert not {"open", "eval", "exec", "compile", "getattr", "vars", "globals", "type", "__import__", "print"} & (
        ALLOWED_BUILTINS
    )
    assert not {"gi_frame", "f_globals", "f_back", "tb_frame", "co_code", "format", "format_map", "mro"} & (
        ALLOWED_ATTRIBUTES
    )
    assert {"gi_frame", "f_globals", "tb_frame", "cr_frame", "co_code"} <= PYTHON_ATTRIBUTES


@pytest.mark.skipif(bwrap_skip_reason() is not None, reason=str(bwrap_skip_reason()))
def test_reported_bypass_is_an_invalid_proposal_in_the_env() -> None:
    env = gym.make("arl/selfplay.propose-solve-v1", task_types=["deduction"], k=2, timeout_s=1.5)
    try:
        env.reset(seed=0)
        program = BYPASSES["typing_sys_modules"]
        _, r, term, _, info = env.step(f"```python\n{program}\n```\n<inputs>[1]</inputs>")
        assert term and r == -1.0 and info["proposal_valid"] is False and "typing.sys" in info["proposal_error"]
    finally:
        env.close()


def test_str_format_only_on_plain_literal_templates() -> None:
    assert check_program("def f(x):\n    return '{}-{0}-{n:>{w}}'.format(x, n=1, w=3)") is None
    for template in ("'{0.__class__}'", "'{0[0]}'", "'{:{0.real}}'"):
        assert check_program(f"def f(x):\n    return {template}.format(x)") is not None, template
    assert check_program("def f(x):\n    t = '{0.__class__}'\n    return t.format(x)") is not None
    own_format = "class A:\n    def format(self):\n        return 1\ndef f(x):\n    t = '{0.__class__}'\n    return t.format(x)"
    assert check_program(own_format) is not None  # a class's own `format` does not unlock str.format
