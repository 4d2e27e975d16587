"""The code harness protocol, shared by the host and the in-sandbox runner (standard library only).

What both sides of a harness run agree on: the bootstrap the sandbox starts with, the marker and version of the
runner's authenticated record, the value codec that carries arguments and return values across the
parent/child boundary (exact built-in types only), the strict type-checked comparisons of return values and
program outputs, and the rule that turns a reference solution's CPU time into a test's CPU limit. The host
imports it (:mod:`arl_envs.envs.code.harness`, :mod:`arl_envs.envs.code.tasks`); the sandbox gets its source as
the first of the runner's sources (see :mod:`arl_envs.envs.code.runner`).
"""

from __future__ import annotations

import math
from typing import Any

#: Marker that starts the runner's authenticated end-of-tests record on its stdout.
RESULT_MARKER = "ARL-CODE-RESULT"
#: Version of the payload/record protocol.
PROTOCOL_VERSION = 1
#: Bootstrap passed as ``python3 -I -S -B -c BOOTSTRAP``: become non-dumpable, read the payload, run the runner's
#: sources (``payload["runner"]``, a list) in order in one namespace named ``arl_runner``, call its ``main``.
BOOTSTRAP = (
    "import ctypes,sys,json\n"
    "if ctypes.CDLL(None).prctl(4,0,0,0,0)!=0:raise SystemExit(97)\n"  # PR_SET_DUMPABLE=4
    "p=json.loads(sys.stdin.buffer.read())\n"
    "g={'__name__':'arl_runner'}\n"
    "for s in p['runner']:exec(compile(s,'<arl-runner>','exec'),g)\n"
    "g['main'](p)\n"
)

#: Characters of a repr kept in a case report.
MAX_REPR_CHARS = 400
#: Nesting depth accepted by the value codec.
MAX_DEPTH = 100


# ----------------------------------------------------------------------------------------------- value codec
class CodecError(ValueError):
    """A value that cannot cross the parent/child boundary (unsupported type, too deep, malformed)."""


def encode(value: Any, depth: int = 0) -> Any:
    """Encode a plain Python value as JSON-able data with explicit types.

    Supported (exact types only, subclasses refused): None, bool, int, float (nan/inf too), str, bytes,
    complex, list, tuple, dict, set, frozenset. JSON ``null``/``true``/``false``/strings/arrays stand for
    None/bool/str/list; every other type is a one-key object: ``{"i": "12"}``, ``{"f": "0.5"}``,
    ``{"t": [...]}``, ``{"d": [[k, v], ...]}``, ``{"set": [...]}``, ``{"fs": [...]}``, ``{"b": "hex"}``,
    ``{"c": [re, im]}``. (The child writes strings as ``{"s": "<utf-8 hex>"}``; :func:`decode` accepts both.)

    Raises:
        CodecError: an unsupported type or nesting deeper than MAX_DEPTH.
    """
    if depth > MAX_DEPTH:
        raise CodecError(f"value nested deeper than {MAX_DEPTH} levels")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return {"i": str(value)}
    if t is float:
        return {"f": repr(value)}
    if t is list:
        return [encode(v, depth + 1) for v in value]
    if t is tuple:
        return {"t": [encode(v, depth + 1) for v in value]}
    if t is dict:
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if t is set:
        return {"set": [encode(v, depth + 1) for v in value]}
    if t is frozenset:
        return {"fs": [encode(v, depth + 1) for v in value]}
    if t is bytes:
        return {"b": value.hex()}
    if t is complex:
        return {"c": [repr(value.real), repr(value.imag)]}
    raise CodecError(
        f"a value of type {t.__module__}.{t.__qualname__} cannot be returned; "
        "return plain built-in values (int, float, str, bool, None, list, tuple, dict, set, bytes)"
    )


