"""Checking Coq proof scripts in the sandbox: a lexical pre-check, ``coqc`` twice (proof, then statement), ``coqchk``.

Used by :class:`arl_envs.envs.math.formal.FormalProofEnv`. The check of one submission:

1. **Pre-check** (no Coq run): comments removed; outside comments the file must be ASCII (no Unicode look-alikes
   or separators that Coq's lexer and this one could split differently) and must declare ``Theorem <name> :`` (or
   ``Lemma``). Words are ASCII identifiers (``[A-Za-z_][A-Za-z0-9_']*``; any other character ends a word), so a
   forbidden word is seen wherever Coq could read it as a keyword. Refused, whatever the locality prefix
   (``Local``, ``Global``, ``Polymorphic``, ``#[local]``...): every command that declares an assumption
   (``Axiom(s)``, ``Conjecture(s)``, ``Parameter(s)``, ``Hypothesis``/``Hypotheses``, ``Variable(s)``,
   ``Context``, ``Declare Instance``/``Declare Module``, ``Primitive``, ``Register``), unfinished proofs
   (``Admitted``, ``admit``, ``give_up``, ``Admit Obligations``, ``Abort``), modules, module types, functors and
   ``Include`` (functor arguments are assumptions), checker switches (``Unset ...``, ``bypass_check``,
   ``Checking``, ``Definitional UIP``), file and process access (``Load``, ``Redirect``, ``Cd``, ``Drop``,
   ``Declare ML Module``, ``Add (Rec) LoadPath``, ``Add ML Path``, every ``Extraction``/``Extract`` command),
   string literals anywhere but in a tactic message (``idtac "..."``, ``fail [n] "..."``) or ``Set Warnings`` /
   ``Set Default Goal Selector`` (every Coq command that reads or writes a file names it with a string:
   ``Print Universes "f"``, ``Load "f"``, ``Locate File "f"``...), notations (``Notation``, ``Infix``),
   ``Require`` of anything outside :data:`ALLOWED_MODULES` (and ``From``), and (re)declarations of any identifier
   the statement uses (``nat``, ``eq``, ``plus``...).
2. **Compile** ``Submission.v`` (with the lemma's shipped definitions in ``ArlDefs.v``) in a fresh sandbox work
   directory, under a wall/CPU time and memory limit (running out of memory is reported as memory, not time).
3. **Statement and axioms**: the env writes ``ArlCheck.v`` AFTER step 2 (so nothing the submission wrote can
   replace it), which, in a clean environment (the submission is ``Require``-d, never imported, so none of its
   notations or scopes apply), re-states the lemma as given and proves it with ``exact Submission.<name>``
   (the statement the agent proved must be convertible to the given one), then ``Print Assumptions`` on it.
   Its whole output must be exactly ``Closed under the global context``: any axiom, admitted lemma, unsafe
   fixpoint or type-in-type makes Coq print a list headed ``Axioms:`` instead, and a name the submission chose
   cannot turn that list into the one accepted reply.
4. **Kernel re-check**: ``coqchk -o -norec Submission`` re-checks the compiled ``Submission.vo`` with Coq's
   independent checker and prints its context summary (:func:`parse_coqchk_summary`); it must list no axiom
   outside the standard library (``Coq.*``) and nothing relying on type-in-type, unsafe (co)fixpoints or assumed
   positivity. This sees assumptions declared anywhere in the file, used by the theorem or not.

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
    "Conjectures": "new assumptions are not allowed",
    "Context": "new assumptions are not allowed",
    "Primitive": "declaring primitives is not allowed",
    "Register": "registering constants is not allowed",
    "Module": "modules, module types and functors are not allowed (their parameters are assumptions)",
    "Include": "modules, module types and functors are not allowed (their parameters are assumptions)",
    "UIP": "changing the logic is not allowed",
    "Load": "loading files is not allowed",
    "Redirect": "writing files is not allowed",
    "Cd": "changing directory is not allowed",
    "Drop": "leaving the Coq toplevel is not allowed",
    "Declare": "declarations without a proof (Declare Instance/Module) and ML modules are not allowed",
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
#: A word of the pre-check: ASCII only, so any other character ends it (conservative against Unicode tricks).
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")
#: A Coq string literal (``""`` is an escaped quote) in comment-free code.
_STRING = re.compile(r'"(?:[^"]|"")*"')
#: What may stand right before a string literal: a tactic's message or one of two harmless options.
_STRING_ALLOWED_AFTER = re.compile(
    r"(?<![A-Za-z0-9_'])(?:(?:idtac|fail|gfail)(?:\s+\d+)?|Set\s+Warnings|Set\s+Default\s+Goal\s+Selector)\s*\Z"
)
_REQUIRE = re.compile(r"\bRequire\b(.*?)\.(?=\s|$)", re.DOTALL)
#: Coq's whole reply to ``Print Assumptions`` for a proof that uses no axiom.
CLOSED = "Closed under the global context"
#: Header of ``coqchk -o``'s context summary, and its sections that must be empty (``<none>``).
COQCHK_HEADER = "CONTEXT SUMMARY"
COQCHK_MUST_BE_EMPTY = (
    "Constants/Inductives relying on type-in-type",
    "Constants/Inductives relying on unsafe (co)fixpoints",
    "Inductives whose positivity is assumed",
)
#: Axioms ``coqchk`` may list: the standard library's (``Coq.ssr.ssrunder`` declares some in every session).
STDLIB_PREFIX = "Coq."
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
        stage: ``"precheck"``, ``"compile"``, ``"statement"``, ``"assumptions"``, ``"kernel"`` (coqchk refused
            the compiled file), ``"timeout"``, ``"memory"``, ``"error"`` (infrastructure) or ``"accepted"``.
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
    odd = next((ch for ch in code if ord(ch) > 127), None)
    if odd is not None:
        return f"the non-ASCII character {odd!r} (U+{ord(odd):04X}) is not allowed outside comments"
    for word in _WORD.findall(code):
        if word in FORBIDDEN_WORDS:
            return f"`{word}` is not allowed: {FORBIDDEN_WORDS[word]}"
    for m in _STRING.finditer(code):
        if _STRING_ALLOWED_AFTER.search(code, max(0, m.start() - 64), m.start()) is None:
            return (
                f"the string {m.group(0)[:40]} is not allowed here: strings name files (Print Universes \"f\", "
                "Load, Locate File...); only `idtac \"...\"`, `fail \"...\"` and `Set Warnings \"...\"` take one"
            )
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


def _coqchk(library: str) -> str:
    # -norec: the library itself is re-checked, its dependencies (the stdlib, ArlDefs) are admitted; -o prints the
    # context summary that parse_coqchk_summary reads.
    return f'coqchk -silent -o -Q . "" -norec {library}'


def parse_coqchk_summary(text: str) -> dict[str, list[str]] | None:
    """The sections of ``coqchk -o``'s context summary: section title -> the names it lists.

    The summary is ``CONTEXT SUMMARY``, a rule, then sections ``* <title>: <none>`` or ``* <title>:`` followed by
    one indented qualified name per line (``* Theory: ...`` is a one-line section, returned with no names). Names
    are qualified identifiers, so nothing a submission names can add a line or a section. Returns None when the
    text does not have this structure (a failed check, or a format this parser does not know: refused).
    """
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == COQCHK_HEADER)
    except StopIteration:
        return None
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if not stripped or set(stripped) == {"="}:
            continue
        if line.startswith("* "):
            title, sep, rest = line[2:].partition(":")
            if not sep or title in sections:
                return None
            rest = rest.strip()
            current = None if (rest == "<none>" or title == "Theory") else []
            sections[title] = current if current is not None else []
            if rest and rest != "<none>" and title != "Theory":
                return None
        elif current is not None and line.startswith("  ") and re.fullmatch(r"[\w'.]+", stripped):
            current.append(stripped)
        else:
            return None
    if "Axioms" not in sections or any(title not in sections for title in COQCHK_MUST_BE_EMPTY):
        return None
    return sections


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
        limit = self._limit_hit(first, "Coq")
        if limit is not None:
            return limit
        if not first.ok:
            return CheckOutcome(False, "compile", "Coq rejected the file:\n" + _clip(first.stdout + first.stderr))
        # Written only now, so nothing the submission's compilation wrote can stand in for it.
        second = self._sandbox.run(_coqc("ArlCheck.v"), files={"ArlCheck.v": lemma.check_file()})
        bad = self._infrastructure(second)
        if bad is not None:
            return bad
        limit = self._limit_hit(second, "Checking the statement")
        if limit is not None:
            return limit
        if not second.ok:
            return CheckOutcome(
                False,
                "statement",
                f"Coq accepted the file, but `{lemma.id}` does not prove the given statement "
                f"`{lemma.statement}`:\n" + _clip(second.stdout + second.stderr),
            )
        if second.stdout.strip() != CLOSED:
            return CheckOutcome(
                False, "assumptions", f"`{lemma.id}` depends on assumptions:\n" + _clip(second.stdout)
            )
        third = self._sandbox.run(_coqchk("Submission"))
        bad = self._infrastructure(third, "coqchk")
        if bad is not None:
            return bad
        limit = self._limit_hit(third, "Re-checking the compiled file (coqchk)")
        if limit is not None:
            return limit
        # coqchk 8.16 prints the summary on stderr.
        report = third.stderr if COQCHK_HEADER in third.stderr else third.stdout
        summary = parse_coqchk_summary(report) if third.ok else None
        if summary is None:
            return CheckOutcome(
                False, "kernel", "Coq's independent checker (coqchk) rejected the compiled file:\n"
                + _clip(third.stdout + third.stderr)
            )
        unsafe = [f"{section}: {name}" for section, names in summary.items() for name in names
                  if section in COQCHK_MUST_BE_EMPTY or not name.startswith(STDLIB_PREFIX)]
        if unsafe:
            return CheckOutcome(
                False, "assumptions", "The compiled file declares assumptions (coqchk):\n" + _clip("\n".join(unsafe))
            )
        return CheckOutcome(True, "accepted", "Coq accepted the proof: the statement is proved with no axioms.")

    def _limit_hit(self, result: Any, what: str) -> CheckOutcome | None:
        """The outcome of a run killed by a limit: memory (the cgroup's OOM kill, or Coq's own ``Out of memory``
        under an address-space limit) is told apart from time (wall clock or CPU); None when no limit was hit."""
        if result.oom_killed or (not result.ok and "Out of memory" in result.stdout + result.stderr):
            mb = self._sandbox.limits.memory_mb
            return CheckOutcome(False, "memory", f"{what} ran out of memory (limit {mb} MiB; {result.describe()}).")
        if result.timed_out or result.signal is not None:
            return CheckOutcome(False, "timeout", f"{what} ran out of time (limit {self.timeout_s:g} s of CPU; "
                                f"{result.describe()}).")
        return None

    def _infrastructure(self, result: Any, command: str = "coqc") -> CheckOutcome | None:
        if result.sandbox_error is not None:
            return CheckOutcome(False, "error", "The sandbox failed.", env_error=result.sandbox_error)
        if result.exit_code == COMMAND_NOT_FOUND and command in result.stderr:
            return CheckOutcome(False, "error", f"{command} is missing in the sandbox.", env_error=f"{command} not "
                                f"found in the {self._backend} sandbox (install coq in its image): "
                                f"{result.stderr.strip()[:200]}")
        return None

    def close(self) -> None:
        """Close the sandbox (idempotent)."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
