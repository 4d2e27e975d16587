"""The scripted search-and-patch agent of ``arl/code.swe-v0``: its parsing and candidate fixes (pure), and real
episodes in the bubblewrap sandbox (it resolves shipped instances and never edits a test file)."""

from __future__ import annotations

import ast
import difflib

import pytest

from arl_envs.agents.search_patch import (
    SearchPatchAgent,
    called_names,
    enclosing_function,
    failing_tests,
    is_test_file,
    line_candidates,
    numbered_lines,
    traceback_frames,
)
from arl_envs.envs.code.swe.mutate import mutations

SNIPPET = '''
class Base:
    def size(self):
        return 0


class Box(Base):
    def first(self, default=False, strict=True):
        """Doc: x < y."""
        if not self.items:
            return default
        n = len(self.items)
        total = self.items[0] + n * 2
        if n > 1 and total >= 2:
            x = self.items[1:n]
        elif n in self.seen:
            x = sorted(self.items, key=len, reverse=False)
        else:
            x = divmod(total, n)
        return x << 1
'''

#: Families whose bug is one edited line that a one-token reversal undoes.
REVERSIBLE = ("operator", "comparison", "constant", "boundary", "swap_args", "invert_flag")


def _same(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        s = s.strip()
        s = ("if   " + s[5:]) if s.startswith("elif ") else s
        for attempt in (s, s + "\n    pass"):
            try:
                return ast.dump(ast.parse(attempt))
            except SyntaxError:
                continue
        return s

    return norm(a) == norm(b)


def test_candidates_undo_every_one_line_mutation_of_the_reversible_families() -> None:
    found = [m for m in mutations("box.py", SNIPPET) if m.family in REVERSIBLE]
    assert {m.family for m in found} == set(REVERSIBLE)
    old_lines = SNIPPET.splitlines()
    for m in found:
        new_lines = m.source.splitlines()
        changed = [(i, j) for tag, i, _, j, _ in difflib.SequenceMatcher(None, old_lines, new_lines).get_opcodes()
                   if tag != "equal"]
        assert len(changed) == 1, m
        i, j = changed[0]
        likely, unlikely = line_candidates(new_lines[j])
        assert any(_same(c, old_lines[i]) for c in likely + unlikely), (m.family, new_lines[j], likely, unlikely)
        for c in likely + unlikely:  # every candidate keeps the indentation and parses
            assert c.startswith(new_lines[j][: len(new_lines[j]) - len(new_lines[j].lstrip())])


def test_candidates_skip_comments_docstring_lines_and_else() -> None:
    for line in ("    # x = a + b", "    else:", "    @decorator", "    ", "    try:"):
        assert line_candidates(line) == ([], [])


def test_parsing_issue_traceback_and_code() -> None:
    issue = "1 test(s) of p 1.0 fail, e.g.:\n- `tests/test_a.py::test_b[x-1]`\n- `tests/test_a.py::TestC::test_d`\n"
    assert failing_tests(issue) == ["tests/test_a.py::test_b[x-1]", "tests/test_a.py::TestC::test_d"]
    tb = ("tests/test_a.py:12: in test_b\n    assert f(1) == 2\nsrc/p/core.py:40: in f\n    return g(x)\n"
          "/work/src/p/util.py:7: in g\n    raise ValueError\nE   ValueError\n")
    assert traceback_frames(tb) == [("tests/test_a.py", 12, "test_b"), ("src/p/core.py", 40, "f"),
                                    ("src/p/util.py", 7, "g")]
    assert called_names("    assert parse_version(v).bump(len(x)) == Version(1)") == ["parse_version", "bump",
                                                                                         "Version"]
    assert [is_test_file(p) for p in ("tests/x.py", "p/test_y.py", "p/y_test.py", "conftest.py", "src/p/m.py",
                                      "toolz/tests/test_z.py", "p/testing/a.py")] == [True] * 4 + [False, True, True]
    shown = numbered_lines("1\tdef f(a):\n2\t    '''doc\n3\t    x = 1\n4\t    '''\n5\t    y = a + 1\n"
                           "6\t    return y\n7\t\n8\tdef g():\n9\t    return 2\n")
    assert enclosing_function(shown, 5) == [5, 6, 1]  # nearest first; the docstring's lines left out


def test_agent_starts_over_on_a_reset_observation_without_reset() -> None:
    """A user loop that calls only ``act`` (no ``agent.reset``) must not feed the next episode's issue to the last
    episode's script (it used to submit at once, or treat the issue as a command's output)."""
    import gymnasium as gym

    env = gym.make("arl_envs:arl/code.swe-v0", project="inflection")  # never reset: act only renders calls
    agent = SearchPatchAgent(env)
    issue = "Issue:\n- `test_inflection.py::test_{}[a-b]`\nYou have 30 turns."
    first = agent.act(issue.format("one"), {"turn": 0})
    assert "test_one" in first and "pytest" in first
    second = agent.act(issue.format("two"), {"turn": 0})
    assert "test_two" in second and "pytest" in second, second
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("instance_id", ["inflection__operator__798bfb0551", "inflection__constant__3e99dd3490"])
def test_agent_resolves_shipped_instances_through_the_tools_only(instance_id: str) -> None:
    import gymnasium as gym

    from arl_envs.agents.agents import run_episode
    from arl_envs.envs.code.swe.env import _pristine_files

    from arl_envs_tests.envs.code.conftest import skip_unless_backend

    skip_unless_backend("bwrap")
    env = gym.make("arl_envs:arl/code.swe-v0", project="inflection", instance_id=instance_id)
    try:
        agent = SearchPatchAgent(env)
        ep = run_episode(env, agent, seed=0, options={"task_id": instance_id})
        assert ep.success and ep.infos[-1]["reward_components"]["task"] == 1.0, ep.actions
        assert ep.actions[-1] == "<submit/>" and agent.edits_tried >= 1
        for action in ep.actions:  # every edit is a patch of library code
            assert not action.startswith(("<write_file", "<str_replace")), action
            if action.startswith("<apply_patch>"):
                paths = [line[len("--- a/"):] for line in action.splitlines() if line.startswith("--- a/")]
                assert paths and not any(is_test_file(p) for p in paths), action
        sandbox = env.unwrapped._holder.get()
        project = env.unwrapped.project
        for path, data in _pristine_files("inflection").items():
            if any(path == t or path.startswith(t.rstrip("/") + "/") for t in project.tests):
                assert sandbox.read_file(path, 1 << 22) == data, path  # the test files are untouched
    finally:
        env.close()


@pytest.mark.slow
def test_agent_fails_a_bug_that_deleted_code() -> None:
    """A dropped statement has no one-token reversal: the agent submits unresolved (it does not cheat)."""
    import gymnasium as gym

    from arl_envs.agents.agents import run_episode
    from arl_envs.envs.code.swe import list_instances

    from arl_envs_tests.envs.code.conftest import skip_unless_backend

    skip_unless_backend("bwrap")
    inst = next(r for r in list_instances("all", "inflection") if r["family"] == "drop_statement")
    env = gym.make("arl_envs:arl/code.swe-v0", project="inflection", instance_id=inst["instance_id"], max_turns=8)
    try:
        ep = run_episode(env, SearchPatchAgent(env), seed=0, options={"task_id": inst["instance_id"]})
        assert not ep.success and ep.infos[-1]["reward_components"].get("task", 0.0) == 0.0
    finally:
        env.close()
