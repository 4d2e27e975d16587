"""arl/math.formal-v0: no assumption, file access or spoofed checker output earns a proof's reward.

Every Coq 8.16 command that declares an assumption (whatever its spelling or locality), and every command that
names a file, is refused by the pre-check; the assumption-declaring ones also compile with the real ``coqc`` and are
then caught, with the pre-check skipped, by the structural checks (the exact ``Print Assumptions`` reply and the
parsed ``coqchk`` context summary). Running out of memory is reported as memory.
"""

from __future__ import annotations

import shutil

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.envs.math.coq import CoqChecker, parse_coqchk_summary, precheck
from arl_envs.envs.math.formal import load_lemmas
from arl_envs_tests.sandbox.conftest import bwrap_skip_reason

pytestmark = [
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed (apt-get install -y coq)"),
    pytest.mark.skipif(bwrap_skip_reason() is not None, reason=str(bwrap_skip_reason())),
]
ADD_COMM = {lemma.id: lemma for lemma in load_lemmas()}["add_comm"]
P = "forall n m : nat, n + m = m + n"
THM = f"Theorem add_comm : {P}.\n"
#: The reproduction of the attack: an axiom whose binder names spell the accepted reply of Print Assumptions.
SPOOF = (
    "Conjectures cheat : forall (P Closed under the global context : Prop),\n"
    "  (Closed -> under -> the -> global -> context -> P).\n"
    + THM + "Proof. destruct (cheat False True True True True True I I I I I). Qed.\n"
)
#: Each form makes Coq 8.16 accept ``add_comm`` (or the file) with an assumption in it (checked below with coqc).
ASSUMPTION_FORMS = {
    "spoofed_print_assumptions": SPOOF,
    "axiom": f"Axiom c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "axioms": f"Axioms c d : {P}.\n{THM}Proof. exact c. Qed.\n",
    "conjecture": f"Conjecture c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "conjectures": f"Conjectures c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "parameter": f"Parameter c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "parameters": f"Parameters c d : {P}.\n{THM}Proof. exact c. Qed.\n",
    "hypothesis_toplevel": f"Hypothesis c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "hypotheses_toplevel": f"Hypotheses c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "variable_toplevel": f"Variable c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "variables_toplevel": f"Variables c d : {P}.\n{THM}Proof. exact c. Qed.\n",
    "context_toplevel": f"Context (c : {P}).\n{THM}Proof. exact c. Qed.\n",
    "attribute_local_axiom": f"#[local] Axiom c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "local_parameter": f"Local Parameter c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "global_axiom": f"Global Axiom c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "polymorphic_axiom": f"Polymorphic Axiom c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "declare_instance": f"Class K := k : {P}.\nDeclare Instance c : K.\n{THM}Proof. exact k. Qed.\n",
    "declare_module": f"Module Type T. Parameter c : {P}. End T.\nDeclare Module M : T.\n{THM}Proof. exact M.c. Qed.\n",
    "admitted_lemma": f"Lemma c : {P}.\nProof. Admitted.\n{THM}Proof. exact c. Qed.\n",
    "give_up_admitted": f"Lemma c : {P}.\nProof. intros. give_up. Admitted.\n{THM}Proof. exact c. Qed.\n",
    "admitted_instance": f"Class K := k : {P}.\nInstance c : K. Admitted.\n{THM}Proof. exact k. Qed.\n",
    "program_admit_obligations": "Require Import Program.\n"
    f"Program Definition c : {P} := _.\nAdmit Obligations.\n{THM}Proof. exact c. Qed.\n",
    "unset_guard_checking": "Unset Guard Checking.\nFixpoint f (n : nat) : False := f n.\n"
    f"{THM}Proof. destruct (f 0). Qed.\n",
    "bypass_guard": "#[bypass_check(guard)] Fixpoint f (n : nat) : False := f n.\n"
    f"{THM}Proof. destruct (f 0). Qed.\n",
    "bypass_positivity": "#[bypass_check(positivity)] Inductive B := b : (B -> False) -> B.\n"
    "Definition nb (x : B) : False := match x with b h => h x end.\n"
    f"{THM}Proof. destruct (nb (b nb)). Qed.\n",
    "unset_positivity_checking": "Unset Positivity Checking.\nInductive B := b : (B -> False) -> B.\n"
    "Definition nb (x : B) : False := match x with b h => h x end.\n"
    f"{THM}Proof. destruct (nb (b nb)). Qed.\n",
    "unset_universe_checking": "Require Import PeanoNat.\nUnset Universe Checking.\nDefinition U : Set := Type.\n"
    f"{THM}Proof. pose (u := U). intros; apply Nat.add_comm. Qed.\n",
    "bypass_universes": "Require Import PeanoNat.\n#[bypass_check(universes)] Definition U : Set := Type.\n"
    f"{THM}Proof. pose (u := U). intros; apply Nat.add_comm. Qed.\n",
    # Not used by the theorem (Print Assumptions is closed): only the check of the whole compiled file sees it.
    "primitive_unused": f"Require Import PeanoNat.\nPrimitive myint := #int63_type.\n{THM}"
    "Proof. intros; apply Nat.add_comm. Qed.\n",
    "axiom_unused": f"Require Import PeanoNat.\nAxiom c : False.\n{THM}Proof. intros; apply Nat.add_comm. Qed.\n",
}
#: Lexical disguises of an assumption command; each must be refused before Coq runs.
DISGUISES = {
    "nbsp_before_keyword": f"\u00a0Axiom c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "unicode_letter_glued": f"Definition \u00e9 := 0.\nAxiom c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "zero_width_inside": f"Ax\u200biom c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "comment_glued": f"(* x *)Axiom(* y *) c : {P}.\n{THM}Proof. exact c. Qed.\n",
    "string_in_comment": f'(* "(*" *) Conjectures c : {P}. (* "*)" *)\n{THM}Proof. exact c. Qed.\n',
    "fail_wrapper": f"Fail Fail Axiom c : {P}.\n{THM}Proof. intros; lia. Qed.\n",
    "module_functor_argument": f"Module Type T. End T.\nModule F (X : T).\n{THM}Proof. Abort.\nEnd F.\n" + THM
    + "Proof. Abort.\n",
    "include": f"Module Type T. End T.\nInclude T.\n{THM}Proof. Abort.\n",
    "register": f"Register nat as num.nat.type.\n{THM}Proof. Abort.\n",
    "definitional_uip": f"Set Definitional UIP.\n{THM}Proof. Abort.\n",
}
#: Every Coq command that reads or writes a file or directory: refused before Coq runs.
FILE_COMMANDS = {
    "print_universes_file": 'Print Universes "pwn.txt".',
    "print_sorted_universes_file": 'Print Sorted Universes "pwn.txt".',
    "print_universes_subgraph_file": 'Print Universes Subgraph (nat) "pwn.txt".',
    "redirect": 'Redirect "pwn" Print nat.',
    "extraction_file": 'Extraction "pwn" nat.',
    "separate_extraction": "Separate Extraction nat.",
    "recursive_extraction": "Recursive Extraction nat.",
    "extraction_library": "Extraction Library Datatypes.",
    "recursive_extraction_library": "Recursive Extraction Library Datatypes.",
    "show_extraction": "Show Extraction.",
    "extraction_output_directory": 'Set Extraction Output Directory "/tmp".',
    "extract_constant": 'Extract Constant plus => "( + )".',
    "load": 'Load "/etc/passwd".',
    "load_verbose": 'Load Verbose "x".',
    "cd": 'Cd "/".',
    "add_loadpath": 'Add LoadPath "/" as Root.',
    "add_rec_loadpath": 'Add Rec LoadPath "/" as Root.',
    "add_ml_path": 'Add ML Path "/".',
    "declare_ml_module": 'Declare ML Module "coq-core.plugins.ltac".',
    "locate_file": 'Locate File "passwd".',
    "require_from_path": 'From "/tmp" Require Import x.',
    "require_string": 'Require "/tmp/x".',
    "native_profile_file": 'Set NativeCompute Profile Filename "pwn".',
    "comments_command": 'Comments "x".',
}


