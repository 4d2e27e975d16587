"""Web actions: BrowserGym-style python-call strings, parsed with :mod:`ast` (never ``eval``), and their tools.

Native format: ONE call per turn, e.g. ``click("a12")`` or ``fill("a5", "a\\nb it's \\"q\\"")``. String arguments
are Python string literals read with :func:`ast.literal_eval` on the argument node alone, so escapes mean what they
mean in Python (``\\n`` is a newline) and nothing is ever executed. Keyword arguments work
(``fill(bid="a5", value="x")``). Bids may be written unquoted as numbers only when they are plain numbers
(BrowserGym habit); ours look like ``a12`` and must be quoted. The call may be alone, inside a ```` ``` ```` code
block, or at the end of free text ("I will click the button: click("a3")"); ``<think>...</think>`` is ignored.
Aliases accepted: ``drag_and_drop`` = ``drag``, ``send_msg_to_user`` = ``answer``.

The ``json`` format exposes the same actions as tools (:func:`web_tools`), e.g.
``<tool_call>{"name": "fill", "arguments": {"bid": "a5", "value": "x"}}</tool_call>``.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field

from arl_envs.core.actions import ParseError, find_blocks, parse_untrusted_python, remove_blocks
from arl_envs.core.tools import Tool, ToolCall

#: Longest text accepted in one ``fill``/``answer`` (characters).
MAX_TEXT_ARG = 10_000
#: Largest ``noop`` wait (milliseconds).
MAX_NOOP_WAIT_MS = 5_000
#: Largest absolute ``scroll`` delta (pixels).
MAX_SCROLL_PX = 100_000
#: Most candidate end positions tried when extracting a call from free text.
_MAX_PARSE_TRIES = 64
#: Most action-name occurrences (the last ones) tried as the start of a call in free text. Each try parses a
#: substring, so trying every occurrence would cost quadratic time on a reply of many call-like fragments.
_MAX_CALL_STARTS = 8

_Bid = Field(description="Element id shown in [brackets] in the accessibility tree, e.g. 'a12'.")


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


class BidArgs(_Args):
    bid: str = _Bid


class ClickArgs(_Args):
    bid: str = _Bid
    button: str = Field("left", pattern="^(left|right|middle)$", description="Mouse button: left, right or middle.")


class FillArgs(_Args):
    bid: str = _Bid
    value: str = Field(max_length=MAX_TEXT_ARG, description="Text that replaces the field's content.")


class SelectArgs(_Args):
    bid: str = _Bid
    options: Union[str, list[str]] = Field(description="Option label or value (a list for multi-selects).")


class PressArgs(_Args):
    bid: str = _Bid
    key_comb: str = Field(max_length=100, description="Key or combination, e.g. 'Enter', 'Tab', 'Control+a'.")


class ScrollArgs(_Args):
    delta_x: float = Field(ge=-MAX_SCROLL_PX, le=MAX_SCROLL_PX, description="Horizontal pixels (right > 0).")
    delta_y: float = Field(ge=-MAX_SCROLL_PX, le=MAX_SCROLL_PX, description="Vertical pixels (down > 0).")


class DragArgs(_Args):
    from_bid: str = _Bid
    to_bid: str = _Bid


class NoArgs(_Args):
    pass


class TabArgs(_Args):
    index: int = Field(ge=0, le=1000, description="Tab index as listed under 'Tabs'.")


class NoopArgs(_Args):
    wait_ms: float = Field(0, ge=0, le=MAX_NOOP_WAIT_MS, description="Milliseconds to wait.")


class AnswerArgs(_Args):
    text: str = Field(max_length=MAX_TEXT_ARG, description="Your final answer or message; ends the episode.")


#: name -> (argument model, description). Order = positional argument order of the native format.
ACTIONS: dict[str, tuple[type[BaseModel], str]] = {
    "click": (ClickArgs, "Click an element."),
    "dblclick": (BidArgs, "Double-click an element."),
    "hover": (BidArgs, "Move the mouse over an element."),
    "fill": (FillArgs, "Clear a text field (input, textarea, contenteditable) and type the given text into it."),
    "select_option": (SelectArgs, "Select an option of a <select> by its label or value."),
    "check": (BidArgs, "Tick a checkbox or radio button (no-op if already ticked)."),
    "uncheck": (BidArgs, "Untick a checkbox (no-op if already unticked)."),
    "press": (PressArgs, "Focus an element and press a key or key combination."),
    "scroll": (ScrollArgs, "Scroll the page (mouse wheel) by the given pixels."),
    "drag": (DragArgs, "Drag one element and drop it on another."),
    "go_back": (NoArgs, "Go back to the previous page of the current tab."),
    "go_forward": (NoArgs, "Go forward in the current tab's history."),
    "tab_focus": (TabArgs, "Switch to the tab with the given index."),
    "noop": (NoopArgs, "Do nothing (optionally wait a little for the page)."),
    "answer": (AnswerArgs, "Send your final answer/message to the user; this ends the episode."),
}
ALIASES = {"drag_and_drop": "drag", "send_msg_to_user": "answer", "double_click": "dblclick"}

_NAMES = sorted(set(ACTIONS) | set(ALIASES), key=len, reverse=True)
_CALL_RE = re.compile(r"\b(" + "|".join(_NAMES) + r")\s*\(")
_THINK_OPEN = re.compile(r"<think>")
_FENCE_RE = re.compile(r"```[a-zA-Z]*\n?(.*?)```", re.S)


def web_tools() -> list[Tool]:
    """The actions as :class:`Tool` objects (JSON schemas for the ``json`` format)."""
    return [Tool(name, desc, model) for name, (model, desc) in ACTIONS.items()]


def action_help() -> str:
    """One line per action: its native signature and description (for the instructions)."""
    lines = []
    for name, (model, desc) in ACTIONS.items():
        params = ", ".join(model.model_fields)
        lines.append(f"{name}({params}): {desc}")
    return "\n".join(lines)


def format_action(name: str, arguments: dict[str, Any]) -> str:
    """Native string of a call (positional arguments in declaration order, JSON-quoted strings)."""
    model = ACTIONS[name][0]
    parts = []
    for field_name in model.model_fields:
        if field_name not in arguments:
            continue
        v = arguments[field_name]
        if name == "click" and field_name == "button" and v == "left":
            continue
        if name == "noop" and field_name == "wait_ms" and not v:
            continue
        if isinstance(v, str):
            parts.append(json.dumps(v, ensure_ascii=False))
        elif isinstance(v, list):
            parts.append("[" + ", ".join(json.dumps(str(x), ensure_ascii=False) for x in v) + "]")
        elif isinstance(v, float) and v.is_integer():
            parts.append(str(int(v)))
        else:
            parts.append(repr(v))
    return f"{name}({', '.join(parts)})"


def parse_action(text: str) -> ToolCall:
    """Parse ONE native action from the model's text.

    Returns:
        The call with raw (unvalidated) arguments mapped to parameter names.

    Raises:
        ParseError: No call, several statements, unknown action, non-literal or wrong arguments.
    """
    body = remove_blocks(text, find_blocks(text, _THINK_OPEN, "</think>"))  # linear, unlike a .*? regex
    if "<think>" in body:  # an unclosed think block: nothing after it is an action
        body = body.split("<think>", 1)[0]
    fences = _FENCE_RE.findall(body)
    if fences:
        body = fences[-1]
    body = body.strip()
    if not body:
        raise ParseError(_no_action_message())
    # 1. the whole reply is python code
    tree = _try_parse(body, "exec")
    if tree is not None:
        stmts = tree.body
        if (
            len(stmts) == 1
            and isinstance(stmts[0], ast.Expr)
            and isinstance(stmts[0].value, ast.Call)
            and isinstance(stmts[0].value.func, ast.Name)
        ):
            return _call_from_node(stmts[0].value)
        if len(stmts) > 1 and all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) for s in stmts):
            raise ParseError(f"{len(stmts)} actions in one reply; write exactly one action per turn")
    # 2. a call at the end of free text: the LAST action name that starts a well-formed call
    first_error: ParseError | None = None
    matches = list(_CALL_RE.finditer(body))
    for m in reversed(matches[-_MAX_CALL_STARTS:]):
        start = m.start(1)
        tries = 0
        pos = body.find(")", m.end() - 1)
        while pos != -1 and tries < _MAX_PARSE_TRIES:
            tries += 1
            node = _try_parse(body[start : pos + 1], "eval")
            if node is not None and isinstance(node.body, ast.Call):
                try:
                    return _call_from_node(node.body)
                except ParseError as exc:
                    first_error = first_error or exc
                    break
            pos = body.find(")", pos + 1)
    if first_error is not None:
        raise first_error
    if matches:
        raise ParseError(
            f"could not parse the call starting at {body[matches[-1].start():][:60]!r}: check the parentheses and "
            "quotes (string arguments are Python string literals)"
        )
    raise ParseError(_no_action_message())


def _no_action_message() -> str:
    return 'no action found; write one call such as click("a12") or fill("a5", "text")'


def _try_parse(src: str, mode: str) -> Any:
    if len(src) > 2 * MAX_TEXT_ARG + 1000 and mode == "exec":
        return None
    try:
        return parse_untrusted_python(src, mode)
    except SyntaxError:
        return None


def _literal(node: ast.AST, what: str) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ParseError(
            f"{what} must be a literal (a quoted string or a number), got {ast.unparse(node)[:60]!r}"
        ) from None
    if isinstance(value, (list, tuple)):
        if not all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in value):
            raise ParseError(f"{what}: a list may only hold strings or numbers")
        return [str(x) for x in value]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ParseError(f"{what} must be a string or a number, got {type(value).__name__}")
    return value


def _call_from_node(node: ast.Call) -> ToolCall:
    if not isinstance(node.func, ast.Name):
        raise ParseError(f"call an action by its bare name, e.g. click(\"a3\"); got {ast.unparse(node.func)[:40]!r}")
    raw_name = node.func.id
    name = ALIASES.get(raw_name, raw_name)
    if name not in ACTIONS:
        raise ParseError(f"unknown action {raw_name!r}; actions: {', '.join(ACTIONS)}")
    model = ACTIONS[name][0]
    params = list(model.model_fields)
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise ParseError("*args / **kwargs are not accepted; write the arguments out")
    if len(node.args) > len(params):
        raise ParseError(f"{name}() takes {len(params)} argument(s) ({', '.join(params) or 'none'}), got {len(node.args)}")
    args: dict[str, Any] = {}
    for pname, a in zip(params, node.args):
        args[pname] = _literal(a, f"argument {pname!r} of {name}()")
    for kw in node.keywords:
        key = {"value": "value", "text": "text"}.get(kw.arg, kw.arg)
        if name == "select_option" and key == "option":
            key = "options"
        if name == "press" and key == "key":
            key = "key_comb"
        if name == "answer" and key in ("answer", "message", "msg", "value"):
            key = "text"
        if key not in params:
            raise ParseError(f"{name}() has no argument {kw.arg!r}; arguments: {', '.join(params) or 'none'}")
        if key in args:
            raise ParseError(f"{name}() got argument {key!r} twice")
        args[key] = _literal(kw.value, f"argument {key!r} of {name}()")
    return ToolCall(name, args)
