"""Public conformance checks for arl-envs environments (and any env that claims the same contract).

:func:`check_conformance` runs every check on one env id and returns a :class:`ConformanceReport`;
``arl_envs_tests/test_conformance.py`` runs it over every registered id, and ``arl-envs check`` from the shell.

Checks (``arl_envs/CONTRACT.md``, section 2):

* ``gymnasium_check_env``: :func:`gymnasium.utils.env_checker.check_env` passes;
* ``contract_hooks``: an :class:`AgentEnv` subclass overrides none of ``reset``, ``step``, ``_parse``
  (:data:`arl_envs.core.env.SEALED_METHODS`); it uses the hooks instead;
* ``api_misuse``: step before reset raises :class:`ResetNeeded`, a non-``str`` action :class:`InvalidActionType`;
* ``determinism``: same seed and same actions give identical ``(obs, reward, terminated, truncated, info)``;
* ``reset_sequence``: ``reset(seed=s)`` then ``reset()`` is deterministic;
* ``expert_solves``: the expert reaches ``success=True`` on each seed in ``expert_seeds`` (default 0-4);
* ``random_agent``: random agents never raise and every step satisfies the step invariants;
* ``fuzz``: 200 malformed actions (empty, 100k characters, control characters, unbalanced tags, broken JSON,
  emoji/CJK, mutated expert actions) never raise and satisfy the step invariants;
* ``close_twice``: ``close()`` twice is fine;
* ``process_state``: after a first reset (imports done), an expert (or random) episode and ``close()`` leave the
  process's shared state as they found it: the thread's ``decimal`` context, the ``random`` module's and NumPy's
  global generator states, the recursion and int string-conversion limits, the working directory and
  ``os.environ``;
* ``snapshot``: expert steps, ``snapshot()``, other actions, ``restore()``, the rest of the expert's actions give
  the transcript of the unbranched episode (also on a second instance, from a pickled snapshot where it pickles);
  ``fork(env, 3)`` forks stepped differently do not affect each other (:func:`check_snapshot`).

An env whose ``has_expert`` attribute is False (a task without a scripted expert, e.g. most MiniWoB++ tasks of
``arl/web.miniwob-v0``) skips only ``expert_solves`` (reported as passed, message ``skipped: ...``); the
determinism check then plays random actions where it would play expert ones.

Step invariants: the observation is in ``observation_space``; ``reward`` is a float equal to the sum of
``info["reward_components"]``; ``terminated`` and ``truncated`` are bools and not both True; ``info`` has every
contract key; a malformed action has ``info["action_error"]`` set.
"""

from __future__ import annotations

import decimal
import functools
import math
import os
import random
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from arl_envs.agents.agents import ExpertAgent, RandomAgent, run_episode
from arl_envs.core.env import AgentEnv, sealed_overrides
from arl_envs.core.errors import InvalidActionType, ResetNeeded

#: Info keys every step must carry.
STEP_INFO_KEYS = ("task_id", "turn", "reward_components", "action_error", "tool_calls", "success")
#: Info keys every reset must carry.
RESET_INFO_KEYS = ("task_id", "task", "turn", "tools", "instructions")
DEFAULT_EXPERT_SEEDS = (0, 1, 2, 3, 4)
DEFAULT_FUZZ_ACTIONS = 200
DEFAULT_RANDOM_EPISODES = 5

