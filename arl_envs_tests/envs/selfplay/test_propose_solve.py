"""arl/selfplay.propose-solve-v1 (Absolute Zero setting): validity checks in the sandbox, solver checks, rewards."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.agents import make_agent, run_episode
from arl_envs_tests.sandbox.conftest import bwrap_skip_reason

pytestmark = pytest.mark.skipif(bwrap_skip_reason() is not None, reason=str(bwrap_skip_reason()))
ENV_ID = "arl/selfplay.propose-solve-v1"
SQUARES = "def f(x):\n    return x * x"


def _propose(env, program: str, inputs: str):
    return env.step(f"```python\n{program}\n```\n<inputs>{inputs}</inputs>")


@pytest.mark.parametrize("task_type", ["deduction", "abduction", "induction"])
def test_expert_solves_every_type(task_type: str) -> None:
    env = gym.make(ENV_ID, task_types=[task_type], k=2)
    try:
        for seed in range(3):
            ep = run_episode(env, make_agent("expert", env), seed=seed)
            assert ep.success and ep.infos[-1]["solve_rate"] == 1.0
            assert ep.infos[-1]["reward_components"]["propose"] == 0.0  # always solved: not learnable
    finally:
        env.close()


def test_random_agent_fails() -> None:
    env = gym.make(ENV_ID)
    try:
        assert not any(run_episode(env, make_agent("random", env, seed=s), seed=s).success for s in range(6))
    finally:
        env.close()


@pytest.fixture(scope="module")
def env():
    e = gym.make(ENV_ID, task_types=["deduction"], k=2, timeout_s=1.5)
    yield e
    e.close()


@pytest.mark.parametrize(
    "program, inputs, why",
    [
        ("import os\ndef f(x):\n    return os.getcwd()", "[1]", "importing 'os'"),
        ("def f(x):\n    return open('/etc/passwd').read()", "[1]", "'open'"),
        ("def f(x):\n    while True:\n        pass", "[1]", "timed out"),
        ("def f(x):\n    return 1 // x", "[0]", "ZeroDivisionError"),
        ("def f(x):\n    return str(object())", "[1]", "not deterministic"),
        ("def f(x):\n    return object", "[1]", "literals"),
        ("def g(x):\n    return x", "[1]", "define a top-level function f"),
        (SQUARES, "not a list", "list literal"),
    ],
)
def test_invalid_proposals_score_minus_one(env, program: str, inputs: str, why: str) -> None:
    env.reset(seed=0)
    obs, r, term, trunc, info = _propose(env, program, inputs)
    assert term and not info["success"] and r == -1.0 and info["proposal_valid"] is False
    assert why in info["proposal_error"], info["proposal_error"]


def test_deduction_checks_the_executed_output(env) -> None:
    env.reset(seed=0)
    _, r, term, _, info = _propose(env, SQUARES, "[7]")
    assert not term and info["proposal_valid"] and r == 0.0
    _, r1, _, _, i1 = env.step("<answer>49</answer>")
    _, r2, term, _, i2 = env.step("<answer>48</answer>")
    assert i1["correct"] and not i2["correct"] and term and i2["solve_rate"] == 0.5
    assert r1 == 0.5 and i2["reward_components"]["propose"] == 0.5, i2  # learnability 1 - 1/2


def test_abduction_accepts_any_input_with_that_output() -> None:
    env = gym.make(ENV_ID, task_types=["abduction"], k=2)
    try:
        env.reset(seed=0)
        _propose(env, SQUARES, "[3]")
        _, _, _, _, info = env.step("<answer>-3</answer>")
        assert info["correct"]
        _, _, term, _, info = env.step("<answer>4</answer>")
        assert term and not info["correct"]
    finally:
        env.close()


def test_set_order_cannot_make_a_proposal_a_coin_flip() -> None:
    # str hashing is randomised per process: list({...}) of strings passed the double run now and then, and
    # then the solver's correct input was judged right or wrong at random (propose reward from noise). The runs
    # now use different fixed seeds, so such a program is refused every time (see the battery below).
    env = gym.make(ENV_ID, task_types=["abduction"], k=3)
    try:
        env.reset(seed=0)
        program = "def f(x):\n    return list({'ab', 'cd', 'ef', 'gh', 'ij', 'kl', 'mn', 'op'})"
        _, r, term, _, info = _propose(env, program, "[1]")
        assert term and r == -1.0 and info["proposal_valid"] is False and "hash" in info["proposal_error"]
    finally:
        env.close()


#: Programs whose output depends on the order of a set of strings (str hashing), written several ways. With one
#: hash seed for every run they passed both determinism checks every time, and their answer was one only the
#: executor could know: a solver guessed, and the proposer earned learnability (1 - solve rate) from the guess.
HASH_ORDER_PROGRAMS = [
    "def f(x):\n    return [w for w in {'ant', 'bee', 'cat', 'dog', 'eel', 'fox', 'gnu', 'hen'}][0] + str(x)",
    "def f(x):\n    return ''.join(set('abcdefghij')) * x",
    "def f(x):\n    return tuple(frozenset(['p', 'q', 'r', 's', 't', 'u', 'v', 'w'])).index('q') + x",
    "def f(x):\n    s = {str(i) for i in range(x, x + 9)}\n    return [s.pop() for _ in range(3)]",
    "def f(x):\n    return list(dict.fromkeys({'k' + str(i) for i in range(12)}))[x]",
]


@pytest.mark.parametrize("task_type", ["deduction", "abduction"])
def test_outputs_that_depend_on_str_hashing_are_refused(task_type: str) -> None:
    env = gym.make(ENV_ID, task_types=[task_type], k=2)
    try:
        for seed, program in enumerate(HASH_ORDER_PROGRAMS):
            env.reset(seed=seed)
            _, r, term, _, info = _propose(env, program, "[1, 2]")
            assert term and r == -1.0 and info["proposal_valid"] is False, (program, info)
            assert "not deterministic" in info["proposal_error"], info["proposal_error"]
        # Sets whose order does not depend on str hashing stay valid: ints, and sorted strings.
        env.reset(seed=0)
        _, _, term, _, info = _propose(env, "def f(x):\n    return sorted({'b', 'a', 'c'}) + list({3, 1, 2})", "[1]")
        assert not term and info["proposal_valid"], info.get("proposal_error")
    finally:
        env.close()


COUNTER = """import operator
def f(x):
    b = operator.attrgetter('__globals__')(f)['__builtins__']
    op = operator.attrgetter('open')(b) if not isinstance(b, dict) else b['open']
    try:
        n = int(op('cnt').read())
    except OSError:
        n = 0
    op('cnt', 'w').write(str(n + 1))
    return 0 if n < 2 else n % 2
