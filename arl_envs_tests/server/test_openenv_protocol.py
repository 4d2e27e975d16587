"""OpenEnv's own clients (``GenericEnvClient``, async and ``.sync()``) and plain HTTP against ``arl-envs serve``;
faults and bad input (each a 4xx or a WebSocket error that names the problem, the server serving on)."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient

from arl_envs.agents.agents import ExpertAgent
from arl_envs.server.remote import basic_auth_url

from .conftest import start_thread_server, stop_server

GUESS = "arl/example.guess-v0"


def test_sync_client_plays_an_episode_like_in_process(server) -> None:
    local = gym.make(GUESS)
    lo, li = local.reset(seed=4)
    expert = ExpertAgent(local)
    with GenericEnvClient(base_url=server.url).sync() as client:
        result = client.reset(env_id=GUESS, seed=4)
        assert result.observation["text"] == lo and result.reward is None and not result.done
        assert result.observation["info"]["tools"] == json.loads(json.dumps(li["tools"]))
        while True:
            action = expert.act(lo, li)
            lo, lr, lterm, ltrunc, li = local.step(action)
            result = client.step({"text": action})
            assert (result.observation["text"], result.reward, result.done) == (lo, lr, lterm or ltrunc)
            assert result.observation["info"] == json.loads(json.dumps(li))  # info crosses whole
            if result.done:
                break
        assert result.observation["info"]["success"] is True
        assert set(result.observation["info"]["reward_components"]) == {"task", "format"}
        state = client.state()
        assert state["env_id"] == GUESS and state["step_count"] == li["turn"] and not state["episode_active"]
    local.close()


def test_async_client_per_session_ids_and_kwargs(server) -> None:
    async def main() -> list[str]:
        async with GenericEnvClient(base_url=server.url) as a, GenericEnvClient(base_url=server.url) as b:
            ra = await a.reset(env_id="arl/math.arithmetic-v1", env_kwargs={"difficulty": 5}, seed=0)
            rb = await b.reset(env_id="arl/multiagent.tictactoe-v1", seed=0)
            rb2 = await b.step({"text": "not a move"})
            assert rb2.observation["info"]["action_error"]  # a malformed action is an observation, not an error
            return [ra.observation["info"]["task_id"], rb.observation["env_id"]]

    task_id, env_id = asyncio.run(main())
    assert "-d5-" in task_id and env_id == "arl/multiagent.tictactoe-v1"


def test_base_url_per_id_needs_no_reset_arguments(server) -> None:
    with GenericEnvClient(base_url=f"{server.url}/envs/arl/embodied.frozenlake-v0").sync() as client:
        result = client.reset(seed=0)
        assert result.observation["env_id"] == "arl/embodied.frozenlake-v0"


def test_schema_health_metadata_envs(server) -> None:
    schema = httpx.get(f"{server.url}/schema").json()
    assert schema["action"]["required"] == ["text"] and "info" in schema["observation"]["properties"]
    assert httpx.get(f"{server.url}/health").json() == {"status": "healthy"}
    assert GUESS in httpx.get(f"{server.url}/envs").json()["env_ids"]
    assert httpx.get(f"{server.url}/metadata").json()["name"] == "arl-envs"


def test_http_session_episode_and_close(server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        r = http.post("/reset", json={"env_id": GUESS, "seed": 1})
        assert r.status_code == 200
        sid = r.json()["observation"]["session_id"]
        r = http.post("/step", json={"session_id": sid, "action": {"text": "<tool_call>{\"name\": \"guess\", "
                                                                          "\"arguments\": {\"number\": 50}}</tool_call>"}})
        body = r.json()
        assert r.status_code == 200 and body["observation"]["info"]["turn"] == 1 and body["done"] is False
        assert http.get("/state", params={"session_id": sid}).json()["step_count"] == 1
        assert http.post("/close", json={"session_id": sid}).status_code == 200
        r = http.post("/step", json={"session_id": sid, "action": {"text": "x"}})
        assert r.status_code == 404 and "no open session" in r.json()["detail"]["message"]


@pytest.mark.parametrize(
    ("route", "body", "status", "needle"),
    [
        ("/reset", b"{not json", 400, "malformed JSON"),
        ("/reset", json.dumps({"env_id": "arl/nope-v0"}).encode(), 404, "unknown env id"),
        ("/reset", json.dumps({"env_id": GUESS, "env_kwargs": {"bogus": 1}}).encode(), 422, "bogus"),
        ("/reset", json.dumps({"env_id": GUESS, "env_kwargs": "low=1"}).encode(), 422, "JSON object"),
        ("/reset", json.dumps({"env_id": GUESS, "env_kwargs": {"low": "abc"}}).encode(), 422, "low"),
        ("/reset", json.dumps({"env_id": GUESS, "sed": 1}).encode(), 422, "'sed'"),
        ("/reset", json.dumps({"env_id": GUESS, "seed": -1}).encode(), 422, "seed"),
        ("/reset", json.dumps({"env_id": 5}).encode(), 422, "env_id must be a string"),
        ("/reset", json.dumps([1, 2]).encode(), 422, "JSON object"),
        ("/reset", json.dumps({"seed": 0}).encode(), 400, "needs an env_id"),
        ("/step", json.dumps({"action": {"text": "x"}}).encode(), 400, "session_id"),
        ("/step", json.dumps({"session_id": "nope", "action": {"text": "x"}}).encode(), 404, "no open session"),
        ("/step", json.dumps({"session_id": "x"}).encode(), 422, "action"),
        ("/step", b"x" * (2 ** 20 + 1), 413, "over the server's limit"),
    ],
)
def test_http_bad_input_is_a_named_4xx(server, route: str, body: bytes, status: int, needle: str) -> None:
    r = httpx.post(f"{server.url}{route}", content=body, headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == status, r.text
    assert needle in r.json()["detail"]["message"]


def test_websocket_bad_input_is_an_error_message_and_the_session_goes_on(server) -> None:
    from websockets.sync.client import connect

    with connect(f"{server.url.replace('http', 'ws')}/ws", max_size=None) as ws:
        def ask(message: str | dict) -> dict:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        assert ask("{oops")["data"]["code"] == "INVALID_JSON"
        assert ask({"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert ask({"type": "step", "data": {"text": "x"}})["data"]["code"] == "RESET_NEEDED"
        assert ask({"type": "reset", "data": {"env_id": "arl/nope-v0"}})["data"]["code"] == "UNKNOWN_ENV"
        bad = ask({"type": "reset", "data": {"env_id": GUESS, "env_kwargs": {"bogus": 1}}})["data"]
        assert bad["code"] == "BAD_KWARGS" and "bogus" in bad["message"]
        assert ask({"type": "step"})["data"]["code"] == "VALIDATION_ERROR"
        assert ask({"type": "reset", "data": {"env_id": ["a"]}})["data"]["code"] == "VALIDATION_ERROR"
        assert ask("x" * (2 ** 20 + 1))["data"]["code"] == "MESSAGE_TOO_LARGE"
        ok = ask({"type": "reset", "data": {"env_id": GUESS, "seed": 0}})
        assert ok["type"] == "observation"
        # an action over the env's own size limit (131,072 characters) is the env's action_error observation
        long = ask({"type": "step", "data": {"text": "y" * 200_000}})
        assert long["type"] == "observation" and "limit" in long["data"]["observation"]["info"]["action_error"]


def test_too_many_sessions_and_token() -> None:
    srv = start_thread_server(env_patterns=[GUESS], max_sessions=2, token="s3cret")
    try:
        assert httpx.get(f"{srv.url}/health").status_code == 401
        assert httpx.post(f"{srv.url}/reset", json={"env_id": GUESS}).status_code == 401
        with pytest.raises(ConnectionError):
            GenericEnvClient(base_url=srv.url).sync().connect()  # no token: the handshake is refused
        authed = basic_auth_url(srv.url, "s3cret")  # OpenEnv's client sends URL credentials as Basic auth
        a, b = GenericEnvClient(base_url=authed).sync(), GenericEnvClient(base_url=authed).sync()
        c = GenericEnvClient(base_url=authed).sync()
        with a, b:
            a.reset(seed=0)
            b.reset(seed=0)
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                c.reset(seed=0)
            r = httpx.post(f"{srv.url}/reset", json={}, headers=srv.headers())
            assert r.status_code == 503 and "--max-sessions" in r.json()["detail"]["message"]
            assert a.step({"text": "still served"}).observation["info"]["action_error"]
        c.close()
    finally:
        stop_server(srv)


def test_idle_session_is_closed() -> None:
    srv = start_thread_server(env_patterns=[GUESS], idle_timeout_s=0.5)
    try:
        with GenericEnvClient(base_url=srv.url).sync() as client:
            client.reset(seed=0)
            assert srv.stats()["active"] == 1
            import time

            time.sleep(2.0)
            assert srv.stats()["active"] == 0 and srv.stats()["session_threads"] == 0
            with pytest.raises(Exception):  # noqa: B017 - the socket was closed with a SESSION_CLOSED message
                client.step({"text": "x"})
    finally:
        stop_server(srv)
