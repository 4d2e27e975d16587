"""Checking Coq proof scripts in the sandbox: a lexical pre-check, then ``coqc`` twice (proof, then statement).

Used by :class:`arl_envs.envs.math.formal.FormalProofEnv`. The check of one submission:

1. **Pre-check** (no Coq run): comments removed, the file must declare ``Theorem <name> :`` (or ``Lemma``);
   commands that escape the proof's purpose are refused: unfinished proofs (``Admitted``, ``admit``,
   ``Admit Obligations``), new assumptions (``Axiom``, ``Parameter``, ``Hypothesis``, ``Variable``,
   ``Conjecture``, ``Context``), file and process access (``Load``, ``Redirect``, ``Cd``, ``Drop``,
   ``Declare ML Module``, ``Add LoadPath``, ``Extraction``), checker switches (``Unset Guard Checking``,
   ``bypass_check``), notations (``Notation``, ``Infix``), ``Require`` of anything outside
   :data:`ALLOWED_MODULES`, and (re)declarations of any identifier the statement uses (``nat``, ``eq``,
   ``plus``...).
2. **Compile** ``Submission.v`` (with the lemma's shipped definitions in ``ArlDefs.v``) in a fresh sandbox work
   directory, under a wall/CPU time limit.
3. **Statement and axioms**: the env writes ``ArlCheck.v`` AFTER step 2 (so nothing the submission wrote can
   replace it), which, in a clean environment (the submission is ``Require``-d, never imported, so none of its
   notations or scopes apply), re-states the lemma as given and proves it with ``exact Submission.<name>``
   (the statement the agent proved must be convertible to the given one), then ``Print Assumptions`` on it,
   which must answer ``Closed under the global context`` (no axioms, no ``Admitted``, no unsafe fixpoints).

The sandbox is the second line of defence: no network, read-only system files, a fresh work directory per check.
"""

from __future__ import annotations

import re
import shutil
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

from arl_envs.core.errors import DependencyNotInstalled

#: Stdlib modules a submission may ``Require`` (with or without the ``Coq.`` prefix), plus the shipped defs.
ALLOWED_MODULES = frozenset(
    {
        "List", "Lists.List", "Arith", "PeanoNat", "Arith.PeanoNat", "Lia", "micromega.Lia", "Bool", "Bool.Bool",
        "Setoid", "Setoids.Setoid", "Morphisms", "Classes.Morphisms", "Nat", "Init.Nat", "Peano", "Init.Peano",
        "ArithRing", "Ring", "Omega", "Wf_nat", "Arith.Wf_nat", "Compare_dec", "Arith.Compare_dec",
        "EqNat", "Arith.EqNat", "Le", "Lt", "Plus", "Mult", "Minus", "Gt", "Between", "Factorial", "Even",
        "Arith.Even", "ListDec", "Lists.ListDec", "ArlDefs",
    }
)
#: Words (whole, case-sensitive) refused anywhere outside comments, with the reason shown to the agent.
FORBIDDEN_WORDS: dict[str, str] = {
    "Admitted": "unfinished proofs are not accepted",
    "admit": "unfinished proofs are not accepted",
    "Admit": "unfinished proofs are not accepted",
    "give_up": "unfinished proofs are not accepted",
    "Abort": "unfinished proofs are not accepted",
    "Axiom": "new axioms are not allowed",
    "Axioms": "new axioms are not allowed",
    "Parameter": "new assumptions are not allowed",
    "Parameters": "new assumptions are not allowed",
    "Hypothesis": "new assumptions are not allowed",
    "Hypotheses": "new assumptions are not allowed",
    "Variable": "new assumptions are not allowed",
    "Variables": "new assumptions are not allowed",
    "Conjecture": "new assumptions are not allowed",
    "Context": "new assumptions are not allowed",
    "Load": "loading files is not allowed",
    "Redirect": "writing files is not allowed",
    "Cd": "changing directory is not allowed",
    "Drop": "leaving the Coq toplevel is not allowed",
    "Declare": "declaring ML modules and new grammar is not allowed",
    "LoadPath": "changing the load path is not allowed",
    "ML": "ML plugins are not allowed",
    "Extraction": "extraction (writes files) is not allowed",
    "Extract": "extraction (writes files) is not allowed",
    "Unset": "changing checker options is not allowed",
    "Checking": "changing checker options is not allowed",
    "bypass_check": "bypassing the checker is not allowed",
    "Notation": "notations are not allowed (they could disguise the statement)",
    "Infix": "notations are not allowed (they could disguise the statement)",
    "From": "only `Require Import <stdlib module>.` is allowed",
}
#: Identifiers nobody may (re)declare, beside those of the statement itself.
PROTECTED_NAMES = frozenset(
    {"nat", "O", "S", "eq", "list", "nil", "cons", "bool", "true", "false", "True", "False", "and", "or", "not",
     "ex", "iff", "le", "lt", "ge", "gt", "plus", "mult", "minus", "Nat", "List", "prod", "option", "Some", "None"}
)
_DECLARATION = re.compile(
    r"\b(Definition|Fixpoint|CoFixpoint|Inductive|CoInductive|Variant|Record|Structure|Class|Instance|Let|"
    r"Theorem|Lemma|Fact|Remark|Corollary|Proposition|Example|Function|Module|Canonical|Coercion|Ltac)\s+"
    r"(?:Type\s+)?([A-Za-z_][\w']*)"
)
_IDENT = re.compile(r"[A-Za-z_][\w']*")
_WORD = re.compile(r"[A-Za-z_][\w']*")
_REQUIRE = re.compile(r"\bRequire\b(.*?)\.(?=\s|$)", re.DOTALL)
#: Coq's reply to ``Print Assumptions`` for a proof that uses no axiom.
CLOSED = "Closed under the global context"
#: Characters of Coq's messages shown to the agent.
MAX_MESSAGE_CHARS = 2_000
#: Exit status of ``sh`` when the command is missing (coqc absent from the sandbox image).
COMMAND_NOT_FOUND = 127
#: Wall-clock limit of a coqc run, as a multiple of its CPU limit (``timeout_s``).
WALL_TIME_FACTOR = 3.0
#: Checks remembered per process (coqc is deterministic; timeouts and sandbox failures are never cached).
CACHE_SIZE = 1_024
#: Host config of ocamlfind (Coq 8.16 finds its plugins through findlib), copied into the work directory
#: because the sandbox shows no ``/etc/ocamlfind.conf``.
FINDLIB_CONF = "/etc/ocamlfind.conf"
_DEFAULT_FINDLIB = 'destdir="/usr/local/lib/ocaml"\npath="/usr/local/lib/ocaml:/usr/lib/ocaml:/usr/lib/ocaml/METAS"\n'