_FIXED_FUZZ: tuple[str, ...] = (
    "",
    " ",
    "\n\n\n",
    "a" * 100_000,
    "x" * 200_000,
    "\x00\x01\x02\x1b[31m\x7f",
    "\r\n\t\x0b\x0c",
    "<tool_call>",
    "</tool_call>",
    "<tool_call>{</tool_call>",
    '<tool_call>{"name": "answer", "arguments": {"answer": "1"}</tool_call>',
    '<tool_call>{"name": 5}</tool_call>',
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    '<tool_call>["a", "b"]</tool_call>',
    '<tool_call>{"name": "answer", "arguments": "not json"}</tool_call>',
    "{\"name\": \"answer\", \"arguments\": {\"answer\": \"1\"}}",
    "<search>",
    "<search></search>",
    "<answer>",
    "</answer><answer>",
    "\\boxed{",
    "\\boxed{}",
    "\\boxed{}}}}",
    "```python\nprint(1)\n",
    "```",
    "click(",
    'fill("7", ',
    "中文 click(12) 🙂",
    "数学搜索代码网页 🚀🚀🚀 ∑√π",
    "\ud7ff\ue000\U0010ffff",
    "<information>fake tool result</information>",
    "<" * 5000,
    "{" * 5000 + "}" * 4999,
    "\\boxed{" * 1000,
    ("\\fbox{" * 20000),
    "<answer>" * 10000,
    "<information>" * 5000 + "</information>",
    "<tool_call>" + "[" * 3000 + "]" * 3000 + "</tool_call>",
    '<tool_call>{"name": "answer", "arguments": ' + '{"a": ' * 2000 + "1" + "}" * 2000 + "}</tool_call>",
    "\ud800 lone surrogate",
    # A JSON integer past int's 4,300-digit string limit (direct and JSON-in-a-string), and a lone surrogate
    # inside \\boxed{} (a checker that encodes the answer must not raise UnicodeEncodeError on it).
    '<tool_call>{"name": "answer", "arguments": {"text": ' + "9" * 5000 + "}}</tool_call>",
    '<tool_call>{"name": "answer", "arguments": "{\\"text\\": ' + "9" * 5000 + '}"}</tool_call>',
    "\\boxed{\udfff}",
)


@dataclass
class CheckResult:
    """One check's outcome: ``name``, ``passed``, ``message`` (the failure), ``seconds``."""

    name: str
    passed: bool
    message: str = ""
    seconds: float = 0.0


@dataclass
class ConformanceReport:
    """All checks of one env id."""

    env_id: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.passed]

    def summary(self) -> str:
        lines = [f"{self.env_id}: {'PASS' if self.passed else 'FAIL'}"]
        for r in self.results:
            lines.append(f"  [{'ok' if r.passed else 'FAIL'}] {r.name} ({r.seconds:.2f}s) {r.message}".rstrip())
        return "\n".join(lines)


class _Skipped(Exception):
    """Raised by a check that does not apply to the env (recorded as passed with ``skipped: <reason>``)."""


def env_has_expert(env: gym.Env) -> bool:
    """False only when the (unwrapped) env says ``has_expert = False``; envs without the attribute have one."""
    return getattr(env.unwrapped, "has_expert", True) is not False


class ConformanceError(AssertionError):
    """Raised by :func:`assert_conformance` with the failing checks' messages."""


def assert_step_invariants(env: gym.Env, result: tuple[Any, ...], malformed: bool | None = None) -> None:
    """Check one ``step`` result against the contract.

    Args:
        env: The env that produced it.
        result: ``(obs, reward, terminated, truncated, info)``.
        malformed: If True, ``info["action_error"]`` must be set; if False, it must be None.

    Raises:
        AssertionError: A violated invariant, with a message naming it.
    """
    obs, reward, terminated, truncated, info = result
    assert isinstance(obs, str), f"observation is {type(obs).__name__}, not str"
    assert env.observation_space.contains(obs), f"observation of {len(obs)} chars is not in {env.observation_space}"
    assert isinstance(reward, float) and math.isfinite(reward), f"reward {reward!r} is not a finite float"
    assert isinstance(terminated, bool) and isinstance(truncated, bool), "terminated/truncated must be bool"
    assert not (terminated and truncated), "terminated and truncated are both True"
    missing = [k for k in STEP_INFO_KEYS if k not in info]
    assert not missing, f"info lacks {missing}"
    comps = info["reward_components"]
    assert isinstance(comps, dict) and all(isinstance(v, float) for v in comps.values()), "bad reward_components"
    assert sum(comps.values()) == reward, f"reward {reward} != sum of components {comps}"
    assert isinstance(info["success"], bool), "info['success'] must be bool"
    assert isinstance(info["tool_calls"], list), "info['tool_calls'] must be a list"
    if malformed is True:
        assert isinstance(info["action_error"], str) and info["action_error"], "malformed action without action_error"
    if malformed is False:
        assert info["action_error"] is None, f"valid action flagged: {info['action_error']}"


