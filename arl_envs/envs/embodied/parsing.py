"""The one action parser of every ``arl/embodied.*`` id (``arl_envs/CONTRACT.md``, section 5).

Native format: the reply is either a bare command (``go to desk 1``) or text holding ``<action>...</action>``
blocks, of which the LAST one counts. Anything inside ``<think>...</think>`` never counts (an unclosed
``<think>`` hides the rest of the reply). An ``<action>`` that is opened but never closed, for example because the
reply was cut off by a length limit, is not executed: it is a malformed action. Parsing is linear in the length of
the reply (each tag is searched for with ``str.find`` from a moving position, never re-scanned).

The json format is the core's ``<tool_call>`` format with one tool, ``act(command: str)`` (:data:`ACT_TOOL`).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from arl_envs.core.actions import ParseError
from arl_envs.core.tools import Tool, ToolCall

#: Longest command accepted, in characters (a command is a short imperative phrase).
MAX_COMMAND_CHARS = 200
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_ACT_OPEN, _ACT_CLOSE = "<action>", "</action>"


class ActArgs(BaseModel):
    command: str = Field(description="One text command, e.g. 'go to desk 1' or 'turn left'.")


#: The single tool of every embodied env.
ACT_TOOL = Tool("act", "Carry out one text command in the world.", ActArgs)


def strip_think(text: str) -> str:
    """``text`` without its ``<think>...</think>`` spans (an unclosed ``<think>`` drops everything after it)."""
    out: list[str] = []
    pos = 0
    while True:
        start = text.find(_THINK_OPEN, pos)
        if start < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = text.find(_THINK_CLOSE, start + len(_THINK_OPEN))
        if end < 0:
            break
        pos = end + len(_THINK_CLOSE)
    return "".join(out)


def parse_command(text: str) -> str:
    """The command of a native-format reply, normalised to lower case with single spaces.

    Args:
        text: The model's raw reply.

    Returns:
        The command, e.g. ``"go to desk 1"``.

    Raises:
        ParseError: Empty reply, an unclosed ``<action>``, an empty ``<action></action>``, a command over
            :data:`MAX_COMMAND_CHARS` characters, or a bare reply that spans several lines.
    """
    visible = strip_think(text)
    if _ACT_OPEN in visible or _ACT_CLOSE in visible:
        last: str | None = None
        pos = 0
        while True:
            start = visible.find(_ACT_OPEN, pos)
            if start < 0:
                break
            body_start = start + len(_ACT_OPEN)
            end = visible.find(_ACT_CLOSE, body_start)
            if end < 0:
                raise ParseError(
                    "an <action> tag was opened but never closed (was the reply cut off?); nothing was done. "
                    "Write one command inside <action>...</action>."
                )
            last = visible[body_start:end]
            pos = end + len(_ACT_CLOSE)
        if last is None:
            raise ParseError("found </action> without <action>; write one command inside <action>...</action>")
        raw = last
    else:
        raw = visible
    return normalise_command(raw)


def normalise_command(raw: str) -> str:
    """One command, lower case with single spaces (what both action formats hand to an env's grammar).

    Args:
        raw: The command text (the body of an ``<action>``, a bare reply, or the json ``act`` argument).

    Returns:
        The normalised command, e.g. ``"go to desk 1"`` for ``"  Go to   Desk 1 "``.

    Raises:
        ParseError: Empty, longer than :data:`MAX_COMMAND_CHARS` characters, spanning several lines, or holding a
            character that is not printable text (a control character, a lone surrogate, which no UTF-8 consumer
            can carry, such as a tokenizer, a JSON log or ScienceWorld's py4j bridge, or an invisible format
            character such as U+200B): such a command never names anything in a world, and echoing it back in an
            error observation would put unencodable text into the episode.
    """
    if "\n" in raw.strip():
        raise ParseError("write exactly one command on one line (or one <action>...</action> block)")
    command = " ".join(raw.split()).lower()
    if not command:
        raise ParseError("no command found; write one command such as 'look' (or <action>look</action>)")
    if len(command) > MAX_COMMAND_CHARS:
        raise ParseError(f"the command is {len(command)} characters long; the limit is {MAX_COMMAND_CHARS}")
    if not command.isprintable():
        bad = next(ch for ch in command if not ch.isprintable())
        raise ParseError(f"the command holds a non-printable character (U+{ord(bad):04X}); write plain text")
    return command


def parse_native(text: str) -> list[ToolCall]:
    """:func:`parse_command` as the single ``act`` tool call the core validates (for ``AgentEnv._parse_native``)."""
    return [ToolCall("act", {"command": parse_command(text)})]


def format_act(command: str) -> str:
    """A command in the native format (the bare command)."""
    return command