"""


def test_runs_share_no_state_and_attribute_gateways_are_refused() -> None:
    # This program passed the double run (runs 1, 2 -> 0), then alternated on the solver's runs through a file
    # left in the work directory: propose reward 0.5 for any solver; it also leaked into the next episode.
    env = gym.make(ENV_ID, task_types=["abduction"], k=4)
    try:
        env.reset(seed=0)
        _, r, term, _, info = _propose(env, COUNTER, "[1]")
        assert term and info["proposal_valid"] is False and "attrgetter" in info["proposal_error"]
        # The sandbox layer on its own (no static check): every run starts from an empty work directory.
        outs = [env.unwrapped._run(COUNTER, "[1]").stdout for _ in range(4)]
        assert outs == ["[0]\n"] * 4, outs
    finally:
        env.close()


def test_induction_checked_on_held_out_inputs() -> None:
    env = gym.make(ENV_ID, task_types=["induction"], k=2)
    try:
        env.reset(seed=0)
        obs, *_ = _propose(env, SQUARES, "[1, 2, 3, 4]")
        assert "f(1) == 1" in obs and "f(3)" not in obs  # held-out pairs are not shown
        overfit = "def f(x):\n    return {1: 1, 2: 4}.get(x, 0)"
        _, _, _, _, info = env.step(f"```python\n{overfit}\n```")
        assert not info["correct"]
        _, _, term, _, info = env.step("```python\ndef f(y):\n    return y ** 2\n```")
        assert term and info["correct"]
    finally:
        env.close()


def test_external_solver_callable_fills_the_solver_role() -> None:
    answers = iter(["<answer>49</answer>", "<answer>0</answer>", "garbage", "<answer>49</answer>"])
    seen = []

    def solver(obs: str, info: dict) -> str:
        seen.append(info)
        return next(answers)

    env = gym.make(ENV_ID, task_types=["deduction"], k=4, solver=solver)
    try:
        env.reset(seed=0)
        _, r, term, _, info = _propose(env, SQUARES, "[7]")
        assert term and info["solver_results"] == [True, False, False, True] and r == 0.5
        assert [s["attempt"] for s in seen] == [1, 2, 3, 4] and seen[0]["role"] == "solver"
    finally:
        env.close()


def test_wrong_role_call_is_a_format_error() -> None:
    env = gym.make(ENV_ID, action_format="json")
    try:
        env.reset(seed=0)
        obs, r, term, _, info = env.step('<tool_call>{"name": "solve", "arguments": {"answer": "1"}}</tool_call>')
        assert not term and r == -1.0 and info["action_error"] is None and "proposer" in obs
    finally:
        env.close()


@pytest.mark.parametrize("kwargs", [{}, {"action_format": "json", "k": 2}])
def test_conformance(kwargs: dict) -> None:
    """The conformance suite for this id (tagged domain-conformance: fewer fuzzed actions, each may run the sandbox)."""
    from arl_envs.testing import check_conformance

    report = check_conformance(ENV_ID, env_kwargs=kwargs, n_fuzz=40, n_random_episodes=3)
    assert report.passed, report.summary()


EVAL_TYPE = """import typing
def f(x):
    return typing._eval_type(typing.ForwardRef("__import__('time').time()"), {}, {})
