"""``arl/code.repo-v1``: fix an injected bug in a small generated Python repository."""

from __future__ import annotations

import hashlib
import os
import stat
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from arl_envs.core.actions import TagFormat, TagTable
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.code.feedback import SandboxHolder, render_results
from arl_envs.envs.code.harness import Harness, HarnessRun, Job
from arl_envs.envs.code.repo import TEST_COMMAND, RepoTask, all_bug_ids, parse_repo_id, repo_task
from arl_envs.envs.code.repo_templates import TEMPLATES

#: Work directory of the repository inside the sandbox.
REPO_ROOT = "/work"
#: Characters of command output / file content shown in an observation.
MAX_TOOL_OUTPUT_CHARS = 8_000
#: Longest file content / patch / command accepted, characters.
MAX_CONTENT_CHARS = 100_000
MAX_COMMAND_CHARS = 10_000
#: Bytes read by read_file at most.
MAX_READ_BYTES = 256 * 1024
#: Limits of one bash command: wall/CPU seconds, memory MiB, output bytes kept.
BASH_WALL_S = 20.0
BASH_CPU_S = 10.0
BASH_MEMORY_MB = 512
BASH_OUTPUT_BYTES = 64 * 1024
#: Entries (files and directories) and directory depth walked at most when fingerprinting the work directory
#: (more: assume it changed).
MAX_FINGERPRINT_FILES = 5_000
MAX_FINGERPRINT_DEPTH = 64
#: Task seeds are drawn from [0, MAX_TASK_SEED).
MAX_TASK_SEED = 2**31 - 1
#: Calibrated CPU limits kept per process (LRU), tasks.
CALIBRATION_CACHE_SIZE = 4096
#: Shell script applying a unified diff from stdin with -p1, falling back to -p0 (GNU patch).
APPLY_PATCH_SCRIPT = (
    "cat > /tmp/arl.diff; "
    "for p in 1 0; do "
    "if patch -p$p --dry-run --batch --forward -s < /tmp/arl.diff >/dev/null 2>&1; then "
    "patch -p$p --batch --forward --no-backup-if-mismatch < /tmp/arl.diff; exit $?; fi; "
    "done; "
    "echo 'The patch does not apply (dry run with -p1 below); no file was changed.'; "
    "patch -p1 --dry-run --batch --forward < /tmp/arl.diff; exit 1"
)

#: Source of the fallback applier (sandboxes without GNU patch, e.g. the minimal Docker image).
APPLY_PATCH_SOURCE = (Path(__file__).parent / "apply_patch.py").read_text(encoding="utf-8")
#: The native actions' rows: ``<bash>``, ``<read_file>``, ``<apply_patch>``, ``<write_file path="...">``, ``<submit/>``.
BASH_TAG = TagFormat("bash", "bash", "command")
READ_FILE_TAG = TagFormat("read_file", "read_file", "path")
APPLY_PATCH_TAG = TagFormat("apply_patch", "apply_patch", "patch", body="newlines")
WRITE_FILE_TAG = TagFormat("write_file", "write_file", "content", body="newline", attr="path")
SUBMIT_TAG = TagFormat("submit", "submit", self_closing=True)
#: The native format: one pass over the reply (blocks never overlap); the last block counts.
REPO_TAGS = TagTable(
    (BASH_TAG, READ_FILE_TAG, APPLY_PATCH_TAG, WRITE_FILE_TAG, SUBMIT_TAG),
    missing="no action found: use one of <bash>...</bash>, <read_file>...</read_file>, "
    '<write_file path="...">...</write_file>, <apply_patch>...</apply_patch>, <submit/>',
)


class BashArgs(BaseModel):
    """Arguments of ``bash``."""

    command: str = Field(max_length=MAX_COMMAND_CHARS, description="Shell command, run with /bin/sh in the repository root.")


class ReadFileArgs(BaseModel):
    """Arguments of ``read_file``."""

    path: str = Field(max_length=1000, description="File path relative to the repository root.")


class WriteFileArgs(BaseModel):
    """Arguments of ``write_file``."""

    path: str = Field(max_length=1000, description="File path relative to the repository root.")
    content: str = Field(max_length=MAX_CONTENT_CHARS, description="The complete new content of the file.")


