"""``arl/code.swe-v0``: fix a bug injected into a real PyPI project, graded by its own test suite."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from arl_envs.core.actions import TagFormat, TagTable
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.code.apply_patch import PatchError, apply_hunks
from arl_envs.envs.code.apply_patch import parse as patch_parse
from arl_envs.envs.code.feedback import SandboxHolder
from arl_envs.envs.code.repo_env import (
    APPLY_PATCH_TAG,
    BASH_TAG,
    MAX_CONTENT_CHARS,
    MAX_READ_BYTES,
    READ_FILE_TAG,
    SUBMIT_TAG,
    WRITE_FILE_TAG,
    TOOLS as REPO_TOOLS,
    RepoEnv,
    _cut,
    _relative,
    apply_patch_in,
)
from arl_envs.envs.code.swe import list_instances
from arl_envs.envs.code.swe.docker_image import SWE_IMAGE, swe_image
from arl_envs.envs.code.swe.grade import TOOLCHAIN_MOUNT, Grade, grade
from arl_envs.envs.code.swe.guard import screen
from arl_envs.envs.code.swe.projects import (
    PROJECTS,
    Project,
    is_test_path,
    project_tree,
    shared_toolchain_dir,
    tree_files,
)

REPO_ROOT = "/work"
#: Failing tests shown in detail by run_tests.
MAX_FAILURES_SHOWN = 5
#: Characters of one failure message shown.
MAX_FAILURE_CHARS = 1200

#: The native format: code.repo's tags plus ``<run_tests>`` and ``<str_replace path="..."><old>..</old><new>..</new>``.
SWE_TAGS = TagTable(
    (
        BASH_TAG, READ_FILE_TAG, APPLY_PATCH_TAG, TagFormat("run_tests", "run_tests", "target"), WRITE_FILE_TAG,
        TagFormat("str_replace", "str_replace", attr="path", parts=(("old", "exact text"), ("new", "replacement"))),
        SUBMIT_TAG,
    ),
    missing="no action found: use one of <bash>...</bash>, <read_file>...</read_file>, "
    '<str_replace path="..."><old>...</old><new>...</new></str_replace>, '
    '<write_file path="...">...</write_file>, <apply_patch>...</apply_patch>, '
    "<run_tests>...</run_tests>, <submit/>",
)


class StrReplaceArgs(BaseModel):
    """Arguments of ``str_replace``."""

    path: str = Field(max_length=1000, description="File path relative to the repository root.")
    old: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="Exact text to replace (must occur once).")
    new: str = Field(max_length=MAX_CONTENT_CHARS, description="Replacement text.")


class RunTestsArgs(BaseModel):
    """Arguments of ``run_tests``."""

    target: str = Field(default="", max_length=2000,
                        description="A test file or pytest node id (empty: the tests named in the issue's files).")


_BY_NAME = {t.name: t for t in REPO_TOOLS}
TOOLS = [
    Tool("bash", "Run a shell command in the repository root (no network; 20 s limit; pytest is installed).",
         _BY_NAME["bash"].args),
    _BY_NAME["read_file"],
    Tool("str_replace", "Replace one exact occurrence of `old` with `new` in a file.", StrReplaceArgs),
    _BY_NAME["write_file"],
    _BY_NAME["apply_patch"],
    Tool("run_tests", "Run project tests (a file or node id) with the original test files; shows failures.",
         RunTestsArgs),
    Tool("submit", "Finish: the issue's failing tests and the tests that passed before are run.",
         _BY_NAME["submit"].args),
]


@functools.cache
def _pristine_files(name: str) -> dict[str, bytes]:
    return tree_files(project_tree(PROJECTS[name]))


@functools.cache
def _buggy_source(name: str, path: str, mutation_patch: str) -> str:
    """The mutated file: the instance's ``mutation_patch`` applied to the pristine tree's ``path``."""
    text = _pristine_files(name)[path].decode("utf-8")
    try:
        (_, _, hunks), = patch_parse(mutation_patch)
        return apply_hunks(text, hunks, path)
    except (PatchError, ValueError) as exc:
        raise TaskLoadError(f"{name}: the mutation patch does not apply to {path}: {exc}") from None


class SweEnv(AgentEnv):
    """Fix a bug injected into a real PyPI project (SWE-smith style), graded like SWE-bench.

    Description:
        Each episode is one validated instance (:func:`arl_envs.envs.code.swe.list_instances`): a pinned PyPI
        project's source tree (its sdist, tests included) with one procedural mutation of its code that makes at
        least one test fail. The agent gets an issue generated from the failing tests' output and works in a
        sandbox whose work directory is the project tree.
    Observation:
        First: the issue, the project, how to run the tests. Then each tool's output.
    Action:
        Native: one tag per reply (the last counts): ``<bash>cmd</bash>``, ``<read_file>path</read_file>``,
        ``<str_replace path="p"><old>text</old><new>text</new></str_replace>``,
        ``<write_file path="p">content</write_file>``, ``<apply_patch>diff</apply_patch>``,
        ``<run_tests>file or node id</run_tests>``, ``<submit/>``. JSON: the same tools as ``<tool_call>`` blocks.
    Rewards:
        ``task`` (weight 1): on submit, 1 iff every ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` test passes (SWE-bench's
        "resolved"), with the test files restored to the originals, in a fresh test process, verdict signed. A
        submission whose added lines reach into the test process or the interpreter (pytest's modules, the module
        table, frames, exits, dynamic code; :mod:`.guard`) is not graded: task 0, ``info["grade_refused"]``.
        ``progress`` (weight 0.1): the fraction of ``FAIL_TO_PASS`` tests passing beyond the best so far, measured
        at ``run_tests`` (the default target) and ``submit``. ``format`` (weight 0.1): raw -1 per malformed reply.
    Episode end:
        Terminated on submit or after more than ``max_invalid_actions`` (3) malformed replies; truncated after
        ``max_turns`` (30). A sandbox or grader failure truncates with ``info["env_error"]``.
    Arguments:
        split ("train" | "test" | "all"), project (a project name), instance_id, sandbox ("bwrap", or "docker":
        the sandbox image extended with pytest, built locally on the first reset by
        :func:`~arl_envs.envs.code.swe.docker_image.swe_image`),
        sandbox_kwargs, action_format, reward_weights, max_turns, max_invalid_actions, render_mode.
    """

    snapshot_mode: ClassVar[str] = "replay"
    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = 30
    default_max_invalid_actions: ClassVar[int] = 3
    native_tags = SWE_TAGS

    def __init__(
        self,
        *,
        split: str = "train",
        project: str | None = None,
        instance_id: str | None = None,
        sandbox: str = "bwrap",
        sandbox_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if project is not None and project not in PROJECTS:
            raise ValueError(f"unknown project {project!r}; known: {sorted(PROJECTS)}")
        self.split = split
        self.project_name = project
        self.instances = list_instances(split, project)
        if instance_id is not None:
            self.instances = [i for i in self.instances if i["instance_id"] == instance_id]
        if not self.instances:
            raise ValueError(f"no swe instance for split={split!r}, project={project!r}, instance_id={instance_id!r}"
                             " (build them with `arl-envs swe build`)")
        self._by_id = {i["instance_id"]: i for i in self.instances}
        super().__init__(**kwargs)
        if sandbox not in ("bwrap", "docker"):
            raise ValueError(f"arl/code.swe-v0 runs on sandbox='bwrap' or 'docker', not {sandbox!r}")
        sk = dict(sandbox_kwargs or {})
        self._image_pending = sandbox == "docker"
        if sandbox == "bwrap":  # the tool chain is bound read-only
            sk.setdefault("site_packages", [str(shared_toolchain_dir())])
        else:  # the tool chain is in the image (read-only root fs), built on first reset
            sk.setdefault("image", SWE_IMAGE)
        sk.setdefault("env", {"PYTHONPATH": f"{REPO_ROOT}/src:{REPO_ROOT}:{TOOLCHAIN_MOUNT}"})
        self._holder = SandboxHolder(sandbox, sk)
        self.instance: dict[str, Any] | None = None
        self.project: Project | None = None
        self.best_progress = 0.0
        self._has_patch: dict[int, bool] = {}
        self.last_grade: Grade | None = None

    # ----------------------------------------------------------------- hooks
    def tools(self) -> list[Tool]:
        return list(TOOLS)

    def instructions(self) -> str:
        if self.action_format == "native":
            how = (
                "Act with exactly one action tag per reply (text outside the tag is your reasoning; the last tag "
                "counts):\n"
                "<bash>shell command</bash>  (runs in the repository root)\n"
                "<read_file>path/to/file.py</read_file>\n"
                '<str_replace path="path/to/file.py"><old>exact old text</old><new>new text</new></str_replace>\n'
                '<write_file path="path/to/file.py">complete new content</write_file>\n'
                "<apply_patch>unified diff</apply_patch>\n"
                "<run_tests>tests/test_x.py or a node id (empty: the relevant test files)</run_tests>\n"
                "<submit/>  (when you are done: the tests decide your reward)"
            )
        else:
            how = self.json_format_instructions()
        return (
            "You are fixing a bug in a real Python project in a sandbox (no network). Find the cause of the issue, "
            "fix the library code (changes to tests do not count: the original tests are used), check with the "
            f"tests, then submit. You have {self.max_turns} turns.\n{how}"
        )

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is not None:
            if task_id not in self._by_id:
                raise TaskLoadError(f"unknown swe instance {task_id!r} for this env's split/project")
            inst = self._by_id[task_id]
        else:
            inst = self.instances[int(self.np_random.integers(0, len(self.instances)))]
        self.instance = inst
        self.project = PROJECTS[inst["project"]]
        self.best_progress = 0.0
        self.last_grade = None
        files = dict(_pristine_files(inst["project"]))
        path = inst["mutation_patch"].split("\n", 1)[0][len("--- a/"):].strip()
        files[path] = _buggy_source(inst["project"], path, inst["mutation_patch"]).encode("utf-8")
        if self._image_pending:
            swe_image(self._holder.kwargs["image"])
            self._image_pending = False
        self._holder.get()
        err = self._holder.new_episode()
        sb = self._holder.get()
        if err is not None:
            sb = self._holder.get()
        sb.write_files(files)
        p = self.project
        obs = (
            f"Repository: {p.name} {p.version} (PyPI sdist) at {REPO_ROOT} (your working directory).\n\n"
            f"Issue:\n{inst['problem_statement']}\n\n"
            f"Run tests with: {p.test_command} (or the run_tests tool)."
        )
        return inst["instance_id"], obs

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        call = calls[0]
        args = call.arguments
        sb = self._holder.get()
        if call.name == "submit":
            return self._submit()
        if call.name == "run_tests":
            return self._run_tests(str(args.get("target") or ""))
        if call.name == "read_file":
            return Transition(RepoEnv._read(sb, str(args["path"])))
        if call.name == "bash":
            res = RepoEnv._run_shell(sb, str(args["command"]))
            if res.sandbox_error is not None:
                return Transition("The sandbox failed to run the command.", env_error=res.sandbox_error)
            return Transition(RepoEnv._shell_output(res))
        if call.name == "write_file":
            path = _relative(str(args["path"]))
            try:
                sb.write_files({path: str(args["content"])})
                return Transition(f"Wrote {path} ({len(str(args['content']))} characters).")
            except (ValueError, OSError) as exc:
                return Transition(f"Could not write {path!r}: {exc}")
        if call.name == "str_replace":
            return Transition(self._str_replace(sb, _relative(str(args["path"])), str(args["old"]), str(args["new"])))
        res = apply_patch_in(sb, str(args["patch"]), self._has_patch)
        if res.sandbox_error is not None:
            return Transition("The sandbox failed to apply the patch.", env_error=res.sandbox_error)
        return Transition(("Patch applied.\n" if res.exit_code == 0 else "") + RepoEnv._shell_output(res))

    def _expert_action(self) -> str:
        """Apply the instance's fix (the reverse of the injected mutation), then submit."""
        inst = self.instance
        assert inst is not None
        path = inst["mutation_patch"].split("\n", 1)[0][len("--- a/"):].strip()
        data = self._holder.get().read_file(path, MAX_READ_BYTES)
        if data is not None and data.decode("utf-8", "replace") == _buggy_source(inst["project"], path,
                                                                                  inst["mutation_patch"]):
            return self.render_call("apply_patch", {"patch": inst["patch"]})
        return self.render_call("submit", {})

    def _close(self) -> None:
        self._holder.close()

    # ----------------------------------------------------------------- tools
    @staticmethod
    def _str_replace(sb: Any, path: str, old: str, new: str) -> str:
        try:
            data = sb.read_file(path, MAX_READ_BYTES)
        except (ValueError, OSError) as exc:
            return f"Cannot read {path!r}: {exc}"
        if data is None:
            return f"No such file (or not a regular file): {path}"
        text = data.decode("utf-8", "replace")
        n = text.count(old)
        if n != 1:
            return f"`old` occurs {n} times in {path}; it must occur exactly once. Nothing was changed."
        try:
            sb.write_files({path: text.replace(old, new, 1)})
        except (ValueError, OSError) as exc:
            return f"Could not write {path!r}: {exc}"
        return f"Replaced 1 occurrence in {path}."

    def _grade(self, targets: list[str], wanted: list[str]) -> Grade:
        inst, p = self.instance, self.project
        assert inst is not None and p is not None
        pristine = {k: v for k, v in _pristine_files(p.name).items() if is_test_path(p, k)}
        g = grade(self._holder.get(), repo=REPO_ROOT, src=p.src, test_paths=list(p.tests), pristine=pristine,
                  targets=targets, wanted=wanted)
        self.last_grade = g
        return g

    def _progress(self, g: Grade) -> dict[str, float]:
        f2p = self.instance["FAIL_TO_PASS"]  # type: ignore[index]
        frac = sum(g.passed(t) for t in f2p) / len(f2p)
        if frac > self.best_progress:
            gain, self.best_progress = frac - self.best_progress, frac
            return {"progress": gain}
        return {}

    def _run_tests(self, target: str) -> Transition:
        inst = self.instance
        assert inst is not None
        targets = [target] if target else list(inst["test_files"])
        if target.startswith("-"):
            return Transition("The target must be a test file or node id, not an option.")
        g = self._grade(targets, [])
        if g.env_error is not None:
            return Transition("The test harness failed (not your fault).", env_error=g.env_error)
        counts: dict[str, int] = {}
        for o in g.outcomes.values():
            counts[o] = counts.get(o, 0) + 1
        summary = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no test ran"
        lines = [f"[run_tests {' '.join(targets)}] {summary}" + ("" if g.status == "ok" else f" ({g.status})")]
        bad = [t for t, o in g.outcomes.items() if o in ("failed", "error")]
        for t in bad[:MAX_FAILURES_SHOWN]:
            lines.append(f"FAILED {t}\n{_cut(g.messages.get(t, ''), MAX_FAILURE_CHARS)}")
        if len(bad) > MAX_FAILURES_SHOWN:
            lines.append(f"... and {len(bad) - MAX_FAILURES_SHOWN} more failing")
        parts = self._progress(g) if not target else {}
        return Transition("\n".join(lines), parts, info={"timing": {"tests_s": round(g.duration_s, 3)}})

    def _submit(self) -> Transition:
        inst = self.instance
        assert inst is not None
        f2p, p2p = inst["FAIL_TO_PASS"], inst["PASS_TO_PASS"]
        p = self.project
        assert p is not None
        refusal, error = screen(self._holder.get(), _pristine_files(p.name), lambda rel: is_test_path(p, rel))
        if error is not None:
            return Transition("The submission could not be screened; it is not scored.", env_error=error)
        if refusal is not None:
            return Transition(f"Submitted, not graded: {refusal}. The episode is over.", {"task": 0.0},
                              terminated=True, success=False, info={"grade_refused": refusal})
        g = self._grade(list(inst["test_files"]), list(f2p) + list(p2p))
        if g.env_error is not None:
            return Transition("The test harness failed; the submission is not scored.", env_error=g.env_error)
        f2p_ok = sum(g.passed(t) for t in f2p)
        p2p_ok = sum(g.passed(t) for t in p2p)
        success = f2p_ok == len(f2p) and p2p_ok == len(p2p)
        parts = self._progress(g)
        parts["task"] = 1.0 if success else 0.0
        verdict = "resolved." if success else "not resolved."
        obs = (f"Submitted. FAIL_TO_PASS: {f2p_ok}/{len(f2p)} pass; PASS_TO_PASS: {p2p_ok}/{len(p2p)} pass; "
               f"{verdict} The episode is over.")
        info = {"fail_to_pass": [f2p_ok, len(f2p)], "pass_to_pass": [p2p_ok, len(p2p)], "grade_status": g.status,
                "timing": {"tests_s": round(g.duration_s, 3)}}
        return Transition(obs, parts, terminated=True, success=success, info=info)
