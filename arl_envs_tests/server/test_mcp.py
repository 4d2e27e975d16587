"""MCP at ``/mcp`` with the ``mcp`` package's own client (streamable HTTP): the env's tools listed and called, each
call one env step whose result carries the reward parts."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest

mcp_client = pytest.importorskip("mcp.client", reason="needs pip install 'arl-envs[serve]' (mcp)")
from mcp.client import Client  # noqa: E402

GUESS = "arl/example.guess-v0"


def _local_expert_episode(seed: int) -> list[tuple[dict, float, bool]]:
    """(arguments, reward, done) of the expert's guesses in-process."""
    env = gym.make(GUESS)
    env.reset(seed=seed)
    out = []
    while True:
        action = env.unwrapped.expert_action()
        args = json.loads(action.split("<tool_call>")[1].split("</tool_call>")[0])["arguments"]
        _, r, term, trunc, info = env.step(action)
        out.append((args, r, term or trunc))
        if term or trunc:
            env.close()
            return out


def test_mcp_client_lists_and_calls_env_tools(server) -> None:
    expected = _local_expert_episode(seed=2)

    async def main() -> None:
        async with Client(f"{server.url}/mcp", mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["reset_env"]
            first = await client.call_tool("reset_env", {"env_id": GUESS, "seed": 2})
            assert not first.is_error and "secret integer" in first.content[0].text
            assert first.structured_content["info"]["tools"][0]["function"]["name"] == "guess"
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"reset_env", "guess"}
            assert "number" in tools["guess"].input_schema["properties"]
            for args, reward, done in expected:
                result = await client.call_tool("guess", args)
                s = result.structured_content
                assert not result.is_error
                assert s["reward"] == reward and s["done"] == done
                assert sum(s["info"]["reward_components"].values()) == reward  # the reward parts
            assert s["info"]["success"] is True
            bad = await client.call_tool("guess", {"number": "many"})  # a rejected argument: the env's action_error
            assert bad.is_error  # the episode is over: RESET_NEEDED
            await client.call_tool("reset_env", {"seed": 2})
            bad = await client.call_tool("guess", {"number": "many"})
            assert not bad.is_error and bad.structured_content["info"]["action_error"]
            unknown = await client.call_tool("reset_env", {"env_id": "arl/nope-v0"})
            assert unknown.is_error and "unknown env id" in unknown.content[0].text

    before = server.stats()["by_kind"].get("mcp", 0)
    asyncio.run(main())
    assert server.stats()["by_kind"].get("mcp", 0) == before  # ending the MCP session closed its env


def test_mcp_sessionless_protocol_passes_session_id(server) -> None:
    """A client of the session-less protocol version carries the session in the session_id argument."""

    async def main() -> None:
        async with Client(f"{server.url}/mcp") as client:  # mode="auto": the newest protocol, no MCP session
            first = await client.call_tool("reset_env", {"env_id": "arl/math.arithmetic-v1", "seed": 0})
            sid = first.structured_content["session_id"]
            result = await client.call_tool("answer", {"answer": "12345", "session_id": sid})
            assert not result.is_error, result.content
            assert result.structured_content["session_id"] == sid
            assert set(result.structured_content["info"]["reward_components"]) >= {"task"}

    asyncio.run(main())