@dataclass(frozen=True)
class Lemma:
    """One shipped lemma.

    Attributes:
        id: The theorem's name (also the task id).
        topic: ``"arithmetic"``, ``"lists"`` or ``"logic"``.
        imports: ``Require Import`` lines the file starts with (may be empty).
        defs: Coq definitions the statement uses, shipped as ``ArlDefs.v`` (may be empty).
        statement: The proposition (without ``Theorem name :`` and the final dot).
        proof: A reference proof script (checked by ``coqc`` in the tests).
    """

    id: str
    topic: str
    imports: str
    defs: str
    statement: str
    proof: str

    def prelude(self) -> str:
        """The lines before the theorem: the imports and ``Require Import ArlDefs.`` when there are defs."""
        lines = [self.imports] if self.imports else []
        if self.defs:
            lines.append("Require Import ArlDefs.")
        return "\n".join(lines)

    def skeleton(self, proof: str = "  (* your proof *)") -> str:
        """The whole file with ``proof`` between ``Proof.`` and ``Qed.``."""
        head = self.prelude()
        return f"{head}\n\nTheorem {self.id} : {self.statement}.\nProof.\n{proof}\nQed.\n".lstrip("\n")

    def defs_file(self) -> str:
        """``ArlDefs.v`` (the imports, then the definitions)."""
        return f"{self.imports}\n{self.defs}\n" if self.imports else f"{self.defs}\n"

    def check_file(self) -> str:
        """``ArlCheck.v``: the statement as given, proved by the submission's constant, then its assumptions."""
        return (
            f"{self.prelude()}\nRequire Submission.\n"
            f"Theorem arl_statement_check : {self.statement}.\nProof. exact Submission.{self.id}. Qed.\n"
            f"Print Assumptions Submission.{self.id}.\n"
        )


