"""Shared bits of the grid puzzles (Sokoban, FrozenLake): move words and their grammar."""

from __future__ import annotations

from arl_envs.core.actions import ParseError
from arl_envs.envs.embodied.command_env import unknown_command

#: Canonical moves and their (row, column) deltas.
MOVES: dict[str, tuple[int, int]] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
_SYNONYMS = {
    "up": "up", "u": "up", "north": "up", "n": "up",
    "down": "down", "d": "down", "south": "down", "s": "down",
    "left": "left", "l": "left", "west": "left", "w": "left",
    "right": "right", "r": "right", "east": "right", "e": "right",
}
_PREFIXES = ("move ", "go ", "push ", "walk ", "step ")
MOVE_HELP = "Commands (one per turn): up, down, left or right (also 'move up', 'go left', 'north', ...)."


def parse_move(command: str) -> str:
    """The canonical move (``up down left right``) of a normalised command.

    Raises:
        ParseError: Not a move, or several moves in one reply (``up then left``, ``up, left``).
    """
    text = command.rstrip(".!").strip()
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):].strip()
            break
    move = _SYNONYMS.get(text)
    if move is not None:
        return move
    words = [w for w in text.replace(",", " ").replace(";", " ").split() if w not in ("then", "and")]
    if len(words) > 1 and all(w in _SYNONYMS or w.rstrip(".") in _SYNONYMS for w in words):
        raise ParseError(f"one move per turn: your reply holds {len(words)} moves; nothing was done. {MOVE_HELP}")
    raise unknown_command(command, MOVE_HELP)


__all__ = ["MOVES", "MOVE_HELP", "parse_move"]