def _equal(a: Any, b: Any) -> bool:
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return bool(a == b)
    except Exception:
        return False


_NONDETERMINISTIC_INFO = ("duration_s", "elapsed_s", "seconds", "wall_time_s", "cpu_time_s", "timing")


def _strip_timing(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in _NONDETERMINISTIC_INFO}


def fuzz_actions(env: AgentEnv, n: int, seed: int = 0) -> list[str]:
    """``n`` malformed or odd actions: the fixed list above, then mutations of expert and random actions.

    Mutations: truncation at a random point, a random character deleted/duplicated, tags closed twice, random
    Unicode inserted. The env must be reset (its expert action is used as material).
    """
    rng = np.random.default_rng(seed)
    out = list(_FIXED_FUZZ[:n])
    try:
        material = [env.expert_action()]
    except Exception:
        material = []
    agent = RandomAgent(env, seed=seed, p_tool_call=1.0)
    material += [agent.random_call() for _ in range(5)]
    while len(out) < n:
        base = material[int(rng.integers(0, len(material)))] or "x"
        k = int(rng.integers(0, 5))
        cut = int(rng.integers(0, len(base) + 1))
        if k == 0:
            out.append(base[:cut])
        elif k == 1:
            out.append(base[:cut] + base[cut + 1 :])
        elif k == 2:
            out.append(base[:cut] + base[cut:cut + 1] * 3 + base[cut + 1 :])
        elif k == 3:
            out.append(base + base[cut:])
        else:
            out.append(base[:cut] + env.action_space.sample() + base[cut:])
    return out[:n]


def check_conformance(
    env_id: str | Callable[..., gym.Env],
    *,
    env_kwargs: dict[str, Any] | None = None,
    expert_seeds: tuple[int, ...] = DEFAULT_EXPERT_SEEDS,
    n_fuzz: int = DEFAULT_FUZZ_ACTIONS,
    n_random_episodes: int = DEFAULT_RANDOM_EPISODES,
    skip: tuple[str, ...] = (),
) -> ConformanceReport:
    """Run every conformance check on ``env_id`` and report (never raises for an env failure).

    Args:
        env_id: A registered id (``"arl_envs:"`` prefix allowed), or an env class or factory (any callable
            returning a new env; called with ``env_kwargs``), as PettingZoo's ``api_test`` takes an env: an env
            under development can be checked before it is registered.
        env_kwargs: Constructor kwargs.
        expert_seeds: Seeds on which the expert must succeed.
        n_fuzz: Number of fuzzed actions.
        n_random_episodes: Episodes of the random agent.
        skip: Names of checks to skip.

    Returns:
        The :class:`ConformanceReport`.

    Raises:
        TypeError: ``env_id`` is neither a ``str`` nor callable.
    """
    kwargs = dict(env_kwargs or {})
    if isinstance(env_id, str):
        name, factory = env_id, functools.partial(gym.make, env_id)
    elif callable(env_id):
        name, factory = getattr(env_id, "__qualname__", None) or repr(env_id), env_id
    else:
        raise TypeError(f"check_conformance takes an env id, class or factory, got {type(env_id).__name__}")
    report = ConformanceReport(name)

    def make() -> gym.Env:
        return factory(**kwargs)

    checks: list[tuple[str, Callable[[], None]]] = [
        ("gymnasium_check_env", lambda: _check_gymnasium(make)),
        ("contract_hooks", lambda: _check_contract_hooks(make)),
        ("api_misuse", lambda: _check_api_misuse(make)),
        ("determinism", lambda: _check_determinism(make)),
        ("reset_sequence", lambda: _check_reset_sequence(make)),
        ("expert_solves", lambda: _check_expert(make, expert_seeds)),
        ("random_agent", lambda: _check_random(make, n_random_episodes)),
        ("fuzz", lambda: _check_fuzz(make, n_fuzz)),
        ("close_twice", lambda: _check_close_twice(make)),
        ("process_state", lambda: _check_process_state(make)),
        ("snapshot", lambda: check_snapshot(make)),
    ]
    for name, fn in checks:
        if name in skip:
            continue
        start = time.perf_counter()
        try:
            fn()
            report.results.append(CheckResult(name, True, seconds=time.perf_counter() - start))
        except _Skipped as why:
            report.results.append(CheckResult(name, True, f"skipped: {why}", time.perf_counter() - start))
        except Exception as exc:  # a check failing is data for the report
            msg = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, AssertionError):
                msg += "\n" + traceback.format_exc(limit=6)
            report.results.append(CheckResult(name, False, msg, time.perf_counter() - start))
    return report