"""


@pytest.mark.parametrize(
    "program, why",
    [
        (EVAL_TYPE, "private and dunder attributes (_eval_type)"),
        ("from typing import _eval_type\ndef f(x):\n    return x", "importing private names (_eval_type)"),
        ("import operator\ndef f(x):\n    return operator._abs(x)", "private and dunder attributes (_abs)"),
    ],
)
def test_private_helpers_that_evaluate_strings_are_refused(env, program: str, why: str) -> None:
    # typing._eval_type(ForwardRef(...)) evaluated any expression (so imported time/os) past the static check.
    env.reset(seed=0)
    _, r, term, _, info = _propose(env, program, "[1]")
    assert term and r == -1.0 and info["proposal_valid"] is False and why in info["proposal_error"]


def test_a_proposal_that_changes_after_the_double_run_loses_its_propose_reward(monkeypatch) -> None:
    # Behind the static check (switched off here, as a bypass would), a clock-based program agrees with itself in
    # the two back-to-back runs at proposal time and changes afterwards; the re-run after the last attempt sees it.
    import time

    from arl_envs.envs.selfplay import propose_solve

    monkeypatch.setattr(propose_solve, "check_program", lambda program: None)
    switch_at = time.time() + 3.0
    program = f"import time\ndef f(x):\n    return 0 if time.time() < {switch_at!r} else 1"
    env = gym.make(ENV_ID, task_types=["deduction"], k=2)
    try:
        env.reset(seed=0)
        _, _, term, _, info = _propose(env, program, "[5]")
        assert not term and info["proposal_valid"] is True
        _, _, term, _, info = env.step("<answer>0</answer>")  # right
        assert not term and info["correct"]
        time.sleep(max(0.0, switch_at - time.time()) + 0.2)
        _, r, term, _, info = env.step("<answer>1</answer>")  # wrong: solve rate 1/2, learnability 0.5 ...
        parts = info["reward_components"]
        assert term and info["proposal_recheck"] is False and "re-run" in info["proposal_error"]
        assert parts["propose"] == 0.0 and parts["format"] == -1.0  # ... cancelled by the re-run
    finally:
        env.close()


def test_a_deterministic_proposal_passes_the_re_run() -> None:
    env = gym.make(ENV_ID, task_types=["deduction"], k=2)
    try:
        env.reset(seed=0)
        _propose(env, SQUARES, "[3]")
        env.step("<answer>9</answer>")
        _, _, term, _, info = env.step("<answer>8</answer>")
        assert term and info["proposal_recheck"] is True and info["reward_components"]["propose"] == 0.5
    finally:
        env.close()
