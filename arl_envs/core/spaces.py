"""Text spaces for LLM observations and actions.

Gymnasium's :class:`gymnasium.spaces.Text` has a fixed character set (by default alphanumerics only: no spaces,
no newlines, no non-ASCII), which is wrong for model output. :class:`UnicodeText` accepts *any* ``str`` up to
``max_length`` characters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

# Printable characters used by ``sample()``: ASCII letters/digits/punctuation/whitespace plus a few
# non-ASCII blocks (Latin-1 letters, Greek, CJK, emoji) so that consumers are exercised on real Unicode.
_SAMPLE_ALPHABET: tuple[str, ...] = tuple(
    [chr(c) for c in range(0x20, 0x7F)]
    + ["\n", "\t"]
    + [chr(c) for c in range(0xC0, 0x100)]
    + [chr(c) for c in range(0x3B1, 0x3CA)]
    + list("中文字符数学搜索代码网页世界你好")
    + ["🙂", "🚀", "✓", "→", "∑", "√", "π"]
)


class UnicodeText(spaces.Space[str]):
    """Any Unicode string of at most ``max_length`` characters.

    Args:
        max_length: Maximum number of characters (Python ``len``, i.e. code points). Must be >= 1.
        min_length: Minimum number of characters (default 0: the empty string is a member).
        seed: Seed for :meth:`sample`.

    Raises:
        ValueError: If ``max_length < 1`` or ``min_length`` is outside ``[0, max_length]``.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None):
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        if not 0 <= min_length <= max_length:
            raise ValueError(f"min_length must be in [0, {max_length}], got {min_length}")
        self.max_length = int(max_length)
        self.min_length = int(min_length)
        super().__init__(shape=None, dtype=str, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text has no fixed-size numeric form."""
        return False

    def contains(self, x: Any) -> bool:
        """True iff ``x`` is a ``str`` with ``min_length <= len(x) <= max_length``."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random printable string (ASCII and non-ASCII) of random length, at most ``min(max_length, 256)``.

        Args:
            mask: Unsupported; must be None.
            probability: Unsupported; must be None.

        Raises:
            ValueError: If a mask or probability is given.
        """
        if mask is not None or probability is not None:
            raise ValueError("UnicodeText.sample does not support mask/probability")
        hi = min(self.max_length, 256)
        lo = min(self.min_length, hi)
        n = int(self.np_random.integers(lo, hi + 1))
        idx = self.np_random.integers(0, len(_SAMPLE_ALPHABET), size=n)
        return "".join(_SAMPLE_ALPHABET[i] for i in idx)

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length}, min_length={self.min_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnicodeText)
            and other.max_length == self.max_length
            and other.min_length == self.min_length
        )

    def __hash__(self) -> int:
        return hash(("UnicodeText", self.max_length, self.min_length))

    def to_jsonable(self, sample_n: Any) -> list[str]:
        """Strings are already JSON-able."""
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        """Inverse of :meth:`to_jsonable`."""
        return list(sample_n)


# Vector-env support: a batch of text observations is a tuple of str, one per sub-env, in order.
@batch_space.register(UnicodeText)
def _batch_unicode_text(space: UnicodeText, n: int = 1) -> spaces.Tuple:
    return spaces.Tuple([UnicodeText(space.max_length, min_length=space.min_length) for _ in range(n)])


@create_empty_array.register(UnicodeText)
def _empty_unicode_text(space: UnicodeText, n: int = 1, fn: Any = np.zeros) -> tuple[str, ...]:
    return tuple("" for _ in range(n))


@concatenate.register(UnicodeText)
def _concatenate_unicode_text(space: UnicodeText, items: Any, out: Any) -> tuple[str, ...]:
    return tuple(items)

# No ``iterate`` registration on purpose: Gymnasium then iterates a batched Tuple of UnicodeText item by item
# (one str per sub-env); registering one would make it iterate each string's characters.
