"""Every env kwarg that names a backend or a choice refuses an unknown name at construction (``ValueError``, or
``TypeError`` where the kwarg also takes a callable), instead of being accepted and failing later (at ``reset``,
or as ``env_error`` on every step)."""

from __future__ import annotations

import importlib
import inspect

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.registration import ENVS

#: Keyword arguments with a string default that are free text, not a choice among names.
FREE_TEXT = {"fixed_time"}
#: Keyword arguments whose default is None but that name one choice / a list of choices when given.
NAME_DEFAULT_NONE = {"topic", "map_name"}
NAMES_DEFAULT_NONE = {"question_types", "families", "templates"}
BOGUS = "no-such-choice"


def _entry_class(env_id: str) -> type:
    mod, _, name = gym.spec(env_id).entry_point.partition(":")
    return getattr(importlib.import_module(mod), name)


def choice_kwargs() -> list[tuple[str, str, object]]:
    """``(env id, kwarg, bogus value)`` for every choice-naming kwarg of every env class (one id per class)."""
    cases: list[tuple[str, str, object]] = []
    seen: set[type] = set()
    for row in ENVS:
        cls = _entry_class(row.id)
        if cls in seen:
            continue
        seen.add(cls)
        for name, param in inspect.signature(cls).parameters.items():
            default = param.default
            if name in FREE_TEXT:
                continue
            if isinstance(default, str) or name in NAME_DEFAULT_NONE:
                cases.append((row.id, name, BOGUS))
            elif name in NAMES_DEFAULT_NONE or (
                    isinstance(default, tuple) and default and all(isinstance(x, str) for x in default)):
                cases.append((row.id, name, [BOGUS]))
        if "sandbox_kwargs" in inspect.signature(cls).parameters:
            cases.append((row.id, "sandbox_kwargs", {"no_such_argument": 1}))
    return cases


CASES = [c for c in choice_kwargs() if c[0] != "arl/remote-v0"]  # remote: its kwargs are checked by the server (tests/server)


def test_the_class_covers_the_sandbox_kwarg_of_every_code_running_id() -> None:
    ids = {env_id for env_id, name, _ in CASES if name == "sandbox"}
    assert {"arl/code.functions-v0", "arl/code.repo-v1", "arl/math.tool-v1", "arl/math.formal-v0",
            "arl/selfplay.propose-solve-v1"} <= ids
    assert len(CASES) >= 30


@pytest.mark.parametrize(("env_id", "name", "value"), CASES, ids=[f"{e}:{n}" for e, n, _ in CASES])
def test_an_unknown_choice_is_refused_at_construction(env_id: str, name: str, value: object) -> None:
    try:
        env = gym.make(env_id, **{name: value})
    except (ValueError, TypeError) as exc:
        text = str(exc)
        assert name in text or "unknown" in text or "must be" in text, text  # the message says what was wrong
        return
    env.close()
    pytest.fail(f"gym.make({env_id!r}, {name}={value!r}) was accepted")


def test_a_known_sandbox_and_its_arguments_are_still_accepted() -> None:
    env = gym.make("arl/code.functions-v0", sandbox="bwrap", sandbox_kwargs={"workdir_mb": 64})
    env.close()
