"""Reference agents trained or run against arl-envs (GRPO in :mod:`arl_baselines.grpo`)."""

from __future__ import annotations
