"""``arl/code.functions-v0``: write a Python function (or program) for a spec, refine it on test feedback."""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from arl_envs.core.actions import ParseError, TagFormat, TagTable
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.code.feedback import SandboxHolder, render_results
from arl_envs.envs.code.generated import DIFFICULTIES, FAMILIES, MAX_SEED, generated_task, parse_generated_id
from arl_envs.envs.code.harness import UNCALIBRATED_CPU_S, Harness, HarnessRun, Job
from arl_envs.envs.code.tasks import CodeTask, load_humaneval, load_jsonl_tasks

#: Longest submitted code, characters.
MAX_CODE_CHARS = 32_000
#: The native "finish" marker: a line holding only this word.
SUBMIT_MARKER = "SUBMIT"
#: Datasets of functions-v0.
DATASETS = ("generated", "humaneval", "jsonl")
#: Calibrated CPU limits kept per process (LRU), tasks.
CALIBRATION_CACHE_SIZE = 4096

_FENCE_BLOCK = re.compile(r"```.*?(```|$)", re.DOTALL)
#: The native code block: the last ```python (```py, or unlabelled) fence; ``_parse_native`` adds the SUBMIT line.
CODE_TAGS = TagTable(
    (TagFormat("run_tests", "python", "code", body="code_rstrip", fence=("python", "py", ""),
               empty_error="your last ```python block is empty"),),
    missing="no ```python code block found: reply with your complete solution in a ```python ... ``` block, "
    f"or write {SUBMIT_MARKER} on its own line to finish",
)


class RunTestsArgs(BaseModel):
    """Arguments of ``run_tests``."""

    code: str = Field(
        max_length=MAX_CODE_CHARS,
        description="Your complete solution (the whole function with its imports, or the whole program).",
    )


class SubmitArgs(BaseModel):
    """Arguments of ``submit``."""

    code: str = Field(
        default="",
        max_length=MAX_CODE_CHARS,
        description="Final code; leave empty to submit the code you tested last.",
    )


RUN_TESTS_TOOL = Tool(
    "run_tests",
    "Run the visible tests on your complete solution and report which ones fail (input, expected, got, error). "
    "If every visible test passes, the episode ends and the same code is scored on the hidden tests.",
    RunTestsArgs,
)
SUBMIT_TOOL = Tool(
    "submit",
    "Finish now: the code (or the code you tested last) is scored on the hidden tests.",
    SubmitArgs,
)

_CALIBRATIONS: OrderedDict[str, list[float]] = OrderedDict()


def _cache_key(task: CodeTask) -> str:
    digest = hashlib.sha256(task.reference.encode()).hexdigest()[:16]
    return f"{task.task_id}#{digest}"


