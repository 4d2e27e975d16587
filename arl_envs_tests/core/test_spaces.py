from __future__ import annotations

import gymnasium as gym
import pytest

from arl_envs.core.spaces import UnicodeText


def test_contains_unicode_and_empty() -> None:
    space = UnicodeText(100)
    assert space.contains("中文 click(12) 🙂")
    assert space.contains("")
    assert space.contains("line one\nline two\twith tab")
    assert not space.contains("x" * 101)
    assert not space.contains(b"bytes")
    assert not space.contains(12)


def test_gymnasium_text_rejects_what_we_accept() -> None:
    # The reason UnicodeText exists: Gymnasium's Text refuses spaces/newlines by default.
    assert not gym.spaces.Text(100).contains("hello world")
    assert UnicodeText(100).contains("hello world")


def test_sample_printable_and_non_ascii_and_seeded() -> None:
    space = UnicodeText(1000, seed=3)
    samples = [space.sample() for _ in range(200)]
    assert all(space.contains(s) for s in samples)
    assert any(any(ord(c) > 127 for c in s) for s in samples)
    assert all(c.isprintable() or c in "\n\t" for s in samples for c in s)
    again = UnicodeText(1000, seed=3)
    assert [again.sample() for _ in range(200)] == samples


def test_bad_construction() -> None:
    with pytest.raises(ValueError):
        UnicodeText(0)
    with pytest.raises(ValueError):
        UnicodeText(5, min_length=6)
    with pytest.raises(ValueError):
        UnicodeText(5).sample(mask=1)
