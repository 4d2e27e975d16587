"""arl/math.formal-v0: the shipped lemmas' reference proofs, the checker's refusals, and episodes through Coq."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.math.coq import CoqChecker, precheck, strip_comments
from arl_envs.envs.math.formal import TOPICS, load_lemmas

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed (apt-get install -y coq)")
LEMMAS = load_lemmas()
BY_ID = {lemma.id: lemma for lemma in LEMMAS}


def test_lemma_set_size_and_topics() -> None:
    assert len(LEMMAS) >= 50 and len(BY_ID) == len(LEMMAS)
    assert {lemma.topic for lemma in LEMMAS} == set(TOPICS)
    for lemma in LEMMAS:
        assert precheck(lemma, lemma.skeleton(lemma.proof)) is None, lemma.id


def test_every_reference_proof_checks_with_coqc(tmp_path: Path) -> None:
    """All reference proofs in ONE coqc run (union of the preludes, all shipped definitions): cheap enough for CI.

    Each proof in its own prelude, through the env's whole check, is what the conformance expert runs (seeds 0-4).
    """
    imports = sorted({line for x in LEMMAS for line in x.imports.splitlines() if line.startswith("Require")})
    head = "\n".join(imports) + "\nImport ListNotations.\n"
    defs = "\n".join(dict.fromkeys(x.defs for x in LEMMAS if x.defs))
    (tmp_path / "ArlDefs.v").write_text(head + defs + "\n")
    body = head + "Require Import ArlDefs.\n" + "".join(
        f"\nTheorem {x.id} : {x.statement}.\nProof.\n{x.proof}\nQed.\n" for x in LEMMAS
    )
    (tmp_path / "Submission.v").write_text(body)
    for name in ("ArlDefs.v", "Submission.v"):
        p = subprocess.run(["coqc", "-q", name], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert p.returncode == 0, (p.stdout + p.stderr)[-2000:]
    assert body.count("Qed.") == len(LEMMAS)


def test_strip_comments_nested_and_strings() -> None:
    assert strip_comments('a (* b (* c *) d *) e "(* s *)"').split() == ["a", "e", '"(*', 's', '*)"']


def test_precheck_sees_commands_after_a_string_inside_a_comment() -> None:
    # Coq lexes strings inside comments: `(* "(*" *)` is ONE closed comment and what follows is code, so the
    # pre-check must see the `Unset Guard Checking` / `Axiom` / `Declare ML Module` that follow it.
    lemma = BY_ID["add_comm"]
    for hidden in ("Unset Guard Checking.", "Axiom cheat : False.", 'Declare ML Module "x".', 'Load "x".'):
        source = f'(* "(*" *) {hidden} (* "*)" *)\n' + lemma.skeleton("  intros; apply Nat.add_comm.")
        reason = precheck(lemma, source)
        assert reason is not None and "is not allowed" in reason, (hidden, reason)
    assert strip_comments('(* "(*" *) Axiom c (* "*)" *) x').split() == ["Axiom", "c", "x"]


ADD_COMM = BY_ID["add_comm"]
CHEATS = {
    "admitted": ADD_COMM.skeleton("Admitted.").replace("Qed.\n", ""),
    "admit_tactic": ADD_COMM.skeleton("  admit."),
    "axiom": "Axiom cheat : forall n m : nat, n + m = m + n.\n" + ADD_COMM.skeleton("  exact cheat."),
    "parameter": "Parameter cheat : forall n m : nat, n + m = m + n.\n" + ADD_COMM.skeleton("  exact cheat."),
    "hypothesis_in_section": "Section S.\nHypothesis h : forall n m : nat, n + m = m + n.\n"
    + ADD_COMM.skeleton("  exact h.") + "End S.\n",
    "notation": 'Notation "x + y" := (x * y).\n' + ADD_COMM.skeleton("  intros; apply Nat.mul_comm."),
    "redefine_nat": "Inductive nat := O.\n" + ADD_COMM.skeleton("  reflexivity."),
    "unexpected_require": "Require Import Coq.Logic.Classical.\n" + ADD_COMM.skeleton("  intros; lia."),
    "from_require": "From Coq Require Import Lia.\n" + ADD_COMM.skeleton("  intros; lia."),
    "guard_off": "Unset Guard Checking.\n" + ADD_COMM.skeleton("  intros; lia."),
    "missing_statement": "Theorem other : True.\nProof. exact I. Qed.\n",
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_precheck_refuses_cheats(name: str) -> None:
    assert precheck(ADD_COMM, CHEATS[name]) is not None


@pytest.fixture(scope="module")
def checker() -> CoqChecker:
    c = CoqChecker()
    yield c
    c.close()


def test_changed_statement_fails_in_clean_check(checker: CoqChecker) -> None:
    weaker = "Theorem add_comm : forall n m : nat, n + m = n + m.\nProof. reflexivity. Qed.\n"
    out = checker.check(ADD_COMM, weaker)
    assert not out.accepted and out.stage == "statement"


def test_axiom_past_precheck_caught_by_print_assumptions(checker: CoqChecker) -> None:
    """The second line: an axiom that slipped past the lexical pre-check still fails (Print Assumptions)."""
    src = "Axiom cheat : forall n m : nat, n + m = m + n.\n" + ADD_COMM.skeleton("  exact cheat.")
    out = checker._check_in_sandbox(ADD_COMM, src)
    assert not out.accepted and out.stage == "assumptions" and "cheat" in out.message


def test_wrong_proof_returns_coq_error_and_retry_succeeds() -> None:
    env = gym.make("arl/math.formal-v0", max_attempts=2)
    try:
        env.reset(options={"task_id": "add_comm"})
        obs, r, term, trunc, info = env.step("```coq\n" + ADD_COMM.skeleton("  intros n m. reflexivity.") + "```")
        assert not term and r == 0 and info["coq_stage"] == "compile" and "Error" in obs
        obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
        assert term and info["success"] and r == 1.0
    finally:
        env.close()


def test_attempts_run_out() -> None:
    env = gym.make("arl/math.formal-v0", max_attempts=1)
    try:
        env.reset(options={"task_id": "add_comm"})
        _, r, term, _, info = env.step("```coq\n" + CHEATS["admitted"] + "```")
        assert term and not info["success"] and info["coq_stage"] == "precheck" and r == 0
    finally:
        env.close()


def test_topic_kwarg_and_unknown_task() -> None:
    env = gym.make("arl/math.formal-v0", topic="logic")
    try:
        for s in range(5):
            env.reset(seed=s)
            assert env.unwrapped.lemma.topic == "logic"
        with pytest.raises(TaskLoadError):
            env.reset(options={"task_id": "no_such_lemma"})
    finally:
        env.close()
    with pytest.raises(ValueError):
        gym.make("arl/math.formal-v0", topic="geometry")


def test_time_limit_is_a_timeout_not_a_crash() -> None:
    c = CoqChecker(timeout_s=1)
    try:
        src = (
            "Fixpoint slow (n : nat) : nat := match n with 0 => 0 | S k => slow k + slow k end.\n"
            + ADD_COMM.skeleton("  assert (slow 40 = 0) by (vm_compute; reflexivity). admit_free.")
        ).replace("admit_free.", "intros n m. apply plus_n_O.")
        out = c.check(ADD_COMM, src)
        assert not out.accepted and out.stage == "timeout" and out.env_error is None
    finally:
        c.close()


def test_conformance_native() -> None:
    """The conformance suite for this id (tagged domain-conformance: fewer fuzzed actions, each may run Coq)."""
    from arl_envs.testing import check_conformance

    report = check_conformance("arl/math.formal-v0", n_fuzz=40, n_random_episodes=3)
    assert report.passed, report.summary()
