from __future__ import annotations

import pytest

from arl_envs.core.actions import (
    ParseError,
    boxed_contents,
    extract_tags,
    fenced_code_blocks,
    format_json_tool_call,
    last_boxed,
    parse_json_tool_calls,
    strip_tags,
)


def test_closing_tag_inside_json_string_is_data() -> None:
    text = '<tool_call>{"name":"python","arguments":{"code":"print(\'</tool_call>\')"}}</tool_call>'
    (call,) = parse_json_tool_calls(text)
    assert call.name == "python"
    assert call.arguments == {"code": "print('</tool_call>')"}


def test_nested_json_arguments() -> None:
    text = 'thinking... <tool_call>{"name": "f", "arguments": {"a": {"b": [1, {"c": null}]}, "d": "x"}}</tool_call>'
    (call,) = parse_json_tool_calls(text)
    assert call.arguments == {"a": {"b": [1, {"c": None}]}, "d": "x"}


def test_missing_last_brace_is_explicit_error() -> None:
    text = '<tool_call>{"name": "search", "arguments": {"query": "x"}</tool_call>'
    with pytest.raises(ParseError, match="not valid JSON"):
        parse_json_tool_calls(text)


def test_missing_close_tag_and_stray_close() -> None:
    with pytest.raises(ParseError, match="closing"):
        parse_json_tool_calls('<tool_call>{"name": "a", "arguments": {}}')
    with pytest.raises(ParseError, match="without an opening"):
        parse_json_tool_calls('{"name": "a"}</tool_call>')


def test_bad_shapes() -> None:
    with pytest.raises(ParseError, match="name"):
        parse_json_tool_calls('<tool_call>{"arguments": {}}</tool_call>')
    with pytest.raises(ParseError, match="object"):
        parse_json_tool_calls('<tool_call>[1, 2]</tool_call>')
    with pytest.raises(ParseError, match="arguments"):
        parse_json_tool_calls('<tool_call>{"name": "a", "arguments": 5}</tool_call>')


def test_string_encoded_arguments_and_multiple_calls_and_none() -> None:
    text = '<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call> and <tool_call>{"name": "b", "arguments": {}}</tool_call>'
    calls = parse_json_tool_calls(text)
    assert [c.name for c in calls] == ["a", "b"]
    assert calls[0].arguments == {"x": 1}
    assert parse_json_tool_calls("no calls here") == []


def test_roundtrip() -> None:
    text = format_json_tool_call("answer", {"answer": "中文 </tool_call> 🙂"})
    (call,) = parse_json_tool_calls(text)
    assert call.arguments == {"answer": "中文 </tool_call> 🙂"}


def test_boxed_extraction() -> None:
    long = "x + " * 37 + "y^{2}"
    assert len(long) >= 150
    assert last_boxed(f"so \\boxed{{{long}}}") == long
    assert last_boxed("a \\boxed{1} b \\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert last_boxed("no box") is None
    assert last_boxed("\\boxed{unclosed") is None
    assert boxed_contents("\\boxed{a}\\fbox{b}") == ["a", "b"]
    assert last_boxed("\\boxed{ \\text{13} }") == "\\text{13}"


def test_tags_and_fences() -> None:
    assert extract_tags("<s>a</s> x <s>b\nc</s> <s>open", "s") == ["a", "b\nc"]
    assert strip_tags("q <information>fake</information> r", "information") == "q  r"
    text = "```python\nprint(1)\n```\n```bash\nls\n```\n```\nx=2\n```"
    assert fenced_code_blocks(text) == ["print(1)\n", "x=2\n"]


def test_huge_json_integers_are_parse_errors() -> None:
    """Issue 9, item 5: an integer past Python's 4,300-digit str limit is a ParseError, not a ValueError."""
    big = "9" * 5000
    for text in ('<tool_call>{"name": "answer", "arguments": {"text": ' + big + "}}</tool_call>",
                 '<tool_call>{"name": "answer", "arguments": "{\\"text\\": ' + big + '}"}</tool_call>'):
        with pytest.raises(ParseError, match="could not be decoded|not a JSON object"):
            parse_json_tool_calls(text)


def test_find_blocks_agrees_with_the_regex_it_replaces() -> None:
    """find_blocks == re.finditer(opener + '(.*?)' + closer) on random mixes of tags (back-references included)."""
    import random
    import re

    from arl_envs.core.actions import find_blocks, remove_blocks

    rng = random.Random(0)
    pieces = ["<a>", "</a>", "<b>", "</b>", "<A>", "</B>", "x", "\n", "<", ">", "/"]
    opener = re.compile(r"<(a|b)>", re.IGNORECASE)
    ref = re.compile(r"<(a|b)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        got = [(b.opener.start(), b.content(), b.end)
               for b in find_blocks(text, opener, lambda m: f"</{m.group(1)}>", ignore_case=True)]
        want = [(m.start(), m.group(2), m.end()) for m in ref.finditer(text)]
        assert got == want, text
        blocks = find_blocks(text, opener, lambda m: f"</{m.group(1)}>", ignore_case=True)
        assert remove_blocks(text, blocks, " ") == ref.sub(" ", text)


def test_parse_untrusted_python_never_warns_and_raises_only_syntax_error() -> None:
    """Model text that makes ``ast.parse`` warn or fail in other ways: a tree or a ``SyntaxError``, never a warning
    or another exception, and the result does not change under an ``error`` warnings filter."""
    import ast
    import warnings

    from arl_envs.core.actions import parse_untrusted_python

    def parse(src: str, mode: str = "eval") -> ast.AST | None:
        try:
            return parse_untrusted_python(src, mode)
        except SyntaxError:
            return None

    cases = {"1if 1else 2": ast.Expression, '"\\d"': ast.Expression, 'click("a1")': ast.Expression,
             "3 4": None, "1\x00": None, "\udfff": None, "(" * 300 + ")" * 300: None, "[" * 100_000: None}
    for src, kind in cases.items():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            tree = parse(src)
        assert seen == [], src[:20]
        assert (tree is None) if kind is None else isinstance(tree, kind), src[:20]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = parse(src)
        assert (again is None) == (tree is None), src[:20]
    assert isinstance(parse("x = 1\ny = 2", "exec"), ast.Module)
    with pytest.raises(SyntaxError, match="null bytes"):  # a ValueError from ast.parse on some versions
        parse_untrusted_python("1\x00")