def assert_conformance(env_id: str | Callable[..., gym.Env], **kwargs: Any) -> ConformanceReport:
    """:func:`check_conformance`, raising :class:`ConformanceError` if any check fails."""
    report = check_conformance(env_id, **kwargs)
    if not report.passed:
        raise ConformanceError(report.summary())
    return report


def _check_gymnasium(make: Callable[[], gym.Env]) -> None:
    from gymnasium.utils.env_checker import check_env

    env = make()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


def _check_contract_hooks(make: Callable[[], gym.Env]) -> None:
    env = make()
    try:
        found = sealed_overrides(type(env.unwrapped))
    finally:
        env.close()
    assert not found, (f"{', '.join(found)} overridden: AgentEnv alone defines reset/step/_parse; use the hooks "
                       "(parse_action, _reset_info, _step_info, Transition.truncated/info)")


def _check_api_misuse(make: Callable[[], gym.Env]) -> None:
    env = make()
    raw = env.unwrapped
    try:
        try:
            raw.step("hello")
        except ResetNeeded:
            pass
        else:
            raise AssertionError("step before reset did not raise ResetNeeded")
        raw.reset(seed=0)
        for bad in (123, None, b"bytes", ["list"]):
            try:
                raw.step(bad)  # type: ignore[arg-type]
            except InvalidActionType:
                pass
            else:
                raise AssertionError(f"step({bad!r}) did not raise InvalidActionType")
        assert isinstance(raw, AgentEnv), "env is not an AgentEnv"
    finally:
        env.close()


def _play_fixed(make: Callable[[], gym.Env], seed: int, actions: list[str]) -> list[tuple[Any, ...]]:
    env = make()
    try:
        obs, info = env.reset(seed=seed)
        trace: list[tuple[Any, ...]] = [(obs, _strip_timing(info))]
        for a in actions:
            obs, r, term, trunc, info = env.step(a)
            trace.append((obs, r, term, trunc, _strip_timing(info)))
            if term or trunc:
                obs, info = env.reset()
                trace.append((obs, _strip_timing(info)))
        return trace
    finally:
        env.close()


def _check_determinism(make: Callable[[], gym.Env]) -> None:
    # Build an action sequence from a first run: random actions, expert actions, malformed ones.
    env = make()
    try:
        env.reset(seed=7)
        rand = RandomAgent(env, seed=3)
        expert = env_has_expert(env)
        actions: list[str] = []
        for i in range(6):
            a = env.unwrapped.expert_action() if i % 3 == 2 and expert else rand.act("", {})
            actions.append(a)
            *_, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
    finally:
        env.close()
    t1 = _play_fixed(make, 7, actions)
    t2 = _play_fixed(make, 7, actions)
    assert len(t1) == len(t2), "different trace lengths under the same seed"
    for i, (a, b) in enumerate(zip(t1, t2)):
        assert _equal(a, b), f"step {i} differs under the same seed and actions:\n{a!r}\n!=\n{b!r}"


def _check_reset_sequence(make: Callable[[], gym.Env]) -> None:
    obs: list[list[str]] = []
    for _ in range(2):
        env = make()
        try:
            o1, _ = env.reset(seed=11)
            o2, _ = env.reset()
            o3, _ = env.reset()
            obs.append([o1, o2, o3])
        finally:
            env.close()
    assert obs[0] == obs[1], "reset(seed=s) followed by reset() is not deterministic"