def decode(data: Any, depth: int = 0) -> Any:
    """Rebuild a value from :func:`encode`'s form (strictly: anything else raises :class:`CodecError`)."""
    if depth > MAX_DEPTH:
        raise CodecError(f"value nested deeper than {MAX_DEPTH} levels")
    if data is None or type(data) is bool or type(data) is str:
        return data
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is not dict or len(data) != 1:
        raise CodecError(f"malformed value encoding: {str(data)[:80]}")
    (tag, body), = data.items()
    try:
        if tag == "s" and type(body) is str:
            return bytes.fromhex(body).decode("utf-8", "surrogatepass")
        if tag == "i" and type(body) is str:
            return int(body)
        if tag == "f" and type(body) is str:
            return float(body)
        if tag == "c" and type(body) is list and len(body) == 2:
            return complex(float(body[0]), float(body[1]))
        if tag == "b" and type(body) is str:
            return bytes.fromhex(body)
        if type(body) is list:
            if tag == "t":
                return tuple(decode(v, depth + 1) for v in body)
            if tag == "set":
                return {decode(v, depth + 1) for v in body}
            if tag == "fs":
                return frozenset(decode(v, depth + 1) for v in body)
            if tag == "d":
                out = {}
                for pair in body:
                    if type(pair) is not list or len(pair) != 2:
                        raise CodecError("malformed dict item")
                    out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)
                return out
    except (ValueError, TypeError, OverflowError) as exc:  # int digit limit, unhashable keys, bad floats
        raise CodecError(f"malformed {tag!r} value: {exc}") from None
    raise CodecError(f"unknown value tag {tag!r}")


def strict_equal(a: Any, b: Any, rel_tol: float = 0.0, abs_tol: float = 0.0) -> bool:
    """Type-checked equality: ``type(a) is type(b)`` at every level, containers compared element-wise in order.

    Floats compare exactly unless ``rel_tol``/``abs_tol`` are given (``math.isclose``); two NaNs are equal.
    Sets and dict keys compare as sets of (type, value) pairs, so ``{1}`` is not ``{True}``.
    """
    if type(a) is not type(b):
        return False
    t = type(a)
    if t is float:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if rel_tol or abs_tol:
            return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
        return a == b
    if t is complex:
        return strict_equal(a.real, b.real, rel_tol, abs_tol) and strict_equal(a.imag, b.imag, rel_tol, abs_tol)
    if t is list or t is tuple:
        return len(a) == len(b) and all(strict_equal(x, y, rel_tol, abs_tol) for x, y in zip(a, b))
    if t is dict:
        if _typed_keys(a) != _typed_keys(b):
            return False
        return all(strict_equal(a[k], b[k], rel_tol, abs_tol) for k in a)
    if t is set or t is frozenset:
        return _typed_keys(a) == _typed_keys(b)
    return a == b


def _typed_keys(items: Any) -> set:
    return {(type(k), k) for k in items}


def safe_repr(value: Any, limit: int = MAX_REPR_CHARS) -> str:
    """``repr`` cut to ``limit`` characters (never raises)."""
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001 - a RecursionError on a deep value
        text = f"<unprintable {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 15] + "...[truncated]"


def outputs_match(got: str, expected: str, mode: str) -> bool:
    """Compare a program's stdout with the expected output.

    ``"exact"``: byte-for-byte equal. ``"lines"``: equal after stripping trailing whitespace of each line and
    trailing empty lines (the usual judge normalisation); line order always matters.
    """
    if mode == "exact":
        return got == expected
    if mode == "lines":
        return _norm_lines(got) == _norm_lines(expected)
    raise ValueError(f"unknown output comparison {mode!r}")


def _norm_lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# ----------------------------------------------------------------------------------------------- CPU limits
#: Smallest CPU limit of one test case, seconds.
CPU_FLOOR_S = 0.5
#: CPU limit = CPU_FACTOR x the reference solution's CPU time on the case (when above the floor).
CPU_FACTOR = 10.0
#: CPU limits are rounded up to a multiple of this, seconds (stable limits despite timer noise).
CPU_QUANTUM_S = 0.1
#: Largest CPU limit of one case, seconds (a slow reference does not buy unbounded time).
MAX_CPU_LIMIT_S = 10.0
#: CPU limit per case when no reference timing exists (uncalibrated tasks), seconds.
UNCALIBRATED_CPU_S = 2.0
#: CPU limit per case while measuring the reference, seconds.
CALIBRATION_CPU_S = 20.0


def cpu_limit_from_reference(reference_cpu_s: float) -> float:
    """``min(MAX_CPU_LIMIT_S, max(CPU_FLOOR_S, CPU_FACTOR * reference_cpu_s))`` rounded up to CPU_QUANTUM_S."""
    raw = min(MAX_CPU_LIMIT_S, max(CPU_FLOOR_S, CPU_FACTOR * max(0.0, float(reference_cpu_s))))
    return round(math.ceil(raw / CPU_QUANTUM_S - 1e-9) * CPU_QUANTUM_S, 6)
