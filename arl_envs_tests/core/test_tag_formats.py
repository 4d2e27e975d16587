"""The table-driven native tag formats (``arl_envs.core.actions.TagTable``): every table of every env reads back
what it writes, the envs that declare one parse their own renderings, and the table's rules behave as documented."""

from __future__ import annotations

import importlib
import pkgutil

import gymnasium as gym
import pytest

import arl_envs
import arl_envs.envs
from arl_envs.core.actions import ParseError, TagFormat, TagTable
from arl_envs.core.tools import ToolCall
from arl_envs.registration import ENVS

#: A sample value per argument: one line, no surrounding whitespace (what every body mode carries unchanged).
SAMPLE = "x = [1, 2]"
#: Modules holding the tag tables of the native formats (each must keep at least one).
TABLE_MODULES = {
    "arl_envs.envs.search.env", "arl_envs.envs.search.rewrite", "arl_envs.envs.reasoning.env",
    "arl_envs.envs.code.env", "arl_envs.envs.code.repo_env", "arl_envs.envs.code.swe.env",
    "arl_envs.envs.math.tool", "arl_envs.envs.math.formal", "arl_envs.envs.selfplay.propose_solve",
}


def _tables() -> dict[str, TagTable]:
    found = {}
    for info in pkgutil.walk_packages(arl_envs.envs.__path__, "arl_envs.envs."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency imported at module level (none of the table modules)
            continue
        for name, value in vars(module).items():
            if isinstance(value, TagTable):
                found[f"{info.name}.{name}"] = value
    return found


TABLES = _tables()


def _sample_args(table: TagTable, tool: str) -> dict[str, str]:
    args: dict[str, str] = {}
    for row in table.formats:
        if row.tool == tool and not row.fallback:
            names = [row.arg, row.attr, *(p for p, _ in row.parts)]
            args.update({n: SAMPLE for n in names if n is not None})
    return args


def test_every_native_tag_module_declares_a_table() -> None:
    assert {name.rsplit(".", 1)[0] for name in TABLES} >= TABLE_MODULES


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_table_reads_back_every_call_it_writes(name: str) -> None:
    table = TABLES[name]
    for tool in table.tools():
        call = ToolCall(tool, _sample_args(table, tool))
        parsed = table.parse(table.format(tool, call.arguments))
        assert [c.name for c in parsed] == [tool]
        # A fence's body keeps the newline written before its closing ```: the same value up to that whitespace.
        assert {k: v.strip() for k, v in parsed[0].arguments.items()} == call.arguments
        rows = [r for r in table.formats if r.tool == tool]
        assert parsed[0] == call or any(r.fence for r in rows)
        again = table.parse(table.format(tool, parsed[0].arguments))  # "code_rstrip": a fixed point after one round
        assert again == parsed or any(r.body == "code" for r in rows)


def _tag_format_ids() -> list[str]:
    ids = []
    for spec in ENVS:
        module, _, cls = spec.entry_point.partition(":")
        klass = getattr(importlib.import_module(module), cls, None)
        if isinstance(klass, type) and getattr(klass, "native_tags", None) is not None:
            ids.append(spec.id)
    return ids


TAG_FORMAT_IDS = _tag_format_ids()


def test_the_tag_format_envs_are_found() -> None:
    prefixes = {i.split("-v")[0] for i in TAG_FORMAT_IDS}
    assert {"arl/search.multihop", "arl/search.rewrite", "arl/code.repo", "arl/code.swe", "arl/math.formal"} <= prefixes


@pytest.mark.parametrize("env_id", [i for i in TAG_FORMAT_IDS if not i.startswith("arl/reasoning.")]
                         + [i for i in TAG_FORMAT_IDS if i.startswith("arl/reasoning.")][:1])
def test_an_env_parses_its_own_rendering_of_every_tool(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        env.reset(seed=0)
        inner = env.unwrapped
        table = type(inner).native_tags
        for tool in table.tools():
            args = _sample_args(table, tool)
            expected = [ToolCall(tool, inner._tool_map()[tool].validate(args))]
            assert inner.parse_action(inner.render_call(tool, args)) == expected
    finally:
        env.close()


# ----------------------------------------------------------------------------- the table's rules
ROWS = (TagFormat("search", "search", "query", empty_error="empty query"), TagFormat("answer", "answer", "text"))


def test_only_wants_exactly_one_closed_block() -> None:
    table = TagTable(ROWS, missing="none", pick="only", ignore_case=True)
    assert table.parse("<SEARCH> q </search>") == [ToolCall("search", {"query": "q"})]
    for text, error in [("<search>q", "<search> is not closed"), ("<search>a</search><answer>b</answer>", "2 actions"),
                        ("<search><search>x</search>", "2 actions"), ("<search> </search>", "empty query"),
                        ("nothing", "none")]:
        with pytest.raises(ParseError, match=error):
            table.parse(text)


def test_last_counts_and_a_fallback_only_without_the_others() -> None:
    table = TagTable((ROWS[0], TagFormat("search", "answer", "query", fallback=True)), missing="none", joint=False)
    assert table.parse("<search>a</search> <search>b</search>")[0].arguments == {"query": "b"}
    assert table.parse("<search>a</search> <answer>b</answer>")[0].arguments == {"query": "a"}
    assert table.parse("<answer>b</answer>")[0].arguments == {"query": "b"}
    assert table.format("search", {"query": "q"}) == "<search>q</search>"


def test_a_joint_scan_never_reads_a_block_inside_another() -> None:
    bash, read = TagFormat("bash", "bash", "command"), TagFormat("read_file", "read_file", "path")
    nested = "<bash><read_file>x</read_file></bash>"
    assert TagTable((bash, read), missing="none").parse(nested)[0].name == "bash"
    assert TagTable((bash, read), missing="none", joint=False).parse(nested)[0].name == "read_file"


def test_attributes_parts_and_self_closing_tags() -> None:
    table = TagTable((
        TagFormat("write_file", "write_file", "content", body="newline", attr="path"),
        TagFormat("str_replace", "str_replace", attr="path", parts=(("old", "exact"), ("new", "text"))),
        TagFormat("submit", "submit", self_closing=True),
    ), missing="none")
    assert table.parse('<write_file  path = " a.py " >\n\nx</write_file>')[0].arguments == {"path": "a.py",
                                                                                          "content": "\nx"}
    assert table.parse('<str_replace path="b"><old>o</old>\n<new>n</new></str_replace>')[0].arguments == {
        "path": "b", "old": "o", "new": "n"}
    assert table.parse("<submit />")[0] == ToolCall("submit", {})
    # a malformed block that does not count is not an error; the one that counts is
    assert table.parse('<str_replace path="b">?</str_replace><submit></submit>')[0].name == "submit"
    with pytest.raises(ParseError, match="str_replace needs <old>exact</old><new>text</new> inside it"):
        table.parse('<submit/><str_replace path="b">?</str_replace>')


def test_fences_skip_other_languages_and_all_needs_every_row() -> None:
    table = TagTable((TagFormat("propose", "python", "program", body="code", fence=("python", "")),
                      TagFormat("propose", "inputs", "inputs", body="raw")), missing="both", pick="all")
    text = "```python\nf = 1\n```\n```js\nno\n```\n<inputs>[1]</inputs>"
    assert table.parse(text)[0].arguments == {"program": "f = 1\n", "inputs": "[1]"}
    with pytest.raises(ParseError, match="both"):
        table.parse("```python\nf = 1\n```")
    assert table.format("propose", {"program": "p", "inputs": "[2]"}) == "```python\np\n```\n<inputs>[2]</inputs>"


def test_bad_table_declarations_raise() -> None:
    with pytest.raises(ValueError, match="body"):
        TagFormat("t", "t", "a", body="nope")
    with pytest.raises(ValueError, match="pick"):
        TagTable(ROWS, missing="x", pick="first")
    with pytest.raises(ValueError, match="unknown tool"):
        TagTable(ROWS, missing="x").format("nope", {})
