"""``arl/math.tool-v1``: tool-integrated reasoning: a sandboxed Python session, then a ``\\boxed{}`` answer."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from arl_envs.core.actions import ParseError, TagFormat, TagTable, boxed_contents
from arl_envs.core.env import Transition
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.math.env import ANSWER_TOOL, ArithmeticEnv, CountdownEnv, DatasetEnv, MathEnv
from arl_envs.envs.math.grading import GradeResult
from arl_envs.envs.math.tasks import MathTask
from arl_envs.sandbox import check_backend

#: Characters of tool output shown to the agent (head and tail kept when longer).
MAX_TOOL_OUTPUT_CHARS = 4_000
#: Default wall-clock seconds of one python call.
DEFAULT_TOOL_TIMEOUT_S = 10.0
TASK_SOURCES: dict[str, type[MathEnv]] = {"arithmetic": ArithmeticEnv, "countdown": CountdownEnv, "dataset": DatasetEnv}

_EMPTY = "the python block is empty"
#: The native code blocks: a ```python (or ```py) fence or a <python> block, each row scanned on its own; the one
#: that starts last counts (``_parse_native`` weighs it against the last ``\boxed{}``).
PYTHON_TAGS = TagTable(
    (
        TagFormat("python", "python", "code", body="code", fence=("python", "py"), empty_error=_EMPTY,
                  prefix="Let me compute this.\n"),
        TagFormat("python", "python", "code", body="raw", empty_error=_EMPTY),
    ),
    missing="no action found: write a ```python block to run code, or end with \\boxed{your answer}",
    joint=False,
)
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")


class PythonArgs(BaseModel):
    """Arguments of the ``python`` tool."""

    code: str = Field(description="Python 3 code to run in a persistent session; print() what you need to see.")


PYTHON_TOOL = Tool(
    "python",
    "Run Python code in a persistent sandboxed session (variables survive between calls; no network). "
    "Returns stdout and stderr.",
    PythonArgs,
)


def _clip(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"


class ToolMathEnv(MathEnv):
    """Math with a Python tool (tool-integrated reasoning, as in ToRA / PAL-style agents).

    Description:
        The tasks of ``arl/math.arithmetic-v1``, ``countdown-v1`` or ``dataset-v1`` (``source`` kwarg). The agent
        may run Python in a persistent session inside the sandbox (never in the env's process) up to
        ``max_tool_calls`` times, reads stdout/stderr, and ends with a ``\\boxed{}`` answer.
    Observation:
        The problem; after a python call, ``Tool output:`` and the session's stdout/stderr (clipped to
        4,000 characters; a timeout, crash or restart is stated: after a restart every variable is gone).
    Action:
        Native: a fenced ```` ```python ```` block or ``<python>...</python>`` runs code; ``\\boxed{answer}``
        answers. If a reply has both, whichever comes LAST decides (code written after the box runs; a box after
        the code answers and the code is ignored). JSON: ``python(code)`` or ``answer(answer)``, one per turn.
    Tools:
        ``python(code: str)``, ``answer(answer: str)``.
    Rewards:
        ``task`` (weight 1): 1 for a correct answer, 0 for a hedge (boxes of different values). ``format`` (weight 0.1): raw -1 per malformed reply.
        ``tool`` (weight 0 by default): raw 1 for a python call that ran to completion with exit status 0.
    Episode end:
        Terminated on an answer (correct, or the last of ``max_attempts``) or after more than
        ``max_invalid_actions`` (default 2) malformed replies. A python call beyond ``max_tool_calls`` is refused
        with an observation (not a format error). Truncated at ``max_turns`` (default
        ``max_tool_calls + max_attempts + max_invalid_actions``). A sandbox failure truncates with
        ``info["env_error"]``.
    Arguments:
        source ("arithmetic" | "countdown" | "dataset", default "arithmetic"), source_kwargs (dict for that task
        env, e.g. ``{"difficulty": 4}`` or ``{"path": ...}``), max_tool_calls (default 4), tool_timeout_s
        (default 10), sandbox ("bwrap" | "docker"), sandbox_kwargs, max_attempts, grader_timeout_s, last_box_wins,
        action_format, reward_weights, max_turns, max_invalid_actions, render_mode.
    Version history:
        v1: current (v0, retired, scored a reply boxing different values by its last box, and its python tool
        could read the shipped answers where a sandbox bind showed the package: CHANGELOG.md).

    Raises:
        SandboxUnavailable: At the first ``reset`` when the sandbox backend is missing (names the install step).
    """

    #: Snapshot (arl_envs.core.snapshot): the Python session's variables live in the sandbox process: replay the
    #: actions.
    snapshot_mode: ClassVar[str] = "replay"

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "format": 0.1, "tool": 0.0}
    default_max_invalid_actions: ClassVar[int] = 2

    def __init__(
        self,
        *,
        source: str = "arithmetic",
        source_kwargs: dict[str, Any] | None = None,
        max_tool_calls: int = 4,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        sandbox: str = "bwrap",
        sandbox_kwargs: dict[str, Any] | None = None,
        max_attempts: int = 1,
        max_turns: int | None = None,
        **kwargs: Any,
    ) -> None:
        if source not in TASK_SOURCES:
            raise ValueError(f"source must be one of {sorted(TASK_SOURCES)}, got {source!r}")
        if max_tool_calls < 0:
            raise ValueError(f"max_tool_calls must be >= 0, got {max_tool_calls}")
        self.source = source
        self.tasks_env = TASK_SOURCES[source](**(source_kwargs or {}))
        self.max_tool_calls = int(max_tool_calls)
        self.tool_timeout_s = float(tool_timeout_s)
        check_backend(sandbox, sandbox_kwargs)
        self.sandbox_backend = sandbox
        self.sandbox_kwargs = dict(sandbox_kwargs or {})
        invalid = kwargs.get("max_invalid_actions")
        invalid = self.default_max_invalid_actions if invalid is None else int(invalid)
        if max_turns is None:
            max_turns = self.max_tool_calls + max_attempts + invalid
        super().__init__(max_attempts=max_attempts, max_turns=max_turns, **kwargs)
        self.task_description = f"{self.tasks_env.task_description} You can run Python code to help you."
        self._sandbox: Any = None
        self._session: Any = None
        self.tool_calls_used = 0
        self.last_tool_stdout = ""

    # ----------------------------------------------------------------- tasks come from the source env
    def _new_task(self) -> MathTask:
        self.tasks_env.np_random = self.np_random  # one RNG: same seed, same task
        return self.tasks_env._new_task()

    def _task_from_id(self, task_id: str) -> MathTask:
        return self.tasks_env._task_from_id(task_id)

    def _grade(self, task: MathTask, answer: str) -> tuple[GradeResult, str]:
        return self.tasks_env._grade(task, answer)

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [PYTHON_TOOL, ANSWER_TOOL]

    def instructions(self) -> str:
        budget = f"You may run Python up to {self.max_tool_calls} times."
        if self.action_format == "native":
            how = (
                "To run Python, write one ```python fenced block (or <python>...</python>) and stop: the output comes "
                "back as the next message, and variables persist between runs. When you know the answer, end your "
                "reply with \\boxed{answer}. One action per reply: if both appear, the one written last counts."
                + ("" if self.last_box_wins else " Box one answer only: boxes holding different answers score 0.")
            )
        else:
            how = "Use the `python` tool to compute and the `answer` tool to submit.\n" + self.json_format_instructions()
        return f"{self.task_description} {budget}\n{how}"

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        out = super()._reset_task(task_id)
        self.tool_calls_used = 0
        self.last_tool_stdout = ""
        self._fresh_session()
        return out

    def _fresh_session(self) -> None:
        """A fresh work directory and interpreter per episode (nothing leaks between episodes)."""
        from arl_envs.sandbox import Limits, get_sandbox

        if self._sandbox is None:
            kwargs = dict(self.sandbox_kwargs)
            kwargs.setdefault("limits", Limits(wall_time_s=self.tool_timeout_s, cpu_time_s=self.tool_timeout_s))
            self._sandbox = get_sandbox(self.sandbox_backend, **kwargs)
        if self._session is not None:
            self._session.close()
            self._session = None
        self._sandbox.reset()

    def _parse_native(self, text: str) -> list[ToolCall]:
        last_code = PYTHON_TAGS.match(text)
        boxes = boxed_contents(text)
        box_starts = [m.start() for m in _BOX.finditer(text)] if boxes else []
        self._reply_boxes = []
        if box_starts and (last_code is None or box_starts[-1] > last_code.start):
            self._reply_boxes = boxes
            return [ToolCall("answer", {"answer": boxes[-1].strip()})]
        if last_code is not None:
            return [last_code.checked()]
        raise ParseError(PYTHON_TAGS.missing)

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        call = calls[0]
        if call.name == "answer":
            return super()._step_calls(calls)
        if self.tool_calls_used >= self.max_tool_calls:
            return Transition(f"Tool budget used up ({self.max_tool_calls} python calls). Give your final answer now.")
        self.tool_calls_used += 1
        if self._session is None:  # the session's CPU: the per-call limit times the calls allowed, no more
            self._session = self._sandbox.open_session(cpu_budget_s=self.max_tool_calls * self.tool_timeout_s)
        result = self._session.run(call.arguments["code"], timeout_s=self.tool_timeout_s)
        info = {"tool_calls_used": self.tool_calls_used, "tool_status": result.describe()}
        if result.sandbox_error is not None:
            return Transition("The sandbox failed; this episode is not scored.", info=info, env_error=result.sandbox_error)
        self.last_tool_stdout = result.stdout
        body = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
        status = "" if result.ok else f"\n[{result.describe()}]"
        left = self.max_tool_calls - self.tool_calls_used
        obs = f"Tool output:\n{_clip(body) if body.strip() else '(no output)'}{status}\n({left} python call(s) left)"
        return Transition(obs, {"tool": 1.0 if result.ok else 0.0}, info=info)

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        if name == "python":
            return PYTHON_TAGS.format(name, arguments)
        return super().format_call(name, arguments)

    def _expert_action(self) -> str:
        """Turn 1: a program that computes the answer. Turn 2: the answer read from the program's output."""
        task = self.task
        if self.tool_calls_used == 0 and self.max_tool_calls > 0:
            code = task.meta.get("python") or (
                f"print({task.meta['solution']})" if "solution" in task.meta else f"print({task.answer!r})"
            )
            return self.render_call("python", {"code": code})
        if "solution" in task.meta:  # Countdown: the answer is the expression whose value the tool confirmed
            return self.render_call("answer", {"answer": str(task.meta["solution"])})
        lines = self.last_tool_stdout.strip().splitlines()
        return self.render_call("answer", {"answer": lines[-1] if lines else ""})

    def _close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        self.tasks_env.close()
