"""``ChatMessages`` describes every tool exactly once in the chat-formatted prompt, in both of its ``tools`` modes,
with a tool-aware chat template (rendered by transformers' own Jinja machinery)."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.wrappers import ChatMessages

pytest.importorskip("transformers", reason="transformers is in the [train] extra")
from transformers.utils.chat_template_utils import render_jinja_template  # noqa: E402

#: A tool-aware template: every tool of ``tools`` becomes one "TOOL <name>: <description>" line.
TEMPLATE = ("{% for t in tools or [] %}TOOL {{ t.function.name }}: {{ t.function.description }}\n{% endfor %}"
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}")
IDS = ("arl/math.arithmetic-v1", "arl/search.multihop-v1", "arl/embodied.frozenlake-v0", "arl/example.guess-v0")


def _prompt(env_id: str, fmt: str, **kw) -> tuple[str, list[str], dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = ChatMessages(gym.make(env_id, action_format=fmt), **kw)
    try:
        _, info = env.reset(seed=0)
        names = [s["function"]["name"] for s in env.unwrapped.tool_schemas()]
    finally:
        env.close()
    rendered, _ = render_jinja_template(conversations=[info["messages"]], chat_template=TEMPLATE, tools=info["tools"])
    return rendered[0], names, info


def _schema_mentions(prompt: str, name: str) -> int:
    """How often the prompt describes tool ``name``: its JSON schema in the instructions, its template line."""
    return prompt.count(json.dumps({"name": name})[:-1] + ",") + prompt.count(f"TOOL {name}:")


def _check_once(env_id: str) -> None:
    prompt, names, info = _prompt(env_id, "json")  # default: the schemas in the instructions only
    assert info["tools"] == [] and names
    assert all(_schema_mentions(prompt, n) == 1 for n in names), prompt
    prompt, names, info = _prompt(env_id, "json", tools="template")  # the schemas in the template only
    assert [t["function"]["name"] for t in info["tools"]] == names
    assert all(_schema_mentions(prompt, n) == 1 for n in names), prompt
    assert "Available tools: " + ", ".join(names) in info["instructions"]
    prompt, _, info = _prompt(env_id, "native")  # native: the instructions describe the native syntax alone
    assert info["tools"] == [] and "TOOL " not in prompt


@pytest.mark.parametrize("env_id", IDS)
def test_every_tool_is_described_once(env_id: str) -> None:
    _check_once(env_id)


@pytest.mark.slow
def test_web_tools_are_described_once_and_the_default_prompt_is_short() -> None:
    pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")
    from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium

    try:
        find_chromium()
    except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
        pytest.skip(f"no Chromium on this machine: {exc}")
    _check_once("arl/web.click-button-v0")
    prompt, names, _ = _prompt("arl/web.click-button-v0", "native")
    assert len(names) == 15 and all(f"{n}(" in prompt for n in names if n != "answer")  # the native action help


def test_template_mode_needs_the_json_format_and_modes_are_checked() -> None:
    with pytest.raises(ValueError, match="action_format='json'"):
        ChatMessages(gym.make("arl/example.guess-v0"), tools="template")
    with pytest.raises(ValueError, match="tools must be one of"):
        ChatMessages(gym.make("arl/example.guess-v0", action_format="json"), tools="both")