@dataclass(frozen=True)
class CheckOutcome:
    """The verdict on one submission.

    Attributes:
        accepted: Coq accepted the file, the statement is unchanged and no axiom is used.
        stage: ``"precheck"``, ``"compile"``, ``"statement"``, ``"assumptions"``, ``"timeout"`` or ``"accepted"``.
        message: What the agent is told (Coq's error message, clipped, or the reason for refusal).
        env_error: An infrastructure failure (the check did not happen); None otherwise.
    """

    accepted: bool
    stage: str
    message: str
    env_error: str | None = None


def strip_comments(text: str) -> str:
    """``text`` with Coq comments (nested ``(* ... *)``) replaced by a space; string literals kept as they are.

    As in Coq's lexer, a string inside a comment is skipped whole, so ``(* "(*" *)`` is one closed comment.

    An unterminated comment swallows the rest (as in Coq, where it is then an error).
    """
    out: list[str] = []
    i, n, depth, in_string = 0, len(text), 0, False
    while i < n:
        two = text[i : i + 2]
        ch = text[i]
        if depth == 0 and in_string:
            out.append(ch)
            if ch == '"':
                if text[i + 1 : i + 2] == '"':
                    out.append('"')
                    i += 1
                else:
                    in_string = False
            i += 1
        elif two == "(*":
            depth += 1
            i += 2
        elif depth > 0 and two == "*)":
            depth -= 1
            i += 2
            if depth == 0:
                out.append(" ")
        elif depth > 0 and ch == '"':
            # Coq lexes strings inside comments too: a "(*" or "*)" in such a string does not count.
            i += 1
            while i < n:
                if text[i] == '"' and text[i + 1 : i + 2] == '"':
                    i += 2
                elif text[i] == '"':
                    i += 1
                    break
                else:
                    i += 1
        elif depth > 0:
            i += 1
        else:
            if ch == '"':
                in_string = True
            out.append(ch)
            i += 1
    return "".join(out)


def precheck(lemma: Lemma, source: str) -> str | None:
    """The reason ``source`` is refused without running Coq, or None when it may be compiled.

    See the module docstring for the rules.
    """
    code = strip_comments(source)
    for word in _WORD.findall(code):
        if word in FORBIDDEN_WORDS:
            return f"`{word}` is not allowed: {FORBIDDEN_WORDS[word]}"
    for m in _REQUIRE.finditer(code):
        for module in m.group(1).split():
            if module in ("Import", "Export"):
                continue
            name = module.removeprefix("Coq.")
            if name not in ALLOWED_MODULES:
                return f"`Require {module}` is not allowed; allowed modules: {', '.join(sorted(ALLOWED_MODULES))}"
    protected = (PROTECTED_NAMES | set(_IDENT.findall(lemma.statement)) | set(_IDENT.findall(lemma.defs))) - {
        lemma.id
    }
    declared_target = 0
    for m in _DECLARATION.finditer(code):
        kind, name = m.group(1), m.group(2)
        if name == lemma.id:
            if kind not in ("Theorem", "Lemma"):
                return f"`{lemma.id}` must be declared with `Theorem {lemma.id} : ...`"
            declared_target += 1
        elif name in protected:
            return f"redefining `{name}` is not allowed (the statement uses it)"
    if declared_target == 0:
        return f"the file must state `Theorem {lemma.id} : {lemma.statement}.` and prove it"
    if declared_target > 1:
        return f"`{lemma.id}` is declared more than once"
    return None


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 20] + "\n[... clipped ...]"