class FunctionsEnv(AgentEnv):
    """Write a Python function (or stdin/stdout program) for a spec; refine it with execution feedback.

    Description:
        Each episode is one task. Every submission runs the task's VISIBLE tests in a sandbox (the default
        bubblewrap backend; ``sandbox="docker"`` for Docker) through the code harness
        (:mod:`arl_envs.envs.code.runner`): results travel back over an authenticated channel the submitted code
        cannot write, return values are compared outside the submission's process with a strict type check,
        program output is compared exactly and in order, and CPU limits are calibrated per task from the
        reference solution (``max(0.5 s, 10 x reference)``, recorded in ``info["timing"]``). The score comes
        from a separate set of HIDDEN tests. Tasks: a generated training set (default; 13 parameterised
        families at difficulties 1-3, see :mod:`arl_envs.envs.code.generated`), HumanEval's 164 problems
        (``dataset="humaneval"``), or MBPP/HumanEval-form JSONL (``dataset="jsonl", path=...``).
    Observation:
        First: the spec (HumanEval: the signature and docstring), the number of visible and hidden tests and
        the answer format. After each submission: ``Visible tests: k/n passed.`` and, for each failing test,
        its input, the expected value/output, what the code returned/printed, and the error with a truncated
        traceback. Import errors (syntax errors, crashes at import) are shown once.
    Action:
        Native: the complete solution in a fenced ```python block (the last block counts) runs the tests; a
        line holding only ``SUBMIT`` finishes (with a block in the same reply, that block is submitted).
        JSON: ``run_tests(code)`` / ``submit(code="")``.
    Tools:
        ``run_tests(code: str)``, ``submit(code: str = "")``.
    Rewards:
        ``task`` (weight 1): fraction of hidden tests the final code passes, given when the episode ends (all
        visible tests pass, ``submit``, or the last turn's submission). ``progress`` (weight 0.1): the increase
        of the visible pass fraction over the best earlier submission (never negative; sums to at most 1).
        ``format`` (weight 0.1): raw -1 for a reply without a code block or ``SUBMIT``.
    Episode end:
        Terminated when every visible test passes (hidden tests are run on the same code), on ``submit``, or
        after more than ``max_invalid_actions`` (default 2) malformed replies; truncated after ``max_turns``
        (default 4), the last submission being scored on the hidden tests. A sandbox failure truncates the
        episode with ``info["env_error"]`` and no task reward (never scored as the agent's failure).
    Arguments:
        dataset ("generated" | "humaneval" | "jsonl", default "generated"), path (JSONL file for "jsonl"),
        difficulty (1-3 or None = drawn per episode; generated only), families (subset of the generated
        families), sandbox ("bwrap" | "docker"), sandbox_kwargs, action_format, reward_weights, max_turns,
        max_invalid_actions, render_mode.
    Version history:
        v0: initial release.
    """

    #: Snapshot (arl_envs.core.snapshot): the sandbox's work directory persists within an episode (files a submission
    #: wrote), so the snapshot replays the actions into a freshly reset sandbox.
    snapshot_mode: ClassVar[str] = "replay"

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = 4
    default_max_invalid_actions: ClassVar[int] = 2

    def __init__(
        self,
        *,
        dataset: str = "generated",
        path: str | None = None,
        difficulty: int | None = None,
        families: tuple[str, ...] | list[str] | None = None,
        sandbox: str = "bwrap",
        sandbox_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
        if difficulty is not None and difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {DIFFICULTIES} or None, got {difficulty!r}")
        fams = tuple(families) if families else tuple(FAMILIES)
        unknown = [f for f in fams if f not in FAMILIES]
        if unknown:
            raise ValueError(f"unknown families {unknown}; known: {sorted(FAMILIES)}")
        if dataset == "jsonl" and not path:
            raise ValueError('dataset="jsonl" needs path=<file.jsonl>')
        self.dataset = dataset
        self.difficulty = difficulty
        self.families = fams
        self.tasks: list[CodeTask] = []
        if dataset == "humaneval":
            self.tasks = load_humaneval()
        elif dataset == "jsonl":
            self.tasks = load_jsonl_tasks(str(path))
        self._by_id = {t.task_id: t for t in self.tasks}
        super().__init__(**kwargs)
        self._holder = SandboxHolder(sandbox, sandbox_kwargs)
        self.task: CodeTask | None = None
        self.best_visible = 0.0
        self.last_code = ""
        self.submissions = 0

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [RUN_TESTS_TOOL, SUBMIT_TOOL]

    def instructions(self) -> str:
        what = (
            "Write a complete Python program that reads standard input and prints to standard output"
            if self.task is not None and self.task.mode == "program"
            else "Write the requested Python function (the whole function, with any imports it needs)"
        )
        if self.action_format == "native":
            how = (
                "Reply with your complete solution in a ```python code block; the last block of your reply is "
                "run against the visible tests and you will see which tests fail. Fix your code and reply with "
                f"the whole corrected solution again. To stop early, write {SUBMIT_MARKER} on a line of its own "
                "(a code block in the same reply is then your final code)."
            )
        else:
            how = "Use run_tests to test a complete solution and submit to finish.\n" + self.json_format_instructions()
        return (
            f"{what}. Visible tests check each submission; hidden tests decide your score. The episode ends when "
            f"all visible tests pass, when you submit, or after {self.max_turns} turns.\n{how}"
        )

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        self.task = self._task_from_id(task_id) if task_id is not None else self._new_task()
        self.best_visible = 0.0
        self.last_code = ""
        self.submissions = 0
        self._holder.new_episode()
        return self.task.task_id, self._first_observation(self.task)

    def _reset_info(self) -> dict[str, Any]:
        assert self.task is not None
        return {
            "dataset": self.dataset,
            "mode": self.task.mode,
            "difficulty": self.task.difficulty,
            "n_visible": len(self.task.visible),
            "n_hidden": len(self.task.hidden),
        }

    def _parse_native(self, text: str) -> list[ToolCall]:
        last = CODE_TAGS.match(text)
        outside = _FENCE_BLOCK.sub("", text)
        if any(line.strip() == SUBMIT_MARKER for line in outside.splitlines()):
            code = last.call.arguments["code"] if last is not None else ""
            if len(code) > MAX_CODE_CHARS:
                raise ParseError(f"your code is {len(code)} characters long; the limit is {MAX_CODE_CHARS}")
            return [ToolCall("submit", {"code": code})]
        if last is None:
            raise ParseError(CODE_TAGS.missing)
        code = last.checked().arguments["code"]
        if len(code) > MAX_CODE_CHARS:
            raise ParseError(f"your code is {len(code)} characters long; the limit is {MAX_CODE_CHARS}")
        return [ToolCall("run_tests", {"code": code})]

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        assert self.task is not None
        call = calls[0]
        if call.name == "submit":
            return self._submit(str(call.arguments.get("code") or ""))
        return self._run_tests(str(call.arguments["code"]))

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        code = str(arguments.get("code", ""))
        if name == "run_tests":
            return CODE_TAGS.format(name, arguments)
        if name == "submit":
            return (CODE_TAGS.format("run_tests", arguments) + "\n" if code else "") + SUBMIT_MARKER
        raise ValueError(f"unknown tool {name!r}")

    def _expert_action(self) -> str:
        if not self.task.reference:
            return self.render_call("submit", {"code": ""})
        return self.render_call("run_tests", {"code": self.task.reference})

    def _close(self) -> None:
        self._holder.close()

    # ----------------------------------------------------------------- tasks
    def _new_task(self) -> CodeTask:
        if self.dataset == "generated":
            family = self.families[int(self.np_random.integers(0, len(self.families)))]
            difficulty = self.difficulty or DIFFICULTIES[int(self.np_random.integers(0, len(DIFFICULTIES)))]
            return generated_task(family, difficulty, int(self.np_random.integers(0, MAX_SEED)))
        return self.tasks[int(self.np_random.integers(0, len(self.tasks)))]

    def _task_from_id(self, task_id: str) -> CodeTask:
        if self.dataset == "generated":
            family, difficulty, seed = parse_generated_id(task_id)
            return generated_task(family, difficulty, seed)
        try:
            return self._by_id[task_id]
        except KeyError:
            raise TaskLoadError(f"no task {task_id!r} in dataset {self.dataset!r}") from None

    def _first_observation(self, task: CodeTask) -> str:
        counts = (
            f"{len(task.visible)} visible test(s) check each submission; {len(task.hidden)} hidden test(s) "
            "decide your score."
        )
        # the answer format is in the instructions, which the base class puts before this text
        if task.source == "generated":
            return f"{task.prompt}\n\n{counts}"
        if task.source == "humaneval" or task.prelude:
            return (
                f"Complete the following Python function `{task.entry_point}`; write the whole function "
                f"(signature included).\n\n```python\n{task.prompt.rstrip()}\n```\n\n{counts}"
            )
        return f"{task.prompt}\n\n{counts}"

    # ----------------------------------------------------------------- harness
    def _jobs(self, code: str, *, visible: bool, hidden: bool, gate_hidden: bool) -> tuple[list[Job], Job | None]:
        """Jobs for this submission and the calibration job when the task's limits are not cached yet."""
        task = self.task
        assert task is not None
        n_vis = len(task.visible)
        all_cases = list(task.visible + task.hidden)
        cached = _CALIBRATIONS.get(_cache_key(task))
        calibration = None
        if cached is None and task.reference:
            calibration = self._job(task.reference, all_cases, cpu=[0.0] * len(all_cases))
        jobs: list[Job] = []
        for use, cases, offset in ((visible, task.visible, 0), (hidden, task.hidden, n_vis)):
            if not use:
                continue
            idx = list(range(offset, offset + len(cases)))
            if cached is not None:
                job = self._job(code, list(cases), cpu=[cached[i] for i in idx])
            elif calibration is not None:
                job = self._job(code, list(cases), cal=idx)
            else:
                job = self._job(code, list(cases), cpu=[UNCALIBRATED_CPU_S] * len(cases))
            if offset and visible and gate_hidden:
                job.only_if_passed = 0
            jobs.append(job)
        return jobs, calibration

    def _job(self, code: str, cases: list[Any], cpu: list[float] | None = None, cal: list[int] | None = None) -> Job:
        task = self.task
        assert task is not None
        return Job(
            source=code,
            cases=cases,
            cpu_limits_s=cpu,
            calibration_index=cal,
            mode="program" if task.mode == "program" else "module",
            entry_point=task.entry_point,
            prelude=task.prelude,
            test_prelude=task.test_prelude,
        )

    def _execute(self, jobs: list[Job], calibration: Job | None) -> tuple[HarnessRun | None, dict[str, Any]]:
        timing: dict[str, Any] = {}
        try:
            harness = Harness(self._holder.get())
        except Exception as exc:  # noqa: BLE001 - SandboxUnavailable and friends: infrastructure
            return None, {"env_error": f"{type(exc).__name__}: {exc}"}
        run = harness.run(jobs, calibration=calibration)
        timing["sandbox_s"] = round(run.duration_s, 4)
        if run.sandbox_cpu_s is not None:
            timing["sandbox_cpu_s"] = round(run.sandbox_cpu_s, 4)
        if run.calibration is not None:
            assert self.task is not None
            _CALIBRATIONS[_cache_key(self.task)] = run.calibration.cpu_limits_s
            while len(_CALIBRATIONS) > CALIBRATION_CACHE_SIZE:
                _CALIBRATIONS.popitem(last=False)
            timing["reference_cpu_s"] = run.calibration.reference_cpu_s
            timing["reference_passed"] = run.calibration.reference_passed
        for job, res in zip(jobs, run.jobs):
            if res.cpu_limits_s:
                timing.setdefault("cpu_limits_s", []).extend(res.cpu_limits_s)
        return run, {"timing": timing}

    def _run_tests(self, code: str) -> Transition:
        task = self.task
        assert task is not None
        self.last_code = code
        self.submissions += 1
        last_turn = self.turn >= self.max_turns
        jobs, calibration = self._jobs(code, visible=True, hidden=True, gate_hidden=not last_turn)
        run, info = self._execute(jobs, calibration)
        if run is None or run.env_error is not None:
            err = info.get("env_error") or (run.env_error if run else "sandbox failure")
            return Transition("The test harness failed; this submission is not scored.", {}, info=info, env_error=err)
        vis, hid = run.jobs[0], run.jobs[1]
        info.update(submissions=self.submissions, visible_passed=vis.n_passed, visible_total=len(task.visible))
        parts: dict[str, float] = {}
        name = task.entry_point
        obs = [render_results("Visible tests", task.visible, vis, name)] if task.visible else [
            "This task has no visible tests."
        ]
        frac = vis.fraction if task.visible else 0.0
        if vis.import_error is not None or vis.error is not None:
            frac = 0.0
        gain = max(0.0, frac - self.best_visible)
        if gain > 0:
            parts["progress"] = gain
        self.best_visible = max(self.best_visible, frac)
        all_pass = vis.error is None and vis.import_error is None and vis.n_passed == len(task.visible)
        if all_pass or last_turn:
            hidden_frac = hid.fraction if not hid.skipped else 0.0
            parts["task"] = hidden_frac
            info.update(hidden_passed=hid.n_passed, hidden_total=len(task.hidden))
            success = bool(task.hidden) and hid.n_passed == len(task.hidden) and not hid.skipped
            if all_pass:
                obs.append(f"All visible tests pass. Hidden tests: {hid.n_passed}/{len(task.hidden)} passed. "
                           "The episode is over.")
                return Transition("\n".join(obs), parts, terminated=True, success=success, info=info)
            obs.append(f"This was your last turn. Hidden tests: {hid.n_passed}/{len(task.hidden)} passed.")
            return Transition("\n".join(obs), parts, success=success, info=info)
        left = self.max_turns - self.turn
        obs.append(
            f"{left} turn(s) left. Reply with the complete corrected solution"
            + (f", or {SUBMIT_MARKER} to finish." if self.action_format == "native" else ", or call submit.")
        )
        return Transition("\n".join(obs), parts, info=info)

    def _submit(self, code: str) -> Transition:
        task = self.task
        assert task is not None
        code = code or self.last_code
        if not code.strip():
            return Transition(
                "Nothing to submit: you have not written any code. The episode is over.",
                {"task": 0.0},
                terminated=True,
                success=False,
                info={"submissions": self.submissions, "hidden_passed": 0, "hidden_total": len(task.hidden)},
            )
        self.last_code = code
        jobs, calibration = self._jobs(code, visible=False, hidden=True, gate_hidden=False)
        run, info = self._execute(jobs, calibration)
        if run is None or run.env_error is not None:
            err = info.get("env_error") or (run.env_error if run else "sandbox failure")
            return Transition("The test harness failed; this submission is not scored.", {}, info=info, env_error=err)
        hid = run.jobs[0]
        info.update(submissions=self.submissions, hidden_passed=hid.n_passed, hidden_total=len(task.hidden))
        success = bool(task.hidden) and hid.n_passed == len(task.hidden)
        obs = f"Submitted. Hidden tests: {hid.n_passed}/{len(task.hidden)} passed. The episode is over."
        return Transition(obs, {"task": hid.fraction}, terminated=True, success=success, info=info)
