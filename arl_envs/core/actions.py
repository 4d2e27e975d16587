"""Parsing model text into tool calls.

Two action formats exist (``arl_envs/CONTRACT.md``, section 3):

* ``"native"``: each domain's own convention (``\\boxed{}`` for math, ``<search>q</search>`` for search, ...).
  A convention of ``<tag>`` blocks and code fences is declared as a :class:`TagTable` of :class:`TagFormat` rows,
  which both parses replies and renders calls; other syntaxes use the helpers here (:func:`boxed_contents`,
  :func:`find_blocks`, :func:`parse_untrusted_python`).
* ``"json"``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, the format of Qwen/Hermes-style chat
  templates. Parsed by :func:`parse_json_tool_calls` with a real JSON decoder, so ``</tool_call>`` *inside* a JSON
  string is data, not a closing tag.

Every failure raises :class:`ParseError` whose message is written for the model to read.
:func:`parse_tool_calls` is the default ``AgentEnv.parse_action`` (length limit, either format, call validation).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from arl_envs.core.errors import ParseError
from arl_envs.core.tools import Tool, ToolCall

#: Longest action accepted, in characters; longer actions get an error observation (not an exception).
MAX_ACTION_CHARS = 131_072
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


def parse_tool_calls(
    action: str, action_format: str, parse_native: Callable[[str], list[ToolCall]], tools: dict[str, Tool],
    max_calls: int,
) -> list[ToolCall]:
    """The validated tool calls of one action: what ``AgentEnv.parse_action`` does by default.

    Checks the length (:data:`MAX_ACTION_CHARS`), reads the ``json`` format or calls ``parse_native``, allows at most
    ``max_calls`` calls and validates each against its :class:`Tool` (name and arguments).

    Raises:
        ParseError: With a message for the model.
    """
    if len(action) > MAX_ACTION_CHARS:
        raise ParseError(f"action is {len(action)} characters long; the limit is {MAX_ACTION_CHARS}")
    if action_format == "json":
        calls = parse_json_tool_calls(action)
        if not calls:
            raise ParseError("no <tool_call> found in your reply")
    else:
        calls = parse_native(action)
        if not calls:
            raise ParseError("no action found in your reply")
    if len(calls) > max_calls:
        raise ParseError(f"{len(calls)} tool calls in one turn; at most {max_calls} allowed. Nothing was run.")
    validated = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is None:
            raise ParseError(f"unknown tool {call.name!r}; available: {', '.join(sorted(tools))}")
        validated.append(ToolCall(call.name, tool.validate(call.arguments)))
    return validated


def format_hint(action_format: str, example_tool: str) -> str:
    """The line after an ``Invalid action: ...`` observation, saying what to write instead."""
    if action_format == "json":
        return f'Write a tool call like <tool_call>{{"name": "{example_tool}", "arguments": {{...}}}}</tool_call>.'
    return "Follow the action format given in the instructions."


def json_format_instructions(schemas: list[dict[str, Any]] | None, names: list[str]) -> str:
    """A paragraph describing the ``json`` action format and the tools: their JSON schemas (OpenAI-style, as
    ``Tool.schema()`` gives them), or only their ``names`` when ``schemas`` is None."""
    lines = [
        "Call a tool by writing exactly one block of the form",
        '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>',
    ]
    if schemas is None:
        return "\n".join([*lines, f"Available tools: {', '.join(names)} (their JSON schemas are in the tool list)."])
    lines.append("Available tools (JSON schemas):")
    lines += [json.dumps(s["function"], ensure_ascii=False) for s in schemas]
    return "\n".join(lines)


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


# ----------------------------------------------------------------------------- table-driven native tag formats
def _drop_one_newline(body: str) -> str:
    return body[1:] if body.startswith("\n") else body


#: How a block's body becomes an argument (parse) and an argument becomes the body (render), by ``TagFormat.body``.
BODY_MODES: dict[str, tuple[Callable[[str], str], Callable[[str], str]]] = {
    "strip": (str.strip, lambda v: v),  # <search> q </search> -> "q"
    "raw": (lambda b: b, lambda v: v),  # the body as written
    "newline": (_drop_one_newline, lambda v: f"\n{v}"),  # rendered on the line after the opener; one newline dropped
    "newlines": (lambda b: b.lstrip("\n"), lambda v: f"\n{v}"),  # as "newline", every leading newline dropped
    "code": (lambda b: b, lambda v: f"{v}\n"),  # a fence's body as written; rendered with a newline before ```
    "code_rstrip": (lambda b: b, lambda v: f"{v.rstrip()}\n"),  # as "code", trailing whitespace rendered away
}
#: Modes of :class:`TagTable`: which block(s) of a reply make the call.
PICK_MODES = ("last", "only", "all")


@dataclass(frozen=True)
class TagFormat:
    """How a tool call (or, in a table with ``pick="all"``, one argument of it) is written in a native format.

    Four shapes, all parsed with :func:`find_blocks` (linear time):

    * ``<tag>body</tag>``: ``arg`` gets the body (``TagFormat("search", "search", "query")``);
    * ``<tag attr="value">body</tag>``: ``attr`` gets the value (stripped), ``arg`` the body; with ``parts``, the
      body holds ``<part>...</part>`` blocks instead, one argument each (``str_replace``'s ``<old>``/``<new>``);
    * ``<tag/>`` (or ``<tag></tag>``): ``self_closing``, no argument;
    * a fenced code block ```` ```lang ... ``` ````: ``fence`` lists the languages (``""`` in it: any fence is read
      and those of other languages are skipped, as :func:`fenced_code_blocks` does; otherwise only fences of these
      languages, spelled as given, are read; ``fence_crlf`` accepts ``\\r\\n`` after the language).

    Attributes:
        tool: The tool the block calls.
        tag: The tag name (for a fence, a label used in messages).
        arg: The argument the body fills (None: the body is not read).
        body: A key of :data:`BODY_MODES`: how the body maps to the argument and back.
        attr: The one attribute of the opening tag, an argument of the same name.
        parts: ``(name, hint)`` of each sub-block of the body, in order (each name is an argument; ``hint`` is
            shown in the error when they are missing).
        self_closing: ``<tag/>``, ``<tag />`` or ``<tag></tag>`` (whitespace allowed), no body.
        fence: Languages of a fenced code block (empty: not a fence).
        fence_crlf: Accept ``\\r\\n`` after a fence's language.
        empty_error: The :class:`ParseError` message when the chosen block's argument is empty (None: allowed).
        fallback: Read only when no block of the table's other formats is found.
        prefix: Text written before the block when rendering.
    """

    tool: str
    tag: str
    arg: str | None = None
    body: str = "strip"
    attr: str | None = None
    parts: tuple[tuple[str, str], ...] = ()
    self_closing: bool = False
    fence: tuple[str, ...] = ()
    fence_crlf: bool = False
    empty_error: str | None = None
    fallback: bool = False
    prefix: str = ""

    def __post_init__(self) -> None:
        if self.body not in BODY_MODES:
            raise ValueError(f"body must be one of {sorted(BODY_MODES)}, got {self.body!r}")

    def opener(self) -> str:
        """The regex of the opening tag (bounded repetitions only, so :func:`find_blocks` stays linear)."""
        tag = re.escape(self.tag)
        if self.fence:
            if "" in self.fence:
                return r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n"
            langs = "|".join(re.escape(lang) for lang in self.fence)
            newline = r"\r?\n" if self.fence_crlf else r"\n"
            return rf"```[ \t]*(?:{langs})[ \t]*{newline}"
        if self.self_closing:
            return rf"<{tag}\s{{0,16}}/>|<{tag}>\s{{0,16}}</{tag}>"
        if self.attr is not None:
            attr = re.escape(self.attr)
            return rf'<{tag}\s{{1,16}}{attr}\s{{0,16}}=\s{{0,16}}"([^"\n]{{0,4096}})"\s{{0,16}}>'
        return f"<{tag}>"

    def closer(self) -> str:
        if self.fence:
            return "```"
        return "" if self.self_closing else f"</{self.tag}>"

    def accepts(self, opener: re.Match[str]) -> bool:
        """Whether a block with this opener (a match of :meth:`opener`) is this row's (a fence: its language)."""
        return not (self.fence and "" in self.fence and opener.group(1).lower() not in self.fence)

    def arguments(self, opener: re.Match[str], body: str) -> dict[str, Any]:
        """The arguments of one block (``opener``: a match of :meth:`opener`).

        Raises:
            ParseError: The ``parts`` are missing from the body.
        """
        args: dict[str, Any] = {}
        if self.attr is not None:
            args[self.attr] = opener.group(1).strip()
        if self.parts:
            m = self._parts_re().search(body)
            if m is None:
                hint = "".join(f"<{p}>{h}</{p}>" for p, h in self.parts)
                raise ParseError(f"{self.tag} needs {hint} inside it")
            args.update(m.groupdict())
        elif self.arg is not None:
            args[self.arg] = BODY_MODES[self.body][0](body)
        return args

    def _parts_re(self) -> re.Pattern[str]:
        return re.compile(r"\s*".join(rf"<{p}>\n?(?P<{p}>.*?)</{p}>" for p, _ in self.parts), re.S)

    def render(self, arguments: dict[str, Any]) -> str:
        """This block written for ``arguments`` (the inverse of parsing it, up to the body mode's normalising)."""
        value = str(arguments.get(self.arg, "")) if self.arg is not None else ""
        inner = BODY_MODES[self.body][1](value)
        if self.fence:
            return f"{self.prefix}```{self.fence[0]}\n{inner}```"
        if self.self_closing:
            return f"{self.prefix}<{self.tag}/>"
        opening = f'<{self.tag} {self.attr}="{arguments.get(self.attr, "")}">' if self.attr else f"<{self.tag}>"
        if self.parts:
            inner = "".join(f"<{p}>{arguments.get(p, '')}</{p}>" for p, _ in self.parts)
        return f"{self.prefix}{opening}{inner}</{self.tag}>"


@dataclass(frozen=True)
class TagMatch:
    """The block a :class:`TagTable` picked: where it starts, its format and the call it makes."""

    start: int
    format: TagFormat
    call: ToolCall

    @classmethod
    def of(cls, found: tuple[int, TagFormat, re.Match[str], str]) -> TagMatch:
        start, fmt, opener, body = found
        return cls(start, fmt, ToolCall(fmt.tool, fmt.arguments(opener, body)))

    def checked(self) -> ToolCall:
        """The call, after the format's ``empty_error`` check.

        Raises:
            ParseError: The argument is empty (whitespace only) and the format forbids it.
        """
        fmt = self.format
        if fmt.empty_error is not None and not str(self.call.arguments.get(fmt.arg, "")).strip():
            raise ParseError(fmt.empty_error)
        return self.call


@dataclass(frozen=True)
class TagTable:
    """A native action format declared as a table of :class:`TagFormat` rows: parses replies, renders calls.

    Attributes:
        formats: The rows. Rendering a tool uses its first row (with ``pick="all"``: every row, joined by newlines).
        missing: The :class:`ParseError` message when the reply has no block.
        pick: ``"last"``: the last block counts (fallback rows only when no other row has a block); ``"only"``:
            exactly one block, else an error naming the unclosed tag or the blocks found; ``"all"``: one call of a
            single tool, each row filling its argument from its own last block, every row required.
        joint: Scan every row in one pass, so blocks never overlap (``<bash><read_file>x</read_file></bash>`` is one
            ``bash`` block); otherwise each row is scanned on its own and blocks are ordered by where they start.
        ignore_case: Tag names match in any case.
        discard: Applied to the reply first (removing ``<think>`` blocks or fake observations), or None.
    """

    formats: tuple[TagFormat, ...]
    missing: str
    pick: str = "last"
    joint: bool = True
    ignore_case: bool = False
    discard: Callable[[str], str] | None = None

    def __post_init__(self) -> None:
        if self.pick not in PICK_MODES:
            raise ValueError(f"pick must be one of {PICK_MODES}, got {self.pick!r}")
        alternation = "|".join(f"(?P<f{i}>{f.opener()})" for i, f in enumerate(self.formats) if not f.fallback)
        object.__setattr__(self, "_primary_re", re.compile(alternation, self._flags()))
        object.__setattr__(self, "_row_res", tuple(re.compile(f.opener(), self._flags()) for f in self.formats))

    def tools(self) -> list[str]:
        """The tools this table writes, in row order, each once."""
        return list(dict.fromkeys(f.tool for f in self.formats))

    def _blocks(self, text: str, rows: list[int]) -> list[tuple[int, TagFormat, re.Match[str], str]]:
        """``(start, format, opener, body)`` of every block of the given rows, in order of their starts (the
        opener matched by the row's own pattern, so its groups are the row's)."""
        found: list[tuple[int, TagFormat, re.Match[str], str]] = []
        if self.joint and len(rows) > 1:
            primary = [i for i, f in enumerate(self.formats) if not f.fallback]
            joint = self._primary_re if rows == primary else re.compile(
                "|".join(f"(?P<f{i}>{self.formats[i].opener()})" for i in rows), self._flags())
            for b in find_blocks(text, joint, lambda m: self._row(m).closer(), ignore_case=self.ignore_case):
                i = int(str(b.opener.lastgroup)[1:])
                self._add(found, i, self._row_res[i].match(text, b.opener.start()), b)  # the row's own groups
        else:
            for i in rows:
                for b in find_blocks(text, self._row_res[i], self.formats[i].closer(), ignore_case=self.ignore_case):
                    self._add(found, i, b.opener, b)
            found.sort(key=lambda x: x[0])
        return found

    def _flags(self) -> int:
        return re.IGNORECASE if self.ignore_case else 0

    def _row(self, m: re.Match[str]) -> TagFormat:
        """The row whose opener ``m`` (a match of a joint pattern, groups ``f<row>``) matched."""
        return self.formats[int(str(m.lastgroup)[1:])]

    def _add(self, found: list[tuple[int, TagFormat, re.Match[str], str]], i: int, opener: re.Match[str] | None,
             b: Block) -> None:
        fmt, opener = self.formats[i], opener or b.opener
        if fmt.accepts(opener):
            found.append((b.opener.start(), fmt, opener, b.content()))

    def match(self, text: str) -> TagMatch | None:
        """The block that makes the call (its empty check not applied yet: :meth:`TagMatch.checked`), or None.

        Raises:
            ParseError: ``pick="only"``: an unclosed tag or several blocks; a block whose ``parts`` are missing.
        """
        if self.discard is not None:
            text = self.discard(text)
        primary = [i for i, f in enumerate(self.formats) if not f.fallback]
        if self.pick == "all":
            args: dict[str, Any] = {}
            for i in primary:
                blocks = self._blocks(text, [i])
                if not blocks:
                    return None
                args.update(TagMatch.of(blocks[-1]).call.arguments)
            return TagMatch(0, self.formats[0], ToolCall(self.formats[0].tool, args))
        found = self._blocks(text, primary)
        if self.pick == "only":
            opened = list(self._primary_re.finditer(text))
            if not found:
                if opened:
                    tag = self._row(opened[0]).tag
                    raise ParseError(f"<{tag}> is not closed; write <{tag}>...</{tag}>")
                return None
            if len(found) > 1 or len(opened) > len(found):
                names = ", ".join(f"<{f.tag}>" for _, f, *_ in found)
                raise ParseError(
                    f"{max(len(found), len(opened))} actions in one reply ({names}); write exactly one action per "
                    "turn. Nothing was run"
                )
        if not found:
            found = self._blocks(text, [i for i, f in enumerate(self.formats) if f.fallback])
        return TagMatch.of(found[-1]) if found else None

    def parse(self, text: str) -> list[ToolCall]:
        """The one call of ``text``, as a list (what ``AgentEnv._parse_native`` returns).

        Raises:
            ParseError: No block (:attr:`missing`), or what :meth:`match` and :meth:`TagMatch.checked` raise.
        """
        m = self.match(text)
        if m is None:
            raise ParseError(self.missing)
        return [m.checked()]

    def format(self, name: str, arguments: dict[str, Any]) -> str:
        """``name(arguments)`` written in this format (what ``AgentEnv.format_call`` returns).

        Raises:
            ValueError: ``name`` is not a tool of this table.
        """
        rows = [f for f in self.formats if f.tool == name and not f.fallback]
        if not rows:
            raise ValueError(f"unknown tool {name!r}")
        if self.pick == "all":
            return "\n".join(f.render(arguments) for f in rows)
        return rows[0].render(arguments)