class ApplyPatchArgs(BaseModel):
    """Arguments of ``apply_patch``."""

    patch: str = Field(max_length=MAX_CONTENT_CHARS, description="A unified diff (paths a/... b/... or relative).")


class SubmitArgs(BaseModel):
    """``submit`` takes no arguments."""


TOOLS = [
    Tool("bash", "Run a shell command in the repository root (no network; 20 s limit).", BashArgs),
    Tool("read_file", "Show the content of a file of the repository.", ReadFileArgs),
    Tool("write_file", "Replace (or create) a file of the repository with the given content.", WriteFileArgs),
    Tool("apply_patch", "Apply a unified diff to the repository (like `patch -p1`).", ApplyPatchArgs),
    Tool("submit", "Finish: the hidden test suite is run on the repository as it is now.", SubmitArgs),
]

_CALIBRATIONS: OrderedDict[str, list[float]] = OrderedDict()


def _cut(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit // 2] + "\n[... output truncated ...]\n" + text[-limit // 2:]


class RepoEnv(AgentEnv):
    """Fix a bug injected into a small generated Python repository.

    Description:
        Each episode generates a repository from one of four templates (``inventory``, ``textkit``,
        ``gradebook``, ``schedule``: 2-3 modules with cross-module imports, a ``unittest`` suite in ``tests/``
        and a README) with seeded parameters, and injects one bug (26 bug sites; kinds off-by-one, wrong
        operator, missing case, wrong default). Some visible tests fail; a bug report shows one failing call.
        The agent works in a sandbox (bubblewrap by default) whose work directory is the repository.
    Observation:
        First: the bug report, the file list and how to run the tests. Then each tool's output (command
        output with exit code, file content, patch output) followed by the current visible-test count after
        any action that may change files.
    Action:
        Native: one tag per reply (the last one counts): ``<bash>cmd</bash>``, ``<read_file>path</read_file>``,
        ``<write_file path="p">content</write_file>``, ``<apply_patch>unified diff</apply_patch>``,
        ``<submit/>``. JSON: the same tools as ``<tool_call>`` blocks.
    Tools:
        ``bash(command)``, ``read_file(path)``, ``write_file(path, content)``, ``apply_patch(patch)``,
        ``submit()``.
    Rewards:
        ``task`` (weight 1): on ``submit``, 1 if every hidden test passes (the visible tests plus up to 4 more
        cases of every public function, 35-46 in all, at least one exposing the bug; run by the code harness,
        never written where the agent can read them), else 0. ``progress`` (weight 0.1): increase of the
        visible pass fraction over the best so far, starting from the buggy repository's own fraction (no
        reward without a fix), measured after actions that change files. ``format`` (weight 0.1): raw -1 for a
        reply without an action tag.
    Episode end:
        Terminated on ``submit`` or after more than ``max_invalid_actions`` (default 3) malformed replies;
        truncated after ``max_turns`` (default 20; no task reward without a submit). A sandbox failure
        truncates with ``info["env_error"]`` and no task reward.
    Arguments:
        templates (subset of the template names), sandbox ("bwrap" | "docker"), sandbox_kwargs,
        action_format, reward_weights, max_turns, max_invalid_actions, render_mode.
    Version history:
        v1: current: the progress baseline is the buggy repo's own visible fraction and the reference
        calibration never touches a file system (v0, retired, scored differently: CHANGELOG.md).
    """

    #: Snapshot (arl_envs.core.snapshot): the repository's work tree lives in the sandbox: replay the actions into a
    #: fresh one.
    snapshot_mode: ClassVar[str] = "replay"

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = 20
    default_max_invalid_actions: ClassVar[int] = 3
    native_tags = REPO_TAGS

    def __init__(
        self,
        *,
        templates: tuple[str, ...] | list[str] | None = None,
        sandbox: str = "bwrap",
        sandbox_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        names = tuple(templates) if templates else tuple(TEMPLATES)
        unknown = [t for t in names if t not in TEMPLATES]
        if unknown:
            raise ValueError(f"unknown templates {unknown}; known: {sorted(TEMPLATES)}")
        self.templates = names
        self._bugs = [(t, b) for t, b in all_bug_ids() if t in names]
        super().__init__(**kwargs)
        self._holder = SandboxHolder(sandbox, sandbox_kwargs)
        self.task: RepoTask | None = None
        self.best_visible = 0.0
        self._fingerprint: str | None = None
        self._has_patch: dict[int, bool] = {}

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return list(TOOLS)

    def instructions(self) -> str:
        if self.action_format == "native":
            how = (
                "Act with exactly one action tag per reply (text outside the tag is your reasoning; the last tag "
                "counts):\n"
                "<bash>shell command</bash>  (runs in the repository root)\n"
                "<read_file>path/to/file.py</read_file>\n"
                '<write_file path="path/to/file.py">complete new content</write_file>\n'
                "<apply_patch>unified diff</apply_patch>\n"
                "<submit/>  (when you are done: the hidden tests decide your reward)"
            )
        else:
            how = self.json_format_instructions()
        return (
            "You are fixing a bug in a Python repository in a sandbox (no network). Find the bug, fix it in the "
            f"source (not in the tests), check with `{TEST_COMMAND}`, then submit. Hidden tests check the fix; "
            f"you have {self.max_turns} turns.\n{how}"
        )

    def _new_task(self) -> RepoTask:
        """The task drawn from ``self.np_random``: a (template, bug) pair, then the task's seed."""
        template, bug = self._bugs[int(self.np_random.integers(0, len(self._bugs)))]
        return repo_task(template, bug, int(self.np_random.integers(0, MAX_TASK_SEED)))

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        self.task = repo_task(*parse_repo_id(task_id)) if task_id is not None else self._new_task()
        self.best_visible = self.task.initial_visible_passed / len(self.task.visible)  # no reward for no change
        sb = self._holder.get()
        err = self._holder.new_episode()
        if err is not None:
            sb = self._holder.get()
        sb.write_files(self.task.files)
        self._fingerprint = self._workdir_fingerprint()
        files = "\n".join(sorted(self.task.files))
        obs = (
            f"Repository: package `{self.task.package}` at {REPO_ROOT} (your working directory).\n\n"
            f"{self.task.issue}\n\nSome tests fail. Run them with: {TEST_COMMAND}\n\nFiles:\n{files}"
        )  # the action format is in the instructions, which the base class puts before this text
        return self.task.task_id, obs

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        call = calls[0]
        args = call.arguments
        try:
            sb = self._holder.get()
        except Exception as exc:  # noqa: BLE001 - infrastructure
            return Transition("The sandbox is unavailable.", {}, env_error=f"{type(exc).__name__}: {exc}")
        if call.name == "submit":
            return self._submit()
        if call.name == "read_file":
            return Transition(self._read(sb, str(args["path"])))
        if call.name == "bash":
            res = self._run_shell(sb, str(args["command"]))
            if res.sandbox_error is not None:
                return Transition("The sandbox failed to run the command.", {}, env_error=res.sandbox_error)
            obs = self._shell_output(res)
        elif call.name == "write_file":
            path = _relative(str(args["path"]))
            try:
                sb.write_files({path: str(args["content"])})
                obs = f"Wrote {path} ({len(str(args['content']))} characters)."
            except (ValueError, OSError) as exc:
                obs = f"Could not write {path!r}: {exc}"
        else:
            res = self._apply_patch(sb, str(args["patch"]))
            if res.sandbox_error is not None:
                return Transition("The sandbox failed to apply the patch.", {}, env_error=res.sandbox_error)
            obs = ("Patch applied.\n" if res.exit_code == 0 else "") + self._shell_output(res)
        return self._after_change(obs)

    def _expert_action(self) -> str:
        """Revert the injected bug (its unified diff; a full rewrite if the file was edited otherwise), then submit."""
        task = self.task
        current = self._holder.get().read_file(task.bug_path, MAX_READ_BYTES)
        text = current.decode("utf-8", "replace") if current is not None else None
        if text == task.correct_source:
            return self.render_call("submit", {})
        if text == task.buggy_source:
            return self.render_call("apply_patch", {"patch": task.expert_patch})
        return self.render_call("write_file", {"path": task.bug_path, "content": task.correct_source})

    def _close(self) -> None:
        self._holder.close()

    # ----------------------------------------------------------------- tools
    @staticmethod
    def _read(sb: Any, path: str) -> str:
        rel = _relative(path)
        try:
            data = sb.read_file(rel, MAX_READ_BYTES)
        except (ValueError, OSError) as exc:
            return f"Cannot read {path!r}: {exc}"
        if data is None:
            return f"No such file (or not a regular file): {rel}"
        text = data.decode("utf-8", "replace")
        more = " (first 256 KiB)" if len(data) >= MAX_READ_BYTES else ""
        return f"{rel}{more}:\n{_cut(text)}"

    @staticmethod
    def _run_shell(sb: Any, command: str | list[str], stdin: str | None = None) -> Any:
        from arl_envs.sandbox import Limits  # noqa: PLC0415

        limits = Limits(wall_time_s=BASH_WALL_S, cpu_time_s=BASH_CPU_S, memory_mb=BASH_MEMORY_MB,
                        max_output_bytes=BASH_OUTPUT_BYTES)
        try:
            return sb.run(command, stdin=stdin, limits=limits)
        except ValueError as exc:  # an empty command
            from arl_envs.sandbox import ExecResult  # noqa: PLC0415

            return ExecResult(stderr=f"{exc}\n", exit_code=2)

    def _apply_patch(self, sb: Any, patch: str) -> Any:
        """:func:`apply_patch_in` with this env's probe cache."""
        return apply_patch_in(sb, patch, self._has_patch)

    @staticmethod
    def _shell_output(res: Any) -> str:
        parts = [f"[{res.describe()}]"]
        if res.stdout:
            parts.append(_cut(res.stdout))
        if res.stderr:
            parts.append("[stderr]\n" + _cut(res.stderr))
        return "\n".join(parts)

    def _workdir_fingerprint(self) -> str | None:
        """Hash of (path, size, mtime, ctime) of every work-directory entry; None when it cannot be computed.

        An iterative walk (the agent controls the tree: no recursion) that never follows links and gives up, with
        None, past :data:`MAX_FINGERPRINT_FILES` entries or :data:`MAX_FINGERPRINT_DEPTH` levels.
        """
        root = getattr(self._holder.get(), "workdir", None)
        if root is None:
            return None
        h = hashlib.sha256()
        n = 0
        stack = [(str(root), 0)]
        while stack:
            path, depth = stack.pop()
            try:
                with os.scandir(path) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                n += 1
                if n > MAX_FINGERPRINT_FILES:
                    return None
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                # os.fsencode: a name that is not UTF-8 (`touch $'\\377'`) made str.encode raise out of step()
                meta = f"|{st.st_mode}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}\n"
                h.update(os.fsencode(entry.path) + meta.encode())
                if stat.S_ISDIR(st.st_mode):
                    if depth + 1 > MAX_FINGERPRINT_DEPTH:
                        return None
                    stack.append((entry.path, depth + 1))
        return h.hexdigest()

    # ----------------------------------------------------------------- tests
    def _jobs(self, cases: list[Any], offset: int) -> tuple[Job, Job | None]:
        task = self.task
        assert task is not None
        key = f"{task.task_id}#{hashlib.sha256(task.correct_source.encode()).hexdigest()[:12]}"
        all_cases = list(task.visible + task.hidden)
        cached = _CALIBRATIONS.get(key)
        idx = list(range(offset, offset + len(cases)))
        common = dict(source="", mode="repo", repo_root=REPO_ROOT)
        if cached is not None:
            return Job(cases=cases, cpu_limits_s=[cached[i] for i in idx], **common), None
        reference = Job(source="", cases=all_cases, cpu_limits_s=[0.0] * len(all_cases), mode="repo",
                        files=task.correct_files)
        return Job(cases=cases, calibration_index=idx, **common), reference

    def _run_tests(self, hidden: bool) -> tuple[HarnessRun | None, dict[str, Any]]:
        task = self.task
        assert task is not None
        cases = list(task.hidden if hidden else task.visible)
        offset = len(task.visible) if hidden else 0
        job, calibration = self._jobs(cases, offset)
        try:
            run = Harness(self._holder.get()).run([job], calibration=calibration)
        except Exception as exc:  # noqa: BLE001
            return None, {"env_error": f"{type(exc).__name__}: {exc}"}
        timing: dict[str, Any] = {"sandbox_s": round(run.duration_s, 4), "cpu_limits_s": run.jobs[0].cpu_limits_s}
        if run.sandbox_cpu_s is not None:
            timing["sandbox_cpu_s"] = round(run.sandbox_cpu_s, 4)
        if run.calibration is not None:
            key = f"{task.task_id}#{hashlib.sha256(task.correct_source.encode()).hexdigest()[:12]}"
            _CALIBRATIONS[key] = run.calibration.cpu_limits_s
            while len(_CALIBRATIONS) > CALIBRATION_CACHE_SIZE:
                _CALIBRATIONS.popitem(last=False)
            timing["reference_cpu_s"] = run.calibration.reference_cpu_s
            timing["reference_passed"] = run.calibration.reference_passed
        return run, {"timing": timing}

    def _after_change(self, obs: str) -> Transition:
        """Re-run the visible tests if files may have changed; progress = gain over the best fraction so far."""
        task = self.task
        assert task is not None
        fp = self._workdir_fingerprint()
        if fp is not None and fp == self._fingerprint:
            return Transition(obs)
        run, info = self._run_tests(hidden=False)
        if run is None or run.env_error is not None:
            err = info.get("env_error") or (run.env_error if run else "sandbox failure")
            return Transition(obs + "\n(The test harness failed.)", {}, info=info, env_error=err)
        self._fingerprint = fp
        vis = run.jobs[0]
        frac = vis.fraction if vis.import_error is None else 0.0
        parts: dict[str, float] = {}
        if frac > self.best_visible:
            parts["progress"] = frac - self.best_visible
            self.best_visible = frac
        info.update(visible_passed=vis.n_passed, visible_total=len(task.visible))
        return Transition(f"{obs}\n[visible tests now: {vis.n_passed}/{len(task.visible)} pass]", parts, info=info)

    def _submit(self) -> Transition:
        task = self.task
        assert task is not None
        run, info = self._run_tests(hidden=True)
        if run is None or run.env_error is not None:
            err = info.get("env_error") or (run.env_error if run else "sandbox failure")
            return Transition("The test harness failed; the submission is not scored.", {}, info=info, env_error=err)
        hid = run.jobs[0]
        n_vis = len(task.visible)
        vis_passed = sum(c.passed for c in hid.cases[:n_vis]) if hid.error is None else 0
        parts: dict[str, float] = {}
        frac = vis_passed / n_vis if n_vis and hid.import_error is None else 0.0
        if frac > self.best_visible:
            parts["progress"] = frac - self.best_visible
            self.best_visible = frac
        success = hid.error is None and hid.import_error is None and hid.n_passed == len(task.hidden)
        parts["task"] = 1.0 if success else 0.0
        info.update(hidden_passed=hid.n_passed, hidden_total=len(task.hidden), visible_passed=vis_passed,
                    visible_total=n_vis)
        verdict = "all pass: the bug is fixed." if success else "not all pass."
        obs = f"Submitted. Hidden tests: {hid.n_passed}/{len(task.hidden)} passed; {verdict} The episode is over."
        if not success and hid.import_error:
            obs += "\n" + render_results("Hidden tests", task.hidden, hid).split("\n", 1)[-1][:1500]
        return Transition(obs, parts, terminated=True, success=success, info=info)


def apply_patch_in(sb: Any, patch: str, has_patch: dict[int, bool]) -> Any:
    """Apply a unified diff in ``sb``'s work directory: GNU ``patch`` (-p1, else -p0) when the sandbox has it, else
    the stdlib applier of :mod:`.apply_patch`. ``has_patch`` caches the probe per sandbox (``{id(sb): bool}``,
    replaced when the sandbox changes). Returns the ``ExecResult``."""
    if has_patch.get(id(sb)) is None:
        probe = RepoEnv._run_shell(sb, "command -v patch >/dev/null")
        if probe.sandbox_error is not None:
            return probe
        has_patch.clear()
        has_patch[id(sb)] = probe.exit_code == 0
    if has_patch[id(sb)]:
        return RepoEnv._run_shell(sb, APPLY_PATCH_SCRIPT, stdin=patch)
    return RepoEnv._run_shell(sb, [sb.python, "-I", "-S", "-c", APPLY_PATCH_SOURCE], stdin=patch)


def _relative(path: str) -> str:
    """A repository-relative path: strips a leading ``/work/`` or ``./``."""
    p = path.strip()
    if p.startswith(REPO_ROOT + "/"):
        p = p[len(REPO_ROOT) + 1:]
    while p.startswith("./"):
        p = p[2:]
    return p
