"""Parsing model text into tool calls.

Two action formats exist (``arl_envs/CONTRACT.md``, section 3):

* ``"native"``: each domain's own convention (``\\boxed{}`` for math, ``<search>q</search>`` for search, ...).
  Envs implement it with the helpers here (:func:`last_boxed`, :func:`extract_tags`, :func:`fenced_code_blocks`).
* ``"json"``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, the format of Qwen/Hermes-style chat
  templates. Parsed by :func:`parse_json_tool_calls` with a real JSON decoder, so ``</tool_call>`` *inside* a JSON
  string is data, not a closing tag.

Every failure raises :class:`ParseError` whose message is written for the model to read.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from arl_envs.core.errors import ParseError
from arl_envs.core.tools import ToolCall

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
_JSON = json.JSONDecoder()


def parse_untrusted_python(source: str, mode: str = "eval") -> ast.AST:
    """``ast.parse(source, mode=mode)`` of model-written text, with one error type and no warnings.

    The compiler's ``SyntaxWarning``s (``invalid decimal literal`` for ``1if x``, invalid escape sequences; a
    ``DeprecationWarning`` before Python 3.12) are silenced while parsing: a policy's text must not print to the
    trainer's stderr, and under a ``-W error`` filter the same text would otherwise turn from a parsed (then
    refused) tree into a parse failure, so the feedback it gets would depend on the caller's warnings filter. (This
    uses :class:`warnings.catch_warnings`, which swaps the process-wide filter list: two threads parsing at the same
    moment can leave these warnings ignored for the process afterwards, never the reverse.)

    Args:
        source: the text (any length; the caller bounds it).
        mode: ``"eval"`` (one expression) or ``"exec"`` (statements), as for :func:`ast.parse`.

    Returns:
        The tree (``ast.Expression`` for ``"eval"``, ``ast.Module`` for ``"exec"``).

    Raises:
        SyntaxError: for every text that does not parse, including those ``ast.parse`` refuses with another
            error: NUL bytes (``ValueError``), lone surrogates (``UnicodeError``), nesting too deep
            (``RecursionError``, ``MemoryError``). Its message says which.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.parse(source, mode=mode)
    except ValueError as exc:  # NUL bytes on some versions; UnicodeError (lone surrogates) is a ValueError
        raise SyntaxError(f"unreadable text: {exc}") from None
    except (RecursionError, MemoryError):
        raise SyntaxError("too deeply nested") from None


def parse_json_tool_calls(text: str) -> list[ToolCall]:
    """Parse every ``<tool_call>{json}</tool_call>`` block of ``text``, in order.

    Each block must hold one JSON object with a string ``name`` and an object ``arguments`` (a JSON-encoded
    string of an object is accepted too, as some templates emit it).

    Returns:
        The calls (possibly empty when the text has no ``<tool_call>`` tag).

    Raises:
        ParseError: Broken JSON, a missing ``</tool_call>``, or a missing/ill-typed ``name``/``arguments``.
    """
    calls: list[ToolCall] = []
    pos = 0
    while True:
        start = text.find(TOOL_CALL_OPEN, pos)
        if start < 0:
            break
        i = start + len(TOOL_CALL_OPEN)
        while i < len(text) and text[i].isspace():
            i += 1
        try:
            obj, end = _JSON.raw_decode(text, i)
        except RecursionError:
            raise ParseError(f"tool call #{len(calls) + 1} is nested too deeply to parse") from None
        except json.JSONDecodeError as exc:  # before ValueError: it is one
            raise ParseError(
                f"tool call #{len(calls) + 1} is not valid JSON ({exc.msg} at character {exc.pos - i}); "
                f'expected {TOOL_CALL_OPEN}{{"name": "...", "arguments": {{...}}}}{TOOL_CALL_CLOSE}'
            ) from None
        except ValueError as exc:  # e.g. an integer of more than sys.get_int_max_str_digits() (4,300) digits
            raise ParseError(f"tool call #{len(calls) + 1} could not be decoded: {exc}") from None
        j = end
        while j < len(text) and text[j].isspace():
            j += 1
        if not text.startswith(TOOL_CALL_CLOSE, j):
            raise ParseError(f"tool call #{len(calls) + 1} is missing its closing {TOOL_CALL_CLOSE} after the JSON object")
        calls.append(_call_from_obj(obj, len(calls) + 1))
        pos = j + len(TOOL_CALL_CLOSE)
    if not calls and TOOL_CALL_CLOSE in text:
        raise ParseError(f"found {TOOL_CALL_CLOSE} without an opening {TOOL_CALL_OPEN}")
    return calls


def _call_from_obj(obj: Any, index: int) -> ToolCall:
    if not isinstance(obj, dict):
        raise ParseError(f"tool call #{index} must be a JSON object, got {type(obj).__name__}")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError(f'tool call #{index} needs a string "name"')
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):  # broken JSON, a 4,300+-digit integer, or nesting too deep
            raise ParseError(f'tool call #{index}: "arguments" is a string that is not a JSON object') from None
    if not isinstance(args, dict):
        raise ParseError(f'tool call #{index}: "arguments" must be a JSON object')
    return ToolCall(name, args)