def _findlib_conf() -> str:
    try:
        with open(FINDLIB_CONF, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return _DEFAULT_FINDLIB


def _coqc(*files: str) -> str:
    # Relative names only: the work directory is the sandbox's current directory on every backend.
    compile_all = " && ".join(f"coqc -q {f}" for f in files)
    return f'OCAMLFIND_CONF="$PWD/.findlib.conf"; export OCAMLFIND_CONF; {compile_all}'


class CoqChecker:
    """Checks submissions for shipped lemmas in one sandbox (one per env).

    Args:
        sandbox: ``"bwrap"`` (default) or ``"docker"`` (its image must contain ``coqc``; otherwise every check
            is an ``env_error`` naming the missing command).
        sandbox_kwargs: Passed to :func:`arl_envs.sandbox.get_sandbox`.
        timeout_s: CPU seconds for each of the two ``coqc`` runs; the wall-clock limit is
            ``WALL_TIME_FACTOR`` times that, so a loaded machine does not turn a correct proof into a timeout.
        memory_mb: Memory limit of a run, MiB (Coq with ``Lia`` loaded needs about 250).

    Raises:
        DependencyNotInstalled: ``coqc`` is not on this machine's PATH (with the bwrap backend).
        SandboxUnavailable: The sandbox backend is missing.
    """

    _cache: ClassVar[OrderedDict[tuple[str, str, str, str], CheckOutcome]] = OrderedDict()

    def __init__(
        self,
        *,
        sandbox: str = "bwrap",
        sandbox_kwargs: dict[str, Any] | None = None,
        timeout_s: float = 20.0,
        memory_mb: int = 1024,
    ) -> None:
        from arl_envs.sandbox import Limits, get_sandbox

        if sandbox == "bwrap" and shutil.which("coqc") is None:
            raise DependencyNotInstalled("coqc not found: apt-get install -y coq (Coq 8.16; see .ci/system-deps)")
        kwargs = dict(sandbox_kwargs or {})
        kwargs.setdefault(
            "limits", Limits(wall_time_s=WALL_TIME_FACTOR * timeout_s, cpu_time_s=timeout_s, memory_mb=memory_mb)
        )
        self.timeout_s = float(timeout_s)
        self._sandbox = get_sandbox(sandbox, **kwargs)
        self._backend = sandbox

    def check(self, lemma: Lemma, source: str) -> CheckOutcome:
        """Check ``source`` (a whole ``.v`` file) as a proof of ``lemma``; see the module docstring."""
        reason = precheck(lemma, source)
        if reason is not None:
            return CheckOutcome(False, "precheck", f"Refused before running Coq: {reason}.")
        key = (self._backend, lemma.id, lemma.statement, source)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        outcome = self._check_in_sandbox(lemma, source)
        if outcome.stage != "timeout" and outcome.env_error is None:
            self._cache[key] = outcome
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return outcome

    def run_raw(self, files: dict[str, str], *names: str) -> Any:
        """Compile ``names`` (``.v`` files among ``files``) with coqc in a fresh work directory, no pre-check.

        For the security battery: it shows what the sandbox alone contains. Returns the :class:`ExecResult`.
        """
        self._sandbox.reset()
        return self._sandbox.run(_coqc(*names), files={".findlib.conf": _findlib_conf(), **files})

    def _check_in_sandbox(self, lemma: Lemma, source: str) -> CheckOutcome:
        files = {"Submission.v": source}
        names = ["Submission.v"]
        if lemma.defs:
            files["ArlDefs.v"] = lemma.defs_file()
            names.insert(0, "ArlDefs.v")
        first = self.run_raw(files, *names)
        bad = self._infrastructure(first)
        if bad is not None:
            return bad
        if first.timed_out or first.signal is not None:
            return CheckOutcome(False, "timeout", f"Coq ran out of time (limit {self.timeout_s:g} s of CPU; "
                                f"{first.describe()}).")
        if not first.ok:
            return CheckOutcome(False, "compile", "Coq rejected the file:\n" + _clip(first.stdout + first.stderr))
        # Written only now, so nothing the submission's compilation wrote can stand in for it.
        second = self._sandbox.run(_coqc("ArlCheck.v"), files={"ArlCheck.v": lemma.check_file()})
        bad = self._infrastructure(second)
        if bad is not None:
            return bad
        if second.timed_out or second.signal is not None:
            return CheckOutcome(False, "timeout", f"Checking the statement ran out of time (limit {self.timeout_s:g} s of CPU).")
        if not second.ok:
            return CheckOutcome(
                False,
                "statement",
                f"Coq accepted the file, but `{lemma.id}` does not prove the given statement "
                f"`{lemma.statement}`:\n" + _clip(second.stdout + second.stderr),
            )
        if CLOSED not in second.stdout:
            return CheckOutcome(
                False, "assumptions", f"`{lemma.id}` depends on assumptions:\n" + _clip(second.stdout)
            )
        return CheckOutcome(True, "accepted", "Coq accepted the proof: the statement is proved with no axioms.")

    def _infrastructure(self, result: Any) -> CheckOutcome | None:
        if result.sandbox_error is not None:
            return CheckOutcome(False, "error", "The sandbox failed.", env_error=result.sandbox_error)
        if result.exit_code == COMMAND_NOT_FOUND and "coqc" in result.stderr:
            return CheckOutcome(False, "error", "coqc is missing in the sandbox.", env_error=f"coqc not found in the "
                                f"{self._backend} sandbox (install coq in its image): {result.stderr.strip()[:200]}")
        return None

    def close(self) -> None:
        """Close the sandbox (idempotent)."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
