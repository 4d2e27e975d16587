"""Gymnasium's autoreset modes by name, for :mod:`arl_envs.vector` and :mod:`arl_envs.ray_vector` alike."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


def as_autoreset_mode(value: Any) -> gym.vector.AutoresetMode:
    """A :class:`gymnasium.vector.AutoresetMode` from itself, its value (``"SameStep"``) or its name in any case
    (``"same_step"``, ``"SAME_STEP"``).

    Raises:
        ValueError: Not a mode.
    """
    modes = gym.vector.AutoresetMode
    if isinstance(value, modes):
        return value
    for mode in modes:
        if isinstance(value, str) and value.lower() in (mode.value.lower(), mode.name.lower()):
            return mode
    raise ValueError(f"autoreset_mode must be one of {[m.name.lower() for m in modes]}, got {value!r}")