def format_json_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Render a call in the ``json`` action format (inverse of :func:`parse_json_tool_calls`)."""
    return f"{TOOL_CALL_OPEN}{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}{TOOL_CALL_CLOSE}"


_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def boxed_contents(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` (and ``\\fbox{...}``) in ``text``, braces balanced, in order.

    An unclosed box (unbalanced braces) is skipped. Runs in time linear in ``len(text)``: one pass keeps a stack
    of open braces, so thousands of unclosed boxes cannot make it quadratic.
    """
    starts = {m.end() - 1: m.end() for m in _BOXED.finditer(text)}  # index of a box's "{" -> content start
    if not starts:
        return []
    found: list[tuple[int, str]] = []
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and i + 1 not in starts:
            i += 2
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            open_at = stack.pop()
            if open_at in starts:
                found.append((open_at, text[starts[open_at] : i]))
        i += 1
    return [content for _, content in sorted(found)]


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` in ``text`` (stripped), or None if there is none."""
    boxes = boxed_contents(text)
    return boxes[-1].strip() if boxes else None


def _tag_spans(text: str, tag: str) -> list[tuple[int, int, int, int]]:
    """``(open_start, content_start, content_end, close_end)`` of each complete ``<tag>...</tag>``, in order.

    Linear time: each opening tag pairs with the next closing tag found by ``str.find`` from a moving position, so
    many unclosed tags do not rescan the text.
    """
    open_t, close_t = f"<{tag}>", f"</{tag}>"
    spans: list[tuple[int, int, int, int]] = []
    pos = 0
    next_close = text.find(close_t)
    while next_close >= 0:
        start = text.find(open_t, pos)
        if start < 0:
            break
        if next_close < start + len(open_t):
            next_close = text.find(close_t, start + len(open_t))
            if next_close < 0:
                break
        spans.append((start, start + len(open_t), next_close, next_close + len(close_t)))
        pos = next_close + len(close_t)
        next_close = text.find(close_t, pos)
    return spans


@dataclass(frozen=True)
class Block:
    """One complete block found by :func:`find_blocks`.

    Attributes:
        opener: The opener's match (its groups, e.g. the tag name or a ``path="..."`` attribute).
        content_start: Index of the first character after the opener.
        content_end: Index of the closing string.
        end: Index just after the closing string.
    """

    opener: re.Match[str]
    content_start: int
    content_end: int
    end: int

    def content(self) -> str:
        return self.opener.string[self.content_start : self.content_end]


def find_blocks(
    text: str,
    opener: re.Pattern[str],
    closer: str | Callable[[re.Match[str]], str],
    *,
    ignore_case: bool = False,
) -> list[Block]:
    """Every complete ``opener ... closer`` block of ``text``, in order, the body non-greedy.

    The same blocks as ``re.finditer(opener + "(.*?)" + closer, re.DOTALL)`` (a ``closer`` computed from the opener's
    match stands for a back-reference such as ``</\\1>``), but in time linear in ``len(text)``: the regex form
    rescans to the end of the text from every unclosed opener, so a reply of many unclosed tags costs quadratic
    time (9-12 s of CPU per step at ``MAX_ACTION_CHARS``). Here a closing string found missing
    after some position is remembered as missing for every later opener, and each found block moves the search on.

    Args:
        text: The model's reply.
        opener: A pattern matching one opening tag; keep it bounded (no unbounded repetition of a class that can
            cover the whole text), e.g. ``<(bash|read_file)>`` or ``<write_file path="([^"\\n]{0,4096})">``.
        closer: The closing string, or a function of the opener's match giving it (e.g. ``</{tag}>``).
        ignore_case: Match ``closer`` case-insensitively (give ``opener`` its own ``re.IGNORECASE``).

    Returns:
        The blocks, non-overlapping, in order of their openers.
    """
    blocks: list[Block] = []
    missing: set[str] = set()
    pos = 0
    while True:
        m = opener.search(text, pos)
        if m is None:
            return blocks
        close = closer if isinstance(closer, str) else closer(m)
        key = close.lower() if ignore_case else close
        idx = -1
        if key not in missing:
            if ignore_case:
                found = re.compile(re.escape(close), re.IGNORECASE).search(text, m.end())
                idx = found.start() if found else -1
            else:
                idx = text.find(close, m.end())
        if idx < 0:
            missing.add(key)  # absent after m.end(), so absent after every later opener too
            pos = m.start() + 1
            continue
        blocks.append(Block(m, m.end(), idx, idx + len(close)))
        pos = idx + len(close)


def remove_blocks(text: str, blocks: list[Block], replacement: str = "") -> str:
    """``text`` with each of ``blocks`` (from :func:`find_blocks` on the same text) replaced by ``replacement``."""
    out, pos = [], 0
    for b in blocks:
        out.append(text[pos : b.opener.start()])
        out.append(replacement)
        pos = b.end
    out.append(text[pos:])
    return "".join(out)


def extract_tags(text: str, tag: str) -> list[str]:
    """Contents of every complete ``<tag>...</tag>`` block (non-greedy, across newlines), in order."""
    return [text[a:b] for _, a, b, _ in _tag_spans(text, tag)]


def strip_tags(text: str, tag: str) -> str:
    """``text`` with every ``<tag>...</tag>`` block removed (used to discard fake observations the model wrote)."""
    out, pos = [], 0
    for start, _, _, end in _tag_spans(text, tag):
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "".join(out)


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def fenced_code_blocks(text: str, languages: tuple[str, ...] = ("python", "py", "")) -> list[str]:
    """Bodies of fenced code blocks (```` ```python ... ``` ````) whose language tag is in ``languages``."""
    return [m.group(2) for m in _FENCE.finditer(text) if m.group(1).lower() in languages]