@pytest.mark.parametrize("name", sorted(ASSUMPTION_FORMS) + sorted(DISGUISES))
def test_precheck_refuses_every_assumption_form(name: str) -> None:
    source = ASSUMPTION_FORMS.get(name) or DISGUISES[name]
    assert precheck(ADD_COMM, source) is not None


@pytest.mark.parametrize("name", sorted(FILE_COMMANDS))
def test_precheck_refuses_every_file_command(name: str) -> None:
    source = FILE_COMMANDS[name] + "\n" + ADD_COMM.skeleton(ADD_COMM.proof)
    reason = precheck(ADD_COMM, source)
    assert reason is not None and "not allowed" in reason, reason


def test_honest_strings_and_reference_proofs_still_pass() -> None:
    body = '  Set Warnings "-deprecated". intros n m. idtac "go". try fail 0 "no". apply Nat.add_comm.'
    assert precheck(ADD_COMM, ADD_COMM.skeleton(body)) is None
    assert precheck(ADD_COMM, "(* comments may say Axiom, \u00e9 and \"f\" *)\n" + ADD_COMM.skeleton(ADD_COMM.proof)) is None


@pytest.fixture(scope="module")
def checker() -> CoqChecker:
    c = CoqChecker(timeout_s=20)
    yield c
    c.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ASSUMPTION_FORMS))
