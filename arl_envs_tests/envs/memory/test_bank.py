"""arl/memory.bank-v1 (Memory-R1 setting): oracle ops, bounded bank, answers from the bank, rewards."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.agents import make_agent, run_episode
from arl_envs.envs.memory import bank as bank_mod
from arl_envs.envs.search import scoring
from arl_envs.testing import check_conformance

ENV_ID = "arl/memory.bank-v1"


def test_reuses_search_scoring() -> None:
    assert bank_mod.exact_match is scoring.exact_match and bank_mod.f1 is scoring.f1


@pytest.mark.parametrize("kwargs", [{}, {"n_people": 5, "n_sessions": 5, "n_questions": 6}])
def test_expert_solves_with_full_progress(kwargs: dict) -> None:
    env = gym.make(ENV_ID, **kwargs)
    try:
        for seed in range(8):
            ep = run_episode(env, make_agent("expert", env), seed=seed)
            assert ep.success
            progress = sum(i.get("reward_components", {}).get("progress", 0.0) for i in ep.infos)
            assert progress == pytest.approx(0.2 * env.unwrapped.n_sessions)
    finally:
        env.close()


def test_random_agent_fails() -> None:
    env = gym.make(ENV_ID)
    try:
        assert not any(run_episode(env, make_agent("random", env, seed=s), seed=s).success for s in range(10))
    finally:
        env.close()


def _play_until_questions(env, action_for_session) -> None:
    u = env.unwrapped
    while u.session < u.n_sessions:
        env.step(action_for_session(u))


def test_noop_everywhere_answers_nothing_and_scores_zero_progress() -> None:
    env = gym.make(ENV_ID)
    try:
        env.reset(seed=3)
        u = env.unwrapped
        _, r, *_ = env.step("noop()")
        assert r == 0.0  # session 1 always introduces facts
        _play_until_questions(env, lambda u: "noop()")
        total = 0.0
        while True:
            _, r, term, trunc, info = env.step(u.expert_action())  # reads the (empty) bank: "none"
            total += r
            if term or trunc:
                break
        assert not info["success"]
        golds = [g for _, g in u.scenario.questions]
        assert total == pytest.approx(golds.count("none") / len(golds))
    finally:
        env.close()


def test_deleting_true_fact_is_penalised() -> None:
    env = gym.make(ENV_ID)
    try:
        env.reset(seed=1)
        u = env.unwrapped
        env.step(u.expert_action())
        expert = u.expert_action()
        _, r_bad, *_ = env.step(expert + "\ndelete(0)")
        env.reset(seed=1)
        env.step(u.expert_action())
        _, r_good, *_ = env.step(u.expert_action())
        assert r_good > r_bad
    finally:
        env.close()


def test_bounded_bank_overflow_is_an_error_observation() -> None:
    env = gym.make(ENV_ID, max_entries=2, max_entry_chars=20)
    try:
        env.reset(seed=0)
        obs, r, term, trunc, info = env.step('add("a")\nadd("b")\nadd("c")\nadd("' + "x" * 30 + '")\ndelete(99)')
        assert len(info["bank_errors"]) == 3 and "full" in obs and "max_entry_chars" in obs and "no entry" in obs
        assert info["action_error"] is None and info["bank_size"] == 2 and not term
    finally:
        env.close()


def test_wrong_phase_call_is_a_format_error_and_f1_metric() -> None:
    env = gym.make(ENV_ID, metric="f1")
    try:
        env.reset(seed=2)
        _, r, term, _, info = env.step('answer("Oslo")')
        assert r < 0 and not term and info["reward_components"]["format"] < 0
        _play_until_questions(env, lambda u: u.expert_action())
        gold = env.unwrapped.scenario.questions[0][1]
        _, r, *_ , info = env.step(f'answer("{gold} and more words")')
        assert 0 < info["f1"] < 1 and info["em"] == 0.0 and r == pytest.approx(info["f1"] / 3)
    finally:
        env.close()


def test_same_seed_same_scenario_and_kwargs_validated() -> None:
    a, b = gym.make(ENV_ID), gym.make(ENV_ID)
    assert a.reset(seed=7)[0] == b.reset(seed=7)[0]
    assert a.reset(seed=8)[0] != b.reset(seed=7)[0]
    with pytest.raises(ValueError):
        gym.make(ENV_ID, n_people=1)
    with pytest.raises(ValueError):
        gym.make(ENV_ID, metric="bleu")


def test_conformance_json_format() -> None:
    report = check_conformance(ENV_ID, env_kwargs={"action_format": "json"}, n_fuzz=40)
    assert report.passed, report.summary()


def test_blind_dump_of_every_value_scores_no_progress() -> None:
    # A policy that ignores the dialogue and stores, for every person and attribute, every possible value
    # ("Ana Vask city: Lisbon Oslo Quito ...") must not earn `progress` (it earned the full 1.0 in session 1).
    env = gym.make(ENV_ID)
    try:
        for seed in range(3):
            obs, _ = env.reset(seed=seed)
            people = env.unwrapped.scenario.people
            entries = [f"{p} {a}: " + " ".join(spec[0]) for p in people for a, spec in bank_mod.ATTRIBUTES.items()]
            _, _, _, _, info = env.step("\n".join(f"add({e!r})" for e in entries))
            assert info["bank_errors"] == [] and info["bank_size"] == len(entries)
            assert info["reward_components"]["progress"] == 0.0
    finally:
        env.close()


def test_noop_padding_does_not_dilute_the_loss_of_true_facts() -> None:
    # Deleting true facts, then padding the reply with noop() calls, got back most of the progress it lost.
    env = gym.make(ENV_ID)
    u = env.unwrapped

    def progress(extra: str) -> float:
        env.reset(seed=1)
        env.step(u.expert_action())
        _, _, _, _, info = env.step(u.expert_action() + extra)
        return info["reward_components"]["progress"]

    try:
        deletes = "\n" + "\n".join(f"delete({i})" for i in range(2))
        assert progress(deletes) < progress("")
        assert progress(deletes + "\nnoop()" * 25) == progress(deletes)
    finally:
        env.close()


def test_escape_in_an_entry_is_read_the_same_under_any_warnings_filter() -> None:
    """``add("a\\;b")`` made the parser warn (invalid escape sequence) to stderr, and under ``-W error`` became a
    format error; it is now one entry either way, and no warning reaches the caller."""
    import warnings

    def bank_after(filter_: str) -> tuple[int, str | None, int]:
        env = gym.make(ENV_ID)
        try:
            env.reset(seed=0)
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter(filter_)
                _, _, _, _, info = env.step('add("price 5\\;6 dollars")')
            return info["bank_size"], info["action_error"], len(seen)
        finally:
            env.close()

    assert bank_after("always") == (1, None, 0)
    assert bank_after("error") == (1, None, 0)


def _cast_values(people: list[str]) -> list[str]:
    k = len(people)
    return [
        ", ".join(people) + ": " + ", ".join(spec[0][i : i + k])
        for spec in bank_mod.ATTRIBUTES.values()
        for i in range(0, len(spec[0]), k)
    ]


#: Entries that record nothing about one person: each claims several people and/or several values at once.
OVER_CLAIMS = {
    # "A B C: v1, v2, v3" for every value of every attribute (earned 33-50% of the expert's progress).
    "whole_cast_several_values": _cast_values,
    "whole_cast_one_value_each": lambda people: [
        f"{' and '.join(people)} all have {v}" for spec in bank_mod.ATTRIBUTES.values() for v in spec[0]
    ],
    "pairs_one_value_each": lambda people: [
        f"{a} / {b}: {v}" for i, a in enumerate(people) for b in people[i + 1 :]
        for v in bank_mod.ATTRIBUTES["city"][0] + bank_mod.ATTRIBUTES["job"][0]
    ],
    "one_person_three_values": lambda people: [
        f"{p}: " + ", ".join(spec[0][(i + j) % len(spec[0])] for j in range(3))
        for p in people for spec in bank_mod.ATTRIBUTES.values() for i in range(0, len(spec[0]), 3)
    ],
}


@pytest.mark.parametrize("name", sorted(OVER_CLAIMS))
def test_over_claiming_entries_earn_no_progress(name: str) -> None:
    """An entry is credited only for what it states about one person unambiguously: none of these records a fact."""
    env = gym.make(ENV_ID, max_entries=64)
    u = env.unwrapped
    try:
        for seed in range(6):
            env.reset(seed=seed)
            entries = OVER_CLAIMS[name](u.scenario.people)[: bank_mod.MAX_OPS_PER_TURN]
            _, _, _, _, info = env.step("\n".join(f"add({e!r})" for e in entries))
            assert info["bank_errors"] == [] and info["bank_size"] == len(entries)
            total = info["reward_components"]["progress"]
            while u.session < u.n_sessions:  # the claims stay: they would also "hold" changed facts
                _, _, _, _, info = env.step("noop()")
                total += info["reward_components"]["progress"]
            assert total == 0.0, (name, seed, total)
    finally:
        env.close()


def test_single_person_change_phrasing_is_credited() -> None:
    """Honest entries in the dialogue's own words ("moved from X to Y": the later value holds) keep full credit."""
    env = gym.make(ENV_ID)
    u = env.unwrapped
    try:
        for seed in range(6):
            env.reset(seed=seed)
            env.step(u.expert_action())
            while u.session < u.n_sessions:
                _, events = u.scenario.sessions[u.session]
                ops = []
                for ev in events:
                    holder = next((e for e in u.bank if ev.old and bank_mod._holds(e.text, ev.person, ev.old)), None)
                    if ev.kind == "change" and holder is not None:
                        ops.append(f"update({holder.id}, {f'{ev.person} changed {ev.attribute} from {ev.old} to {ev.value}'!r})")
                    else:
                        break
                else:
                    if ops:
                        _, _, _, _, info = env.step("\n".join(ops))
                        assert info["reward_components"]["progress"] == pytest.approx(0.2), (seed, ops)
                        continue
                env.step(u.expert_action())
    finally:
        env.close()


