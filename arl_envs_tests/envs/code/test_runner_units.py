"""Unit tests of the runner's codec, comparisons and the host's record verification (no sandbox needed)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import subprocess
import sys

import pytest

from arl_envs.envs.code import protocol
from arl_envs.envs.code.harness import CHILD_SOURCE, verify_record
from arl_envs.envs.code.protocol import CodecError, cpu_limit_from_reference, decode, encode, outputs_match, strict_equal

VALUES = [
    None, True, False, 0, -7, 10**40, 0.5, -0.0, float("inf"), "héllo\n\x00", "\ud800", b"\x00\xff", 1 + 2j,
    [1, [2, (3, "x")]], (1,), (), {"a": 1, 2: [3]}, {1, 2}, frozenset({"a"}), {(1, 2): {"k": None}},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_codec_round_trips_with_exact_types(value: object) -> None:
    back = decode(json.loads(json.dumps(encode(value))))
    assert strict_equal(back, value)
    assert type(back) is type(value)


def test_decode_rebuilds_nan() -> None:
    assert math.isnan(decode(encode(float("nan"))))


@pytest.mark.parametrize(
    "value",
    [type("I", (int,), {})(3), type("L", (list,), {})(), object(), lambda: 0, range(3), [object()]],
    ids=["int-subclass", "list-subclass", "object", "function", "range", "nested-object"],
)
def test_encode_refuses_anything_but_exact_builtins(value: object) -> None:
    with pytest.raises(CodecError):
        encode(value)


@pytest.mark.parametrize(
    "data",
    [{"i": 3}, {"x": "1"}, {"i": "1", "f": "2"}, {"d": [[1]]}, {"f": "abc"}, {"d": [[[], 1]]}, {"b": "zz"}, 3, 1.5],
)
def test_decode_rejects_malformed_or_untyped_data(data: object) -> None:
    with pytest.raises(CodecError):
        decode(data)


def test_decode_rejects_deep_nesting() -> None:
    data: object = []
    for _ in range(protocol.MAX_DEPTH + 5):
        data = [data]
    with pytest.raises(CodecError):
        decode(data)


def test_decode_accepts_hex_strings_from_the_child() -> None:
    assert decode({"s": "héllo".encode().hex()}) == "héllo"


def _child_encode(value: object) -> object:
    """Encode ``value`` with the child's own encoder (a real child interpreter), parse its JSON."""
    code = CHILD_SOURCE.replace('if __name__ == "__main__":', "if False:") + f"\nprint(_enc({value!r}))\n"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("value", [None, True, 3, -1.25, "a\"b\\c\n", [1, (2, "x")], {"k": {1, 2}}, b"\x01"], ids=repr)
def test_child_encoding_decodes_to_the_same_value(value: object) -> None:
    assert strict_equal(decode(_child_encode(value)), value)


def test_strict_equal_checks_types_at_every_level() -> None:
    assert strict_equal([1, (2, "a")], [1, (2, "a")])
    assert not strict_equal(1, True)
    assert not strict_equal(1, 1.0)
    assert not strict_equal([1, 2], (1, 2))
    assert not strict_equal({1: "a"}, {True: "a"})
    assert not strict_equal({1}, {True})
    assert not strict_equal([[1]], [[1.0]])
    assert strict_equal(float("nan"), float("nan"))
    assert not strict_equal(0.1 + 0.2, 0.3)
    assert strict_equal(0.1 + 0.2, 0.3, rel_tol=1e-9)


def test_output_comparison_is_exact_and_ordered() -> None:
    assert outputs_match("YES\nNO\nYES\n", "YES\nNO\nYES\n", "exact")
    assert not outputs_match("NO\nYES\nYES\n", "YES\nNO\nYES\n", "exact")
    assert not outputs_match("NO\nYES\nYES\n", "YES\nNO\nYES\n", "lines")
    assert not outputs_match("Christmas Eve\n", "Christmas Eve Eve Eve\n", "exact")
    assert not outputs_match("Christmas Eve\n", "Christmas Eve Eve Eve\n", "lines")
    assert not outputs_match("YES\n", "YES", "exact")
    assert outputs_match("YES  \nNO\n\n", "YES\nNO", "lines")
    with pytest.raises(ValueError):
        outputs_match("a", "a", "fuzzy")


def test_cpu_limit_formula() -> None:
    assert cpu_limit_from_reference(0.0) == protocol.CPU_FLOOR_S
    assert cpu_limit_from_reference(0.2) == pytest.approx(2.0)
    assert cpu_limit_from_reference(0.123) == pytest.approx(1.3)  # 1.23 rounded up to 0.1 s
    assert cpu_limit_from_reference(50.0) == protocol.MAX_CPU_LIMIT_S


def _record(key: bytes, nonce: str, record: dict) -> str:
    body = base64.b64encode(json.dumps(record).encode()).decode()
    mac = hmac.new(key, f"{nonce} {body}".encode(), hashlib.sha256).hexdigest()
    return f"{protocol.RESULT_MARKER} {nonce} {body} {mac}"


def test_verify_record_accepts_only_the_authentic_line() -> None:
    key, nonce = b"k" * 32, "n1"
    good = {"jobs": [{"cases": [{"passed": False}]}]}
    forged = {"jobs": [{"cases": [{"passed": True}]}]}
    out = "\n".join([
        "=== 5 passed ===",
        ">>>>> Test Exit Code: 0",
        _record(key, nonce, good),
        _record(b"x" * 32, nonce, forged),  # wrong key
        _record(key, "other-nonce", forged),  # replayed from another run
        f"{protocol.RESULT_MARKER} {nonce} {base64.b64encode(json.dumps(forged).encode()).decode()} {'0' * 64}",
    ])
    assert verify_record(out, key, nonce) == good
    assert verify_record("=== 5 passed ===\n", key, nonce) is None
    assert verify_record(_record(b"x" * 32, nonce, forged), key, nonce) is None
