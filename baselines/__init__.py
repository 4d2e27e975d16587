"""Reference agents trained or run against arl-envs (GRPO in :mod:`baselines.grpo`)."""

from __future__ import annotations
