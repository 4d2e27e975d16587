"""``arl/math.formal-v0``: theorem proving checked by a real proof assistant (Coq 8.16, in the sandbox)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from arl_envs.core.actions import TagFormat, TagTable
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.math.coq import CoqChecker, Lemma
from arl_envs.sandbox import check_backend

#: The shipped lemmas (arithmetic on nat, lists, logic), each with a reference proof checked by coqc in the tests.
LEMMAS_PATH = Path(__file__).parent / "data" / "coq_lemmas.json"
TOPICS = ("arithmetic", "lists", "logic")
#: Default CPU seconds per coqc run (the proof, then the statement check); the wall limit is 3x.
DEFAULT_CHECK_TIMEOUT_S = 20.0
#: Longest proof file accepted, characters (longer: refused with an observation, counts as an attempt).
MAX_PROOF_CHARS = 20_000
#: The native format: the whole file in the last ```coq (```v, ```Coq) fence.
COQ_TAGS = TagTable(
    (TagFormat("submit_proof", "coq", "proof", body="raw", fence=("coq", "v", "Coq"), fence_crlf=True,
               empty_error="the coq block is empty"),),
    missing="no ```coq block found: reply with the whole file in one fenced ```coq block",
)


@lru_cache(maxsize=4)
def load_lemmas(path: str = str(LEMMAS_PATH)) -> tuple[Lemma, ...]:
    """The lemmas of a JSON list file (fields of :class:`~arl_envs.envs.math.coq.Lemma`).

    Raises:
        TaskLoadError: The file is missing or malformed.
    """
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
        return tuple(Lemma(**row) for row in rows)
    except (OSError, ValueError, TypeError) as exc:
        raise TaskLoadError(f"cannot load Coq lemmas from {path}: {exc}") from exc


class SubmitProofArgs(BaseModel):
    """Arguments of the ``submit_proof`` tool."""

    proof: str = Field(description="The whole Coq file: the given imports, the theorem exactly as stated, its proof.")


SUBMIT_PROOF_TOOL = Tool(
    "submit_proof",
    "Submit a complete Coq file proving the theorem; Coq checks it and its messages come back.",
    SubmitProofArgs,
)


class FormalProofEnv(AgentEnv):
    """Prove a lemma in Coq; the proof assistant is the grader.

    Follows the setting of machine-checked theorem proving for LLM agents (miniF2F / CoqGym-style: the agent
    writes a proof script, the proof assistant's verdict is the reward, its error messages are the feedback;
    cf. "CoqGym", Yang & Deng, ICML 2019, and DeepSeek-Prover's whole-proof generation with compiler feedback).

    Description:
        One of the shipped lemmas (``data/coq_lemmas.json``: 78 lemmas on nat arithmetic, lists and logic, each
        with a reference proof) per episode. The agent writes the whole ``.v`` file: the given imports, the theorem
        exactly as stated, and a proof ending in ``Qed.``. The file is checked by ``coqc`` inside the sandbox
        (see :mod:`arl_envs.envs.math.coq`): a pre-check refuses every assumption-declaring command in any
        spelling (``Axiom(s)``, ``Conjecture(s)``, ``Parameter(s)``, ``Hypothesis``/``Hypotheses``,
        ``Variable(s)``, ``Context``, ``Declare ...``, ``Primitive``, modules), unfinished proofs (``Admitted``,
        ``admit``...), checker switches, notations, every command that reads or writes a file (string literals
        only in tactic messages), non-ASCII code and ``Require`` of non-stdlib modules; then Coq compiles the file,
        a separate file written by the env re-states the lemma in a clean environment, proves it with the
        submission's constant and runs ``Print Assumptions`` (its whole reply must be exactly ``Closed under the
        global context``), and ``coqchk`` re-checks the compiled file (no axiom of its own, nothing unsafe).
        Running out of memory is reported as memory (``coq_stage == "memory"``), not as time. Lean 4 is not
        supported: its toolchain is not installed on this project's machines.
    Observation:
        The lemma and the file skeleton; after a failed attempt, Coq's error message (clipped to 2,000 characters)
        or the reason for refusal, and the attempts left.
    Action:
        Native: a fenced ```` ```coq ```` block (the last one counts) holding the whole file. JSON:
        ``submit_proof(proof)``.
    Tools:
        ``submit_proof(proof: str)``.
    Rewards:
        ``task`` (weight 1): 1 when Coq accepts the whole file, the statement is unchanged and no axiom is used.
        ``format`` (weight 0.1): raw -1 per reply without a coq block.
    Episode end:
        Terminated on an accepted proof, after ``max_attempts`` rejected ones, or after more than
        ``max_invalid_actions`` (default 1) malformed replies. Truncated at ``max_turns`` (default
        ``max_attempts + max_invalid_actions``). A sandbox failure (or ``coqc`` missing from a Docker image)
        truncates with ``info["env_error"]``.
    Arguments:
        topic (None | "arithmetic" | "lists" | "logic", default None: all), max_attempts (default 3),
        check_timeout_s (CPU seconds per coqc run, default 20; wall limit 3x that), sandbox ("bwrap" | "docker"), sandbox_kwargs,
        lemmas_path (a JSON file of lemmas, default the shipped set), action_format, reward_weights, max_turns,
        max_invalid_actions, render_mode.
    Version history:
        v0: initial release.

    Raises:
        ValueError: Unknown ``topic`` or ``max_attempts < 1``.
        DependencyNotInstalled: ``coqc`` is missing (at the first ``reset``).
    """

    #: Snapshot (arl_envs.core.snapshot): each check runs coqc in a freshly reset sandbox, so the episode state is in
    #: this process; the checker handle and the read-only lemma table stay the target's own.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_checker", "lemmas", "_by_id")

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "format": 0.1}
    default_max_invalid_actions: ClassVar[int] = 1
    native_tags = COQ_TAGS

    def __init__(
        self,
        *,
        topic: str | None = None,
        max_attempts: int = 3,
        check_timeout_s: float = DEFAULT_CHECK_TIMEOUT_S,
        sandbox: str = "bwrap",
        sandbox_kwargs: dict[str, Any] | None = None,
        lemmas_path: str | None = None,
        max_turns: int | None = None,
        **kwargs: Any,
    ) -> None:
        if topic is not None and topic not in TOPICS:
            raise ValueError(f"topic must be one of {TOPICS} or None, got {topic!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        check_backend(sandbox, sandbox_kwargs)
        self.lemmas = tuple(
            lemma for lemma in load_lemmas(str(lemmas_path or LEMMAS_PATH)) if topic is None or lemma.topic == topic
        )
        if not self.lemmas:
            raise ValueError(f"no lemmas for topic {topic!r}")
        self._by_id = {lemma.id: lemma for lemma in self.lemmas}
        self.max_attempts = int(max_attempts)
        self.check_timeout_s = float(check_timeout_s)
        self.sandbox_backend = sandbox
        self.sandbox_kwargs = dict(sandbox_kwargs or {})
        invalid = kwargs.get("max_invalid_actions")
        invalid = self.default_max_invalid_actions if invalid is None else int(invalid)
        super().__init__(max_turns=max_turns if max_turns is not None else self.max_attempts + invalid, **kwargs)
        self.lemma: Lemma | None = None
        self.attempts = 0
        self._checker: CoqChecker | None = None

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [SUBMIT_PROOF_TOOL]

    def instructions(self) -> str:
        how = (
            "Reply with one fenced ```coq block holding the WHOLE file (imports, theorem, proof); the last block "
            "counts."
            if self.action_format == "native"
            else "Submit the whole file with the `submit_proof` tool.\n" + self.json_format_instructions()
        )
        return (
            "Prove the theorem in Coq 8.16. Keep the imports and the theorem statement exactly as given and finish "
            "the proof with Qed. Not accepted: Admitted, admit, Axiom, Parameter, Hypothesis, Variable, notations, "
            "Load/Redirect/Cd/Drop/Declare ML Module, Require of non-stdlib modules. Coq's error messages come back; "
            f"you have {self.max_attempts} attempt(s).\n{how}"
        )

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            self.lemma = self.lemmas[int(self.np_random.integers(0, len(self.lemmas)))]
        else:
            if task_id not in self._by_id:
                raise TaskLoadError(f"unknown lemma {task_id!r}; known: {sorted(self._by_id)[:10]}...")
            self.lemma = self._by_id[task_id]
        self.attempts = 0
        if self._checker is None:
            self._checker = CoqChecker(
                sandbox=self.sandbox_backend, sandbox_kwargs=self.sandbox_kwargs, timeout_s=self.check_timeout_s
            )
        lemma = self.lemma
        defs = f"\nIt uses these definitions (shipped as ArlDefs.v, already required below):\n{lemma.defs}\n" if lemma.defs else ""
        obs = (
            f"Theorem {lemma.id} ({lemma.topic}):\n  {lemma.statement}\n{defs}\n"
            f"Complete this file:\n```coq\n{lemma.skeleton()}```"
        )
        return lemma.id, obs

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        assert self.lemma is not None and self._checker is not None
        source = str(calls[0].arguments["proof"])
        self.attempts += 1
        if len(source) > MAX_PROOF_CHARS:
            stage, message, accepted, env_error = "precheck", f"The file is longer than {MAX_PROOF_CHARS} characters.", False, None
        else:
            out = self._checker.check(self.lemma, source)
            stage, message, accepted, env_error = out.stage, out.message, out.accepted, out.env_error
        info: dict[str, Any] = {"attempt": self.attempts, "coq_stage": stage}
        if env_error is not None:
            return Transition("The proof checker failed; this episode is not scored.", info=info, env_error=env_error)
        if accepted:
            return Transition(message, {"task": 1.0}, terminated=True, success=True, info=info)
        left = self.max_attempts - self.attempts
        if left <= 0:
            return Transition(f"{message}\nNo attempts left: the episode is over.", {}, True, False, info)
        return Transition(f"{message}\n{left} attempt(s) left; fix the proof and submit the whole file again.", info=info)

    def _expert_action(self) -> str:
        """The lemma's reference proof in the given skeleton."""
        return self.render_call("submit_proof", {"proof": self.lemma.skeleton(self.lemma.proof)})

    def _close(self) -> None:
        if self._checker is not None:
            self._checker.close()
            self._checker = None
