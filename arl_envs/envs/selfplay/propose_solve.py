"""``arl/selfplay.propose-solve-v1``: propose a code-reasoning task, then solve it (the Absolute Zero setting)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from arl_envs.core.actions import ParseError, TagFormat, TagTable
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.selfplay.purity import check_program
from arl_envs.sandbox import check_backend

TASK_TYPES = ("deduction", "abduction", "induction")
#: Default solver attempts per proposal (AZR estimates learnability from n rollouts of the solver).
DEFAULT_K = 4
#: Default wall/CPU seconds of one sandboxed run.
DEFAULT_TIMEOUT_S = 5.0
#: Inputs an induction proposal needs (half shown as examples, half held out to check the solver's program).
MIN_INDUCTION_INPUTS = 4
MAX_INPUTS = 10
#: Set in every sandboxed run: Python's str hashing (and so set iteration order) is the same in every process.
FIXED_HASH_ENV = {"PYTHONHASHSEED": "0"}
#: ``PYTHONHASHSEED`` of the second proposal run and of the re-run: drawn per episode from 1..this, so an ``f``
#: whose output depends on str hashing (the order of a set of strings) differs between runs and is refused: with
#: one seed for every run, it passed every check and then gave an answer no solver can work out (a guess).
MAX_HASH_SEED = 4_294_967_295
#: Longest literal accepted, characters (programs: :data:`arl_envs.envs.selfplay.purity.MAX_PROGRAM_CHARS`).
MAX_LITERAL_CHARS = 1_000
#: Raw ``format`` part of an invalid proposal (AZR: -1 for programs that error, are non-deterministic or time out).
INVALID_PROPOSAL_PENALTY = -1.0
_PROGRAM_FENCE = ("python", "py", "")  # a ```python, ```py or unlabelled fence; other languages are skipped
#: The native formats (tags in any case): the proposer's program fence and <inputs>, both required (the last of
#: each counts); the solver's answer, a program fence for induction, else the last <answer>.
PROPOSE_TAGS = TagTable(
    (TagFormat("propose", "python", "program", body="code", fence=_PROGRAM_FENCE),
     TagFormat("propose", "inputs", "inputs", body="raw")),
    missing="a proposal needs a ```python block defining f and <inputs>[...]</inputs>",
    pick="all",
    ignore_case=True,
)
INDUCTION_TAGS = TagTable(
    (TagFormat("solve", "python", "answer", body="code", fence=_PROGRAM_FENCE),),
    missing="an induction answer is a ```python block defining f",
)
SOLVE_TAGS = TagTable(
    (TagFormat("solve", "answer", "answer", body="raw"),),
    missing="write your answer as <answer>a Python literal</answer>",
    ignore_case=True,
)

#: The scripted proposer's templates: (program, input generator name).
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("def f(x):\n    return sum(i * i for i in range(x))", "small_int"),
    ("def f(x):\n    a, b = 0, 1\n    for _ in range(x):\n        a, b = b, a + b\n    return a", "small_int"),
    (("def f(x):\n    steps = 0\n    while x != 1:\n        x = x // 2 if x % 2 == 0 else 3 * x + 1\n"
      "        steps += 1\n    return steps"), "pos_int"),
    ("def f(s):\n    return ''.join(sorted(set(s)))[::-1]", "word"),
    ("def f(s):\n    return sum(1 for c in s if c in 'aeiou')", "word"),
    ("def f(xs):\n    return sorted(x * 2 for x in xs if x % 2)", "int_list"),
    (("def f(xs):\n    best, cur = 0, 0\n    for x in xs:\n        cur = max(0, cur + x)\n"
      "        best = max(best, cur)\n    return best"), "int_list"),
    ("def f(x):\n    return int(str(x)[::-1]) + x % 7", "pos_int"),
    (("def f(s):\n    out = []\n    for c in s:\n        if out and out[-1][0] == c:\n            out[-1][1] += 1\n"
      "        else:\n            out.append([c, 1])\n    return ''.join(f'{c}{n}' for c, n in out)"), "word"),
    ("def f(xs):\n    from collections import Counter\n    c = Counter(xs)\n    return max(sorted(c), key=c.get)",
     "int_list"),
)
_WORDS = ("banana", "letter", "kayak", "moonbeam", "apple", "zigzag", "bookkeeper", "radar", "essence", "yellow")


def _gen_input(kind: str, rng: Any) -> Any:
    if kind == "small_int":
        return int(rng.integers(0, 15))
    if kind == "pos_int":
        return int(rng.integers(1, 60))
    if kind == "word":
        return _WORDS[int(rng.integers(0, len(_WORDS)))]
    return [int(v) for v in rng.integers(-6, 10, size=int(rng.integers(3, 7)))]


def parse_literal(text: str) -> tuple[bool, Any]:
    """``(True, value)`` for a Python literal (``ast.literal_eval``), else ``(False, None)``."""
    if len(text) > MAX_LITERAL_CHARS:
        return False, None
    try:
        return True, ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


@dataclass
class Proposal:
    """A validated proposal: the program, its inputs and their outputs (values, and reprs as printed)."""

    program: str
    inputs: list[Any]
    outputs: list[Any]
    input_reprs: list[str] = field(default_factory=list)
    output_reprs: list[str] = field(default_factory=list)
    #: The executor's printed outputs at proposal time (compared with the re-run at the end of the episode).
    stdout: str = ""


class ProposeArgs(BaseModel):
    """Arguments of ``propose``."""

    program: str = Field(description="Python source defining f(x) (pure, deterministic; no I/O imports).")
    inputs: str = Field(description="A Python list literal of inputs for f, e.g. '[3, 5]' (induction: at least 4).")


class SolveArgs(BaseModel):
    """Arguments of ``solve``."""

    answer: str = Field(description="Deduction: the output (a literal). Abduction: an input (a literal). "
                        "Induction: Python source defining f.")


PROPOSE_TOOL = Tool("propose", "Propose a task: a program f and inputs for it.", ProposeArgs)
SOLVE_TOOL = Tool("solve", "Answer the task (output, input or program, by task type).", SolveArgs)


class ProposeSolveEnv(AgentEnv):
    """Self-play code reasoning: the agent proposes a program and inputs, then solves the task it made.

    Follows Zhao et al., 2025, "Absolute Zero: Reinforced Self-play Reasoning with Zero Data" (LeapLabTHU/
    Absolute-Zero-Reasoner): one model proposes (program, input) tasks whose answers a Python executor computes,
    and solves them in three modes: deduction (predict the output), abduction (find an input giving the output)
    and induction (write the program from input/output pairs, checked on held-out inputs).

    Description:
        Turn 1, proposer: write ``f`` and a list of inputs for this episode's task type. The sandbox runs ``f`` on
        every input twice (time-limited, with ``PYTHONHASHSEED=0``, then with another seed, so an output that
        depends on str hashing, e.g. a set of strings' order, counts as non-deterministic; no imports beyond pure-computation modules, no
        I/O builtins); an error,
        a timeout, different outputs across the two runs, or an output that is not a Python literal makes the
        proposal invalid (episode over). Then the solver gets ``k`` attempts at the task (the same prompt each
        time, so attempts are independent samples): deduction shows ``f`` and the first input; abduction shows
        ``f`` and the first output; induction shows the first half of the input/output pairs (at least 4 inputs).
        With ``solver=callable(observation, info) -> str`` the callable makes the ``k`` attempts inside the
        proposer's step and the episode is one turn (so a trainer's own policy can fill both roles).
    Observation:
        The role's prompt; after a solver attempt, whether it was right, and the prompt again.
    Action:
        Proposer, native: a ```` ```python ```` block defining ``f`` and ``<inputs>[...]</inputs>``. Solver,
        native: ``<answer>literal</answer>`` (deduction, abduction) or a ```` ```python ```` block (induction).
        JSON: ``propose(program, inputs)`` / ``solve(answer)``.
    Tools:
        ``propose(program: str, inputs: str)``, ``solve(answer: str)``.
    Rewards:
        ``task`` (weight 1): solver correctness, raw 1/k per correct attempt (its sum is the solve rate).
        ``propose`` (weight 1): after the last attempt, the proposer's learnability ``1 - solve_rate`` when
        ``0 < solve_rate < 1``, else 0 (AZR eq. 4); ``f`` is re-run on its inputs after the last attempt and a
        different output cancels it (0, plus the -1 ``format`` penalty). ``format`` (weight 1): raw -1 for an
        invalid proposal (AZR's penalty) and for a malformed reply.
    Episode end:
        Terminated after the ``k``-th attempt (success: a valid proposal that was solved at least once), on an
        invalid proposal, or after more than ``max_invalid_actions`` (default 2) malformed replies. Truncated at
        ``max_turns`` (default ``1 + k + max_invalid_actions``) or on a sandbox failure (``info["env_error"]``).
    Arguments:
        task_types (subset of deduction/abduction/induction; the episode's type is drawn from the seed), k
        (default 4), solver ("self" | callable), timeout_s (per run, default 5), sandbox ("bwrap" | "docker"),
        sandbox_kwargs, action_format, reward_weights, max_turns, max_invalid_actions, render_mode.
    Version history:
        v1: current: ``f`` is re-run after the last attempt (a changed output cancels the propose reward),
        private attributes are refused, and runs use ``PYTHONHASHSEED=0`` (v0, retired: CHANGELOG.md).
    """

    #: Snapshot (arl_envs.core.snapshot): every program runs in a freshly reset sandbox, so the episode state is in this
    #: process; the sandbox handle stays the target's own.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_sandbox",)

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "propose": 1.0, "format": 1.0}
    default_max_invalid_actions: ClassVar[int] = 2

    def __init__(
        self,
        *,
        task_types: tuple[str, ...] | list[str] = TASK_TYPES,
        k: int = DEFAULT_K,
        solver: str | Callable[[str, dict[str, Any]], str] = "self",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sandbox: str = "bwrap",
        sandbox_kwargs: dict[str, Any] | None = None,
        max_turns: int | None = None,
        **kwargs: Any,
    ) -> None:
        bad = [t for t in task_types if t not in TASK_TYPES]
        if bad or not task_types:
            raise ValueError(f"task_types must be a non-empty subset of {TASK_TYPES}, got {list(task_types)}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if solver != "self" and not callable(solver):
            raise TypeError("solver must be 'self' or a callable(observation: str, info: dict) -> str")
        self.task_types, self.k, self.solver = tuple(task_types), int(k), solver
        self.timeout_s = float(timeout_s)
        check_backend(sandbox, sandbox_kwargs)
        self.sandbox_backend, self.sandbox_kwargs = sandbox, dict(sandbox_kwargs or {})
        invalid = kwargs.get("max_invalid_actions")
        invalid = self.default_max_invalid_actions if invalid is None else int(invalid)
        super().__init__(max_turns=max_turns if max_turns is not None else 1 + self.k + invalid, **kwargs)
        self._sandbox: Any = None
        self.task_type = self.task_types[0]
        self.proposal: Proposal | None = None
        self.attempts = 0
        self.successes = 0
        self._template: tuple[str, list[Any]] | None = None

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [PROPOSE_TOOL, SOLVE_TOOL]

    def instructions(self) -> str:
        if self.action_format == "native":
            how = (
                "As proposer, write a ```python block defining f(x) and the inputs as <inputs>[...]</inputs>. As "
                "solver, write <answer>...</answer> (a Python literal) for deduction/abduction, or a ```python block "
                "defining f for induction."
            )
        else:
            how = "Use `propose` as proposer and `solve` as solver.\n" + self.json_format_instructions()
        return (
            "Self-play code reasoning. First you PROPOSE a task: a small deterministic Python function f(x) of one "
            "argument (pure computation: imports only of math/itertools/functools/collections/string/re/heapq/"
            "bisect/operator/fractions/statistics; no I/O, no printing) and a list of inputs. It is run in a sandbox "
            f"for {self.timeout_s:g} s at most. Then you SOLVE it {self.k} times. Proposals are rewarded for being "
            f"neither trivial nor impossible for the solver.\n{how}"
        )

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is not None:
            if task_id not in self.task_types:
                raise TaskLoadError(f"task ids are task types {self.task_types}, got {task_id!r}")
            self.task_type = task_id
        else:
            self.task_type = self.task_types[int(self.np_random.integers(0, len(self.task_types)))]
        self.proposal, self.attempts, self.successes = None, 0, 0
        program, kind = TEMPLATES[int(self.np_random.integers(0, len(TEMPLATES)))]
        n = MIN_INDUCTION_INPUTS + 2 if self.task_type == "induction" else 1
        inputs: list[Any] = []
        for _ in range(n * 4):
            value = _gen_input(kind, self.np_random)
            if value not in inputs:
                inputs.append(value)
            if len(inputs) == n:
                break
        self._template = (program, inputs)
        if self._sandbox is None:
            from arl_envs.sandbox import Limits, get_sandbox

            kw = dict(self.sandbox_kwargs)
            kw.setdefault("limits", Limits(wall_time_s=self.timeout_s, cpu_time_s=self.timeout_s, memory_mb=256))
            # Fixed str hashing, so set order cannot make f differ between runs (it passed the double run by
            # chance, then made a correct solver answer look wrong at random: learnability from noise).
            kw["env"] = {**dict(kw.get("env") or {}), **FIXED_HASH_ENV}
            self._sandbox = get_sandbox(self.sandbox_backend, **kw)
        need = f" with at least {MIN_INDUCTION_INPUTS} distinct inputs" if self.task_type == "induction" else ""
        article = "an" if self.task_type[0] in "aeiou" else "a"
        return self.task_type, f"Role: PROPOSER. Propose {article} {self.task_type} task{need}."

    def _parse_native(self, text: str) -> list[ToolCall]:
        if self.proposal is None:
            return PROPOSE_TAGS.parse(text)
        return (INDUCTION_TAGS if self.task_type == "induction" else SOLVE_TAGS).parse(text)

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        call = calls[0]
        expected = "propose" if self.proposal is None else "solve"
        if call.name != expected:
            return Transition(f"It is the {'proposer' if expected == 'propose' else 'solver'}'s turn: call "
                              f"`{expected}`.\n{self._prompt()}", {"format": -1.0})
        if call.name == "propose":
            return self._propose(str(call.arguments["program"]), str(call.arguments["inputs"]))
        return self._solve(str(call.arguments["answer"]))

    # ----------------------------------------------------------------- proposer
    def _run(self, program: str, inputs_repr: str, hash_seed: int = 0) -> Any:
        """Run ``f`` on the inputs in a fresh work directory, with ``PYTHONHASHSEED=hash_seed``."""
        script = f"{program}\n\n__inputs = {inputs_repr}\nprint(repr([f(__x) for __x in __inputs]))\n"
        # A fresh work directory per run: a file written by one run must not change the next one's output.
        self._sandbox.reset()
        if hash_seed == 0:
            return self._sandbox.run(code=script)
        python = self._sandbox.python
        return self._sandbox.run(["env", f"PYTHONHASHSEED={hash_seed}", python, ".arl_f.py"], files={".arl_f.py": script})

    def _other_hash_seed(self) -> int:
        return int(self.np_random.integers(1, MAX_HASH_SEED, endpoint=True))

    def _propose(self, program: str, inputs_text: str) -> Transition:
        reason = check_program(program)
        ok, inputs = parse_literal(inputs_text)
        if reason is None and (not ok or not isinstance(inputs, list) or not inputs or len(inputs) > MAX_INPUTS):
            reason = f"inputs must be a Python list literal of 1-{MAX_INPUTS} inputs"
        if reason is None and self.task_type == "induction" and len({repr(x) for x in inputs}) < MIN_INDUCTION_INPUTS:
            reason = f"induction needs at least {MIN_INDUCTION_INPUTS} distinct inputs"
        outputs: list[Any] = []
        if reason is None:
            runs = [self._run(program, repr(inputs)), self._run(program, repr(inputs), self._other_hash_seed())]
            for r in runs:
                if r.sandbox_error is not None:
                    return Transition("The sandbox failed; this episode is not scored.", env_error=r.sandbox_error)
            if not runs[0].ok:
                reason = f"running f failed ({runs[0].describe()}): {runs[0].stderr.strip()[-500:]}"
            elif runs[0].stdout != runs[1].stdout:
                reason = ("f is not deterministic: two runs gave different outputs (they use different str hash "
                          "seeds, so f's output may not depend on the order of a set of strings)")
            else:
                ok, outputs = parse_literal(runs[0].stdout)
                if not ok or not isinstance(outputs, list) or len(outputs) != len(inputs):
                    reason = "f's outputs must be Python literals (numbers, strings, lists, tuples, dicts, sets...)"
        if reason is not None:
            return Transition(f"Invalid proposal: {reason}. The episode is over.",
                              {"format": INVALID_PROPOSAL_PENALTY}, terminated=True, success=False,
                              info={"proposal_valid": False, "proposal_error": reason})
        self.proposal = Proposal(program, inputs, outputs, [repr(x) for x in inputs], [repr(y) for y in outputs],
                                 runs[0].stdout)
        info: dict[str, Any] = {"proposal_valid": True, "task_type": self.task_type}
        if self.solver == "self":
            return Transition(f"Proposal accepted.\n\n{self._prompt()}", info=info)
        # External solver: k attempts now, inside this step.
        assert callable(self.solver)
        parts: dict[str, float] = {}
        results = []
        for i in range(self.k):
            reply = self.solver(self._prompt(), {"role": "solver", "task_type": self.task_type, "attempt": i + 1})
            try:
                answer = self._parse_native(str(reply))[0].arguments["answer"]
                correct, error = self._check(str(answer))
            except ParseError:
                correct, error = False, None
            if error is not None:
                return Transition("The sandbox failed; this episode is not scored.", env_error=error)
            results.append(correct)
        self.successes = sum(results)
        info.update({"solver_results": results, "solve_rate": self.successes / self.k})
        error = self._score_proposal(parts, info)
        if error is not None:
            return Transition("The sandbox failed; this episode is not scored.", env_error=error)
        return Transition(f"Proposal accepted; the solver was right {self.successes}/{self.k} times.", parts,
                          terminated=True, success=self.successes > 0, info=info)

    # ----------------------------------------------------------------- solver
    def _prompt(self) -> str:
        p = self.proposal
        if p is None:
            return f"Role: PROPOSER. Propose a {self.task_type} task."
        head = f"Role: SOLVER ({self.task_type}), attempt {self.attempts + 1} of {self.k}."
        if self.task_type == "deduction":
            return f"{head}\n```python\n{p.program}\n```\nWhat is f({p.input_reprs[0]})? Answer with a Python literal."
        if self.task_type == "abduction":
            return (f"{head}\n```python\n{p.program}\n```\nGive an input x such that f(x) == {p.output_reprs[0]}. "
                    "Answer with a Python literal.")
        shown = len(p.inputs) // 2
        pairs = "\n".join(f"f({a}) == {b}" for a, b in zip(p.input_reprs[:shown], p.output_reprs[:shown]))
        return f"{head}\nWrite a function f consistent with these examples (it is also checked on others):\n{pairs}"

    def _check(self, answer: str) -> tuple[bool, str | None]:
        """``(correct, sandbox error)`` of one solver answer."""
        p = self.proposal
        assert p is not None
        if self.task_type == "deduction":
            ok, value = parse_literal(answer)
            return ok and repr(value) == p.output_reprs[0] and value == p.outputs[0], None
        if self.task_type == "abduction":
            ok, value = parse_literal(answer)
            if not ok:
                return False, None
            res = self._run(p.program, repr([value]))
        else:
            if check_program(answer) is not None:
                return False, None
            held = p.input_reprs[len(p.inputs) // 2:]
            res = self._run(answer, "[" + ", ".join(held) + "]")
        if res.sandbox_error is not None:
            return False, res.sandbox_error
        if not res.ok:
            return False, None
        ok, outs = parse_literal(res.stdout)
        want = [p.outputs[0]] if self.task_type == "abduction" else p.outputs[len(p.inputs) // 2:]
        return ok and repr(outs) == repr(want), None

    def _learnability(self) -> float:
        rate = self.successes / self.k
        return 1.0 - rate if 0.0 < rate < 1.0 else 0.0

    def _score_proposal(self, parts: dict[str, float], info: dict[str, Any]) -> str | None:
        """Set the ``propose`` part after the last attempt, re-running ``f`` on the proposal's inputs first.

        The two runs at proposal time are back to back; a program that reads the clock (or any state the static
        check missed) can agree with itself then and change later. The re-run, after every attempt, must print
        exactly what the first run printed, else the proposal counts as invalid after all (AZR's determinism
        rule): ``propose`` 0 and the invalid-proposal ``format`` penalty, ``info["proposal_recheck"] = False``.

        Returns:
            The sandbox error of the re-run, if the sandbox failed (the caller reports ``env_error``), else None.
        """
        p = self.proposal
        assert p is not None
        res = self._run(p.program, "[" + ", ".join(p.input_reprs) + "]", self._other_hash_seed())
        if res.sandbox_error is not None:
            return res.sandbox_error
        same = res.ok and res.stdout == p.stdout
        info["proposal_recheck"] = same
        if same:
            parts["propose"] = self._learnability()
        else:
            parts["propose"] = 0.0
            parts["format"] = parts.get("format", 0.0) + INVALID_PROPOSAL_PENALTY
            info["proposal_error"] = ("f is not deterministic: a re-run after solving gave different outputs"
                                      if res.ok else f"a re-run of f after solving failed ({res.describe()})")
        return None

    def _solve(self, answer: str) -> Transition:
        correct, error = self._check(answer)
        if error is not None:
            return Transition("The sandbox failed; this episode is not scored.", env_error=error)
        self.attempts += 1
        self.successes += int(correct)
        parts = {"task": (1.0 if correct else 0.0) / self.k}
        verdict = "Correct." if correct else "Incorrect."
        info = {"correct": correct, "attempt": self.attempts}
        if self.attempts >= self.k:
            info["solve_rate"] = self.successes / self.k
            error = self._score_proposal(parts, info)
            if error is not None:
                return Transition("The sandbox failed; this episode is not scored.", env_error=error)
            return Transition(f"{verdict} Solved {self.successes}/{self.k}; the episode is over.", parts,
                              terminated=True, success=self.successes > 0, info=info)
        return Transition(f"{verdict}\n\n{self._prompt()}", parts, info=info)

    # ----------------------------------------------------------------- rendering, expert, close
    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        if name == "propose":
            return PROPOSE_TAGS.format(name, arguments)
        return (INDUCTION_TAGS if self.task_type == "induction" else SOLVE_TAGS).format(name, arguments)

    def _expert_action(self) -> str:
        """Proposer: a template from the pool with seeded inputs. Solver: the answer the executor computed."""
        p = self.proposal
        if p is None:
            program, inputs = self._template
            return self.render_call("propose", {"program": program, "inputs": repr(inputs)})
        if self.task_type == "deduction":
            answer = p.output_reprs[0]
        elif self.task_type == "abduction":
            answer = p.input_reprs[0]
        else:
            answer = p.program
        return self.render_call("solve", {"answer": answer})

    def _close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