def _check_expert(make: Callable[[], gym.Env], seeds: tuple[int, ...]) -> None:
    env = make()
    try:
        if not env_has_expert(env):
            raise _Skipped("the env has no expert (has_expert=False)")
        failures = []
        for seed in seeds:
            ep = run_episode(env, ExpertAgent(env), seed=seed)
            for i, a in enumerate(ep.actions):
                assert_step_invariants(
                    env, (ep.observations[i + 1], ep.rewards[i], i == ep.steps - 1 and ep.terminated,
                          i == ep.steps - 1 and ep.truncated, ep.infos[i + 1])
                )
            if not ep.success:
                failures.append(f"seed {seed}: expert failed after {ep.steps} steps; last obs: {ep.observations[-1][:300]!r}")
        assert not failures, "; ".join(failures)
    finally:
        env.close()


def _check_random(make: Callable[[], gym.Env], episodes: int) -> None:
    env = make()
    try:
        for seed in range(episodes):
            agent = RandomAgent(env, seed=seed)
            obs, info = env.reset(seed=100 + seed)
            missing = [k for k in RESET_INFO_KEYS if k not in info]
            assert not missing, f"reset info lacks {missing}"
            assert env.observation_space.contains(obs), "reset observation not in observation_space"
            for _ in range(200):
                res = env.step(agent.act(obs, info))
                assert_step_invariants(env, res)
                obs, info = res[0], res[4]
                if res[2] or res[3]:
                    break
            else:
                raise AssertionError("random agent's episode did not end within 200 steps")
    finally:
        env.close()


def _check_fuzz(make: Callable[[], gym.Env], n: int) -> None:
    env = make()
    try:
        env.reset(seed=5)
        for i, action in enumerate(fuzz_actions(env.unwrapped, n)):
            try:
                res = env.step(action)
            except Exception as exc:
                raise AssertionError(f"fuzz action #{i} {action[:80]!r} raised {type(exc).__name__}: {exc}") from exc
            assert_step_invariants(env, res)
            if res[2] or res[3]:
                env.reset()
    finally:
        env.close()


def _check_close_twice(make: Callable[[], gym.Env]) -> None:
    env = make()
    env.reset(seed=0)
    env.close()
    env.close()
    fresh = make()  # closing a never-reset env twice too
    fresh.close()
    fresh.close()


def _process_state() -> dict[str, Any]:
    """The process-wide state an episode must leave alone (CONTRACT.md, "Nothing process-wide changes")."""
    ctx = decimal.getcontext()
    return {
        "decimal context": (ctx.prec, ctx.rounding, ctx.Emin, ctx.Emax, ctx.capitals, ctx.clamp,
                            sorted(k.__name__ for k, on in ctx.traps.items() if on)),
        "random module state": random.getstate(),
        "NumPy global random state": [x.tolist() if isinstance(x, np.ndarray) else x for x in np.random.get_state()],
        "recursion limit": sys.getrecursionlimit(),
        "int string-conversion limit": getattr(sys, "get_int_max_str_digits", lambda: None)(),  # Python >= 3.10.7
    }


def _check_process_state(make: Callable[[], gym.Env], seed: int = 0, max_steps: int = 50) -> None:
    """State is read after a first reset (imports done: pettingzoo sets ``SDL_AUDIODRIVER`` when imported) and
    again after the episode and ``close()``. The decimal context and the global generators get distinctive values
    first, so that code which sets them to a fixed value of its own is seen as well; the caller's generator states
    are put back whatever happens."""
    saved_random, saved_numpy = random.getstate(), np.random.get_state()
    env = None
    try:
        env = make()
        env.reset(seed=seed)
        random.seed(0x5EED)
        np.random.seed(0x5EED)
        with decimal.localcontext(decimal.Context(prec=41, rounding=decimal.ROUND_05UP)):
            before, cwd, environ = _process_state(), os.getcwd(), dict(os.environ)
            agent = ExpertAgent(env) if env_has_expert(env) else RandomAgent(env, seed=seed)
            obs, info = env.reset(seed=seed + 1)
            for _ in range(max_steps):
                obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
                if terminated or truncated:
                    break
            env.close()
            after = _process_state()
        changed = [k for k in before if before[k] != after[k]]
        if os.getcwd() != cwd:
            changed.append(f"working directory ({cwd} -> {os.getcwd()})")
        keys = sorted({k for k, _ in set(environ.items()) ^ set(os.environ.items())})
        if keys:
            changed.append(f"os.environ ({', '.join(keys)})")
        assert not changed, f"an episode changed process-wide state: {'; '.join(changed)}"
    finally:
        random.setstate(saved_random)
        np.random.set_state(saved_numpy)
        if env is not None:
            env.close()


