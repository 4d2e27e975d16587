"""Text spaces for LLM observations and actions.

Gymnasium's :class:`gymnasium.spaces.Text` has a fixed character set (by default alphanumerics only: no spaces,
no newlines, no non-ASCII), which is wrong for model output. :class:`UnicodeText` accepts *any* ``str`` up to
``max_length`` characters. Vector envs batch it as a ``tuple[str, ...]`` (one per sub-env), and Gymnasium's
``AsyncVectorEnv`` can pass it through shared memory (its default), so ``gym.make_vec(id, n,
vectorization_mode="async")`` works with no extra argument.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import (
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

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


# Shared memory (Gymnasium's ``AsyncVectorEnv(shared_memory=True)``, its default, e.g. through
# ``gym.make_vec(id, n, vectorization_mode="async")``). Layout: one row of ``max_length + 1`` little-endian uint32 per
# sub-env; entry 0 is the string's length in code points, entries ``1 .. length`` its code points (UTF-32, lone
# surrogates kept). 4 bytes per character of ``max_length``: 256 KiB per sub-env for a 65,536-character space.
_CODE_POINT = np.dtype("<u4")


class SharedTextBatch(Sequence):
    """The sub-envs' current text observations, read live from the shared buffer (one ``str`` per sub-env).

    ``AsyncVectorEnv`` reads its shared-memory observations once, at construction, and relies on them changing in
    place; this view decodes each row when it is read, so it always shows the newest observations. Copying it
    (``copy.copy``/``copy.deepcopy``, which ``AsyncVectorEnv`` does with ``copy=True``, the default) gives a plain
    ``tuple[str, ...]``, the same batch type as without shared memory.

    Args:
        shared_memory: The ``multiprocessing`` array made by :func:`create_shared_memory` for this space.
        n: Number of sub-envs.
        max_length: The space's ``max_length``.
    """

    def __init__(self, shared_memory: Any, n: int, max_length: int) -> None:
        self._rows = np.frombuffer(shared_memory.get_obj(), dtype=_CODE_POINT).reshape(n, max_length + 1)

    def __len__(self) -> int:
        return self._rows.shape[0]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        row = self._rows[index]
        return row[1: 1 + int(row[0])].tobytes().decode("utf-32-le", "surrogatepass")

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, SharedTextBatch)) else other)

    __hash__ = None  # type: ignore[assignment]  # mutable: its contents change with the buffer

    def __repr__(self) -> str:
        return f"SharedTextBatch({tuple(self)!r})"


@create_shared_memory.register(UnicodeText)
def _shared_unicode_text(space: UnicodeText, n: int = 1, ctx: Any = mp) -> Any:
    return ctx.Array(ctypes.c_uint32, n * (space.max_length + 1))


@read_from_shared_memory.register(UnicodeText)
def _read_unicode_text(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTextBatch:
    return SharedTextBatch(shared_memory, n, space.max_length)


@write_to_shared_memory.register(UnicodeText)
def _write_unicode_text(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"a UnicodeText observation must be a str, got {type(value).__name__}")
    if len(value) > space.max_length:
        raise ValueError(f"observation of {len(value)} characters exceeds the space's max_length {space.max_length}")
    rows = np.frombuffer(shared_memory.get_obj(), dtype=_CODE_POINT).reshape(-1, space.max_length + 1)
    codes = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype=_CODE_POINT)
    rows[index, 1: 1 + len(codes)] = codes
    rows[index, 0] = len(codes)
