"""Fault injection: a sandbox that does not start, a grader that crashes, a retriever that is down.

Each case makes the real entry point fail (it is not a stand-in for a part that runs: every other part is real)
and checks the error contract: ``step`` returns with ``truncated=True``, ``info["env_error"]`` set, no ``task``
reward, and never raises.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.core.errors import SandboxUnavailable

#: The math ids graded by math-verify (countdown-v1 checks the expression with its own evaluator, no grader).
MATH_IDS = ["arl/math.arithmetic-v1", "arl/math.dataset-v1", "arl/math.tool-v1"]
CODE_IDS = ["arl/code.functions-v0", "arl/code.repo-v1"]
SEARCH_IDS = ["arl/search.multihop-v1", "arl/search.qa-v1"]


def _assert_env_error(step_out: tuple) -> dict:
    _, _, terminated, truncated, info = step_out
    assert truncated and not terminated, info
    assert info.get("env_error"), info
    assert info["reward_components"].get("task", 0.0) == 0.0 and not info["success"]
    return info


# ----------------------------------------------------------------------------------------------- grader crash
@pytest.fixture
def crashing_grader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh grader pool whose worker process exits at once (a real process that dies, not a fake reply)."""
    from arl_envs.envs.math import grading

    def start_dying_worker(self: grading.MathGrader) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._buf = b""

    monkeypatch.setattr(grading.MathGrader, "_start", start_dying_worker)
    monkeypatch.setattr(grading, "_shared", None)
    yield
    if grading._shared is not None:
        grading._shared.close()


@pytest.mark.parametrize("env_id", MATH_IDS)
def test_grader_crash_is_env_error(env_id: str, crashing_grader: None) -> None:
    env = gym.make(env_id, **({"max_tool_calls": 0} if "tool" in env_id else {}))
    env.reset(seed=0)
    info = _assert_env_error(env.step("The answer is \\boxed{\\mathbf{7}}"))  # one number in a form only the worker reads
    assert "grader" in info["env_error"]
    env.close()


def test_grader_raising_is_env_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception out of the grader entry point (not only a bad reply) is caught by the base class."""
    from arl_envs.envs.math import grading

    def broken(self, gold, pred, timeout_s=None, **kwargs):
        raise RuntimeError("grader pool broken")

    monkeypatch.setattr(grading.GraderPool, "grade", broken)
    env = gym.make("arl/math.arithmetic-v1")
    env.reset(seed=0)
    info = _assert_env_error(env.step("\\boxed{\\mathbf{7}}"))  # a form only the worker reads
    assert "RuntimeError: grader pool broken" in info["env_error"]


# ----------------------------------------------------------------------------------------------- sandbox start
def test_math_tool_session_start_failure_is_env_error(monkeypatch: pytest.MonkeyPatch) -> None:
    env = gym.make("arl/math.tool-v1")
    env.reset(seed=0)
    sandbox = env.unwrapped._sandbox  # noqa: SLF001

    def no_start(*args, **kwargs):
        raise RuntimeError("the sandboxed interpreter did not start")

    monkeypatch.setattr(type(sandbox), "open_session", no_start)
    info = _assert_env_error(env.step(env.unwrapped.expert_action()))  # turn 1 of the expert runs python
    assert "did not start" in info["env_error"]
    env.close()


@pytest.mark.parametrize("env_id", CODE_IDS)
def test_code_sandbox_unavailable_is_env_error(env_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import arl_envs.sandbox

    def unavailable(*args, **kwargs):
        raise SandboxUnavailable("bubblewrap cannot create a sandbox here (injected)")

    monkeypatch.setattr(arl_envs.sandbox, "get_sandbox", unavailable)
    env = gym.make(env_id)
    if env_id == "arl/code.repo-v1":  # reset writes the repository into the sandbox: it raises (ArlError) there
        with pytest.raises(SandboxUnavailable, match="injected"):
            env.reset(seed=0)
        return
    env.reset(seed=0)  # functions-v0 starts its sandbox on the first submission
    info = _assert_env_error(env.step(env.unwrapped.expert_action()))
    assert "injected" in info["env_error"]
    env.close()


@pytest.mark.parametrize("env_id", CODE_IDS)
def test_code_sandbox_spawner_failure_is_env_error(env_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox starts, then every process launch fails (the spawner died): still no exception out of step."""
    from arl_envs.sandbox import get_sandbox

    sandbox_cls = type(get_sandbox("bwrap"))

    def spawner_down(self, *args, **kwargs):
        raise OSError("the sandbox spawner exited (injected)")

    monkeypatch.setattr(sandbox_cls, "run", spawner_down)
    monkeypatch.setattr(sandbox_cls, "exec", spawner_down, raising=False)
    env = gym.make(env_id)
    env.reset(seed=0)
    for _ in range(env.unwrapped.max_turns):
        obs, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        if terminated or truncated:
            break
    _assert_env_error((obs, reward, terminated, truncated, info))
    env.close()


# ----------------------------------------------------------------------------------------------- retriever down
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("env_id", SEARCH_IDS)
def test_remote_retriever_down_is_env_error(env_id: str) -> None:
    env = gym.make(env_id, retriever="remote", retriever_url=f"http://127.0.0.1:{_closed_port()}")
    env.reset(seed=0)
    _assert_env_error(env.step(env.unwrapped.expert_action()))  # the expert's first action is a search
    env.close()


@pytest.mark.parametrize("env_id", SEARCH_IDS)
def test_in_process_retriever_failure_is_env_error(env_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = gym.make(env_id)
    env.reset(seed=0)

    def broken(self, *args, **kwargs):
        raise OSError("index file vanished (injected)")

    monkeypatch.setattr(type(env.unwrapped.retriever), "search", broken)
    monkeypatch.setattr(type(env.unwrapped.retriever), "batch_search", broken)
    _assert_env_error(env.step(env.unwrapped.expert_action()))
    env.close()