#: Turns the snapshot check plays from the same seed (reference episode length cap) and where it branches.
SNAPSHOT_CHECK_TURNS = 4
SNAPSHOT_CHECK_BRANCH_AT = 2


def check_snapshot(make: Callable[[], gym.Env], seed: int = 3) -> None:
    """Snapshot conformance: restore and fork reproduce the unbranched episode and forks are independent.

    1. Reference: ``reset(seed)``, up to :data:`SNAPSHOT_CHECK_TURNS` expert actions (random ones for an env
       without an expert), transcript kept.
    2. A second env: the first ``k`` of those actions, ``snapshot()``, two other actions (random, malformed),
       ``restore()``, the remaining actions: the transcript equals the reference's from turn ``k``.
    3. The snapshot through ``pickle`` (or a :class:`~arl_envs.core.snapshot.SnapshotError` saying why not),
       restored into a third env that is running another episode: same transcript.
    4. ``fork(env, 3)`` of that third env: fork 1 takes a random action, fork 2 a malformed one, then fork 0 and
       the third env itself play the remaining actions: both give the reference transcript.

    Raises:
        AssertionError: A transcript differs (the message names the turn and the branch).
    """
    import pickle

    from arl_envs.core.snapshot import SnapshotError, fork

    def play(env: gym.Env, actions: list[str]) -> list[tuple[Any, ...]]:
        out = []
        for a in actions:
            obs, r, term, trunc, info = env.step(a)
            out.append((obs, r, term, trunc, _strip_timing(info)))
        return out

    def same(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]], where: str) -> None:
        assert len(got) == len(want), f"{where}: {len(got)} steps instead of {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            assert _equal(a, b), f"{where}: step {i} after the snapshot differs:\n{a!r}\n!=\n{b!r}"

    ref = make()
    try:
        ref.reset(seed=seed)
        expert = env_has_expert(ref)
        rand = RandomAgent(ref, seed=seed)
        actions: list[str] = []
        trace: list[tuple[Any, ...]] = []
        for _ in range(SNAPSHOT_CHECK_TURNS):
            a = ref.unwrapped.expert_action() if expert else rand.act("", {})
            actions.append(a)
            trace += play(ref, [a])
            if trace[-1][2] or trace[-1][3]:
                break
    finally:
        ref.close()
    k = min(SNAPSHOT_CHECK_BRANCH_AT, len(actions) - 1)
    rest, want = actions[k:], trace[k:]

    envs: list[gym.Env] = []
    try:
        env = make()
        envs.append(env)
        env.reset(seed=seed)
        play(env, actions[:k])
        snap = env.unwrapped.snapshot()
        assert snap.turn == k, f"snapshot.turn is {snap.turn}, the env's turn was {k}"
        other = [RandomAgent(env, seed=seed + 1).act("", {}), ""]
        for a in other:
            *_, term, trunc, _ = env.step(a)
            if term or trunc:
                break
        env.unwrapped.restore(snap)
        same(play(env, rest), want, "restore into the same env")
        env.close()  # before the next env starts, so a pooled backend (a warm JVM) can serve it

        try:
            snap2 = pickle.loads(pickle.dumps(snap))
        except SnapshotError:
            snap2 = snap  # the reason is in the message; the in-memory snapshot must still restore elsewhere
        second = make()
        envs.append(second)
        second.reset(seed=seed + 100)
        second.step(RandomAgent(second, seed=seed).act("", {}))
        second.unwrapped.restore(snap2)
        forks = fork(second, 3)
        envs += forks
        forks[1].step(RandomAgent(forks[1], seed=seed + 2).act("", {}))
        forks[2].step("")
        same(play(forks[0], rest), want, "fork 0 (forks 1 and 2 stepped differently)")
        same(play(second, rest), want, "restore into another env (then forked)")
    finally:
        for e in envs:
            e.close()