def test_structural_check_alone_refuses_every_assumption_form(checker: CoqChecker, name: str) -> None:
    """The pre-check skipped: Coq compiles the file (the form is real), and the assumption checks refuse it."""
    out = checker._check_in_sandbox(ADD_COMM, ASSUMPTION_FORMS[name])
    assert out.env_error is None
    assert out.stage == "assumptions" and not out.accepted, out


@pytest.mark.slow
def test_print_universes_writes_a_file_without_the_precheck(checker: CoqChecker) -> None:
    """What the pre-check refuses is real: Coq writes the file (inside the sandbox's work directory)."""
    res = checker.run_raw({"A.v": 'Print Universes "pwn.txt".\n'}, "A.v")
    assert res.ok, res.describe()
    listing = checker._sandbox.run("ls")  # the work directory persists until the next check
    assert "pwn.txt" in listing.stdout.split()


@pytest.mark.slow
def test_spoofed_assumptions_score_nothing_in_the_env() -> None:
    env = gym.make("arl/math.formal-v0", max_attempts=1)
    try:
        for seed in range(3):
            env.reset(seed=seed)
            lemma = env.unwrapped.lemma
            src = SPOOF.replace(THM, f"Theorem {lemma.id} : {lemma.statement}.\n")
            _, reward, term, _, info = env.step("```coq\n" + src + "```")
            assert term and not info["success"] and reward == 0.0
    finally:
        env.close()


def test_coqchk_summary_parser_structure() -> None:
    good = (
        "CONTEXT SUMMARY\n===============\n\n* Theory: Set is predicative\n  \n* Axioms:\n    Coq.ssr.x\n    A.b\n  \n"
        "* Constants/Inductives relying on type-in-type: <none>\n  \n"
        "* Constants/Inductives relying on unsafe (co)fixpoints: <none>\n  \n"
        "* Inductives whose positivity is assumed: <none>\n  \n"
    )
    parsed = parse_coqchk_summary(good)
    assert parsed is not None and parsed["Axioms"] == ["Coq.ssr.x", "A.b"]
    assert parse_coqchk_summary("") is None
    assert parse_coqchk_summary(good.replace("    A.b\n", "    A.b : Closed under\n")) is None
    assert parse_coqchk_summary(good.replace("* Inductives whose positivity is assumed: <none>\n", "")) is None


@pytest.mark.slow
def test_out_of_memory_is_reported_as_memory() -> None:
    c = CoqChecker(timeout_s=20, memory_mb=300)
    try:
        src = (
            "Require Import List.\n"
            "Definition big := Eval vm_compute in List.length (List.repeat tt 30000000).\n"
            + ADD_COMM.skeleton(ADD_COMM.proof)
        )
        out = c.check(ADD_COMM, src)
        assert not out.accepted and out.env_error is None
        assert out.stage == "memory" and "memory" in out.message and "time" not in out.message, out
    finally:
        c.close()
