"""The command grammar of ``arl/embodied.household-v0``: normalised commands to ``(verb, args)``.

ALFWorld's command templates and their common paraphrases (``pick up``, ``walk to``, ``wash X in Y``), names as
the world spells them (:func:`entity`), and the refusal of a reply that chains several commands.
"""

from __future__ import annotations

import re


_NUMBERED = re.compile(r"^([a-z]+?) ?(\d+)$")
_ARTICLES = ("the ", "a ", "an ", "some ")
#: Words that are never a name: a capture holding only one of them is a verb's particle, the name is missing.
_NOT_A_NAME = frozenset(("to", "up", "at", "on", "off", "in", "into", "from", "with", "the", "a", "an", "some"))
_SEPARATORS = re.compile(r"\s+(?:and then|then|and|after that|afterwards)\s+|\s*(?:;|&&|,)\s*|\.\s+")
VERB_WORDS = ("go", "goto", "walk", "move", "navigate", "head", "travel", "enter", "open", "close", "shut", "take",
              "pick", "pickup", "get", "grab", "put", "place", "drop", "insert", "set", "use", "turn", "switch",
              "toggle", "clean", "wash", "rinse", "heat", "warm", "cook", "cool", "chill", "freeze", "examine",
              "inspect", "look", "check", "read", "x", "inventory", "inv", "i", "l", "help")

_GRAMMAR: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("inventory", re.compile(r"^(?:inventory|inv|i|check inventory|show inventory)$")),
    ("look", re.compile(r"^(?:look|look around|l)$")),
    ("help", re.compile(r"^(?:help|\?)$")),
    ("go", re.compile(r"^(?:go to|goto|go|walk to|move to|navigate to|head to|travel to|enter)\s+(.+)$")),
    ("open", re.compile(r"^open\s+(.+)$")),
    ("close", re.compile(r"^(?:close|shut)\s+(.+)$")),
    ("take", re.compile(r"^(?:take|pick up|pickup|pick|get|grab)\s+(.+?)(?:\s+(?:from|off of|off|out of)\s+(.+))?$")),
    ("put", re.compile(r"^(?:put|place|move|drop|insert|set)\s+(.+?)\s+(?:in/on|in / on|into|onto|inside|in|on|to)\s+(.+)$")),
    ("use", re.compile(r"^(?:use|turn on|switch on|toggle|turn off|switch off)\s+(.+)$")),
    ("transform", re.compile(r"^(clean|wash|rinse|heat|warm|cook|cool|chill|freeze)\s+(.+?)\s+(?:with|in|using|at|on)\s+(.+)$")),
    ("examine", re.compile(r"^(?:examine|inspect|look at|check|read|x)\s+(.+)$")),
)
#: The grammar entries a command can match, by its first word (the same entries, in the same order, as a scan of
#: the whole grammar would try; a first word not listed falls back to the whole grammar).
_FIRST_WORDS = {
    "inventory": ("inventory", "inv", "i", "check", "show"), "look": ("look", "l"), "help": ("help", "?"),
    "go": ("go", "goto", "walk", "move", "navigate", "head", "travel", "enter"), "open": ("open",),
    "close": ("close", "shut"), "take": ("take", "pick", "pickup", "get", "grab"),
    "put": ("put", "place", "move", "drop", "insert", "set"), "use": ("use", "turn", "switch", "toggle"),
    "transform": ("clean", "wash", "rinse", "heat", "warm", "cook", "cool", "chill", "freeze"),
    "examine": ("examine", "inspect", "look", "check", "read", "x"),
}
_BY_FIRST_WORD: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {}
for _verb, _pattern in _GRAMMAR:
    for _word in _FIRST_WORDS[_verb]:
        _BY_FIRST_WORD[_word] = _BY_FIRST_WORD.get(_word, ()) + ((_verb, _pattern),)
_TRANSFORM_VERBS = {"clean": "clean", "wash": "clean", "rinse": "clean", "heat": "heat", "warm": "heat",
                    "cook": "heat", "cool": "cool", "chill": "cool", "freeze": "cool"}

COMMAND_HELP = (
    "Commands (one per turn): go to <receptacle or room>, open <receptacle>, close <receptacle>, "
    "take <object> from <receptacle>, put <object> in/on <receptacle>, use <lamp>, clean <object> with <receptacle>, "
    "heat <object> with <receptacle>, cool <object> with <receptacle>, examine <something>, inventory, look. "
    "Names are numbered as you see them, e.g. 'go to drawer 1', 'take mug 2 from countertop 1'."
)


def entity(text: str) -> str:
    """A name as the world spells it: articles dropped, ``mug1`` -> ``mug 1``, ``livingroom`` -> ``living room``."""
    text = text.strip()
    changed = True
    while changed:
        changed = False
        for a in _ARTICLES:
            if text.startswith(a):
                text, changed = text[len(a):].strip(), True
    m = _NUMBERED.match(text)
    if m:
        return f"{m.group(1)} {m.group(2)}"
    return "living room" if text == "livingroom" else text


class MultipleCommands(ValueError):
    """Raised by :func:`interpret` when one reply holds several commands."""


def interpret(command: str) -> tuple[str, tuple[str, ...]] | None:
    """Match a normalised command against the grammar.

    Returns:
        ``(verb, args)`` with canonical verbs ``go open close take put use clean heat cool examine inventory look
        help``, or None when nothing matches.

    Raises:
        MultipleCommands: The reply chains commands (``open door then go north``); nothing is executed.
    """
    parts = [p for p in _SEPARATORS.split(command) if p]
    if len(parts) > 1 and sum(p.split(" ", 1)[0] in VERB_WORDS for p in parts) >= 2:
        raise MultipleCommands(parts)
    for verb, pattern in _BY_FIRST_WORD.get(command.split(" ", 1)[0], _GRAMMAR):
        m = pattern.match(command)
        if m is None or any(g in _NOT_A_NAME for g in m.groups()):
            continue  # no match, or a command cut short: 'go to' read as go <'to'>, 'pick up' as pick <'up'>
        if verb == "transform":
            return _TRANSFORM_VERBS[m.group(1)], (entity(m.group(2)), entity(m.group(3)))
        if verb == "take":
            return "take", (entity(m.group(1)), entity(m.group(2)) if m.group(2) else "")
        return verb, tuple(entity(g) for g in m.groups())
    return None