def _spread(ev, values: list[str]) -> list[str]:
    # Each entry names one person and one value: unambiguous on its own, a hedge only as a whole.
    return [f"{ev.person}: {v}" for v in values]


def _both_orders(ev, values: list[str]) -> list[str]:
    # Two values per entry, once in each order: whichever is true comes last in one of them.
    a, b = values[:2]
    return [f"{ev.person}: {a}, {b}", f"{ev.person}: {b}, {a}"]


@pytest.mark.parametrize("shape", [_spread, _both_orders])
def test_candidate_values_spread_over_entries_earn_no_progress(shape) -> None:
    """The bank holds a fact only when no entry holds another value of that person's attribute: candidate values
    spread over several entries (4 of 10 per fact earned 50-67% of the expert's progress) record nothing."""
    env = gym.make(ENV_ID, max_entries=64)
    u = env.unwrapped
    try:
        for seed in range(4):
            env.reset(seed=seed)
            events = u.scenario.sessions[0][1]
            entries = []
            for ev in events:  # the true value and a wrong one (the hedge's best case: it always contains the truth)
                wrong = next(v for v in bank_mod.ATTRIBUTES[ev.attribute][0] if v != ev.value)
                entries += shape(ev, [wrong, ev.value or ""])
            _, _, _, _, info = env.step("\n".join(f"add({e!r})" for e in entries[: bank_mod.MAX_OPS_PER_TURN]))
            assert info["bank_errors"] == [] and info["reward_components"]["progress"] == 0.0, (seed, info)
    finally:
        env.close()
