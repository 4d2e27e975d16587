"""Native web action parsing (ast, never eval) and the json-format tools; no browser needed."""

from __future__ import annotations

import pytest

from arl_envs.core.actions import ParseError
from arl_envs.envs.web.actions import ACTIONS, format_action, parse_action, web_tools


def test_fill_arguments_parse_exactly_as_written():
    call = parse_action('fill("12", "a\\nb it\'s \\"q\\"")')
    assert call.name == "fill"
    assert call.arguments == {"bid": "12", "value": 'a\nb it\'s "q"'}


@pytest.mark.parametrize(
    "text, name, args",
    [
        ('click("a3")', "click", {"bid": "a3"}),
        ("click(12)", "click", {"bid": 12}),
        ('click("a3", button="right")', "click", {"bid": "a3", "button": "right"}),
        ('fill(bid="a5", value="x")', "fill", {"bid": "a5", "value": "x"}),
        ("select_option('a4', ['x', 'y'])", "select_option", {"bid": "a4", "options": ["x", "y"]}),
        ('press("a2", "Control+a")', "press", {"bid": "a2", "key_comb": "Control+a"}),
        ("scroll(0, -200.5)", "scroll", {"delta_x": 0, "delta_y": -200.5}),
        ('drag_and_drop("a1", "a2")', "drag", {"from_bid": "a1", "to_bid": "a2"}),
        ('send_msg_to_user("42")', "answer", {"text": "42"}),
        ("go_back()", "go_back", {}),
        ("tab_focus(1)", "tab_focus", {"index": 1}),
        ("noop()", "noop", {}),
        ('answer(text="""multi\nline""")', "answer", {"text": "multi\nline"}),
        ('I will click the button now: click("a7")', "click", {"bid": "a7"}),
        ('<think>maybe click("a1")?</think>\n```python\nclick("a9")\n```', "click", {"bid": "a9"}),
        ('fill("a3", "click(here) )")', "fill", {"bid": "a3", "value": "click(here) )"}),
        ('Sure. fill("a3", "text with ) paren")', "fill", {"bid": "a3", "value": "text with ) paren"}),
    ],
)
def test_parse(text, name, args):
    call = parse_action(text)
    assert call.name == name and call.arguments == args


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no action"),
        ("hello there", "no action"),
        ('click("a1")\nclick("a2")', "one action"),
        ("click(x)", "literal"),
        ('click(__import__("os").system("true"))', "literal"),
        ("explode()", "unknown action 'explode'"),
        ('click("a1", "left", "extra")', "takes"),
        ('fill("a1", value="x", value2="y")', "no argument"),
        ('click(*["a1"])', r"\*args"),
        ("click(True)", "string or a number"),
        ('click("a1"', "parentheses"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(ParseError, match=message):
        parse_action(text)


def test_parse_never_executes(tmp_path):
    marker = tmp_path / "pwned"
    text = f'fill("a1", open("{marker}", "w").write("x"))'
    with pytest.raises(ParseError):
        parse_action(text)
    assert not marker.exists()


def test_format_round_trips():
    for name, arguments in [
        ("fill", {"bid": "a1", "value": 'x\n"y" it\'s'}),
        ("click", {"bid": "a2", "button": "right"}),
        ("select_option", {"bid": "a3", "options": ["p", "q"]}),
        ("scroll", {"delta_x": 0.0, "delta_y": 300.0}),
        ("noop", {"wait_ms": 0.0}),
    ]:
        back = parse_action(format_action(name, arguments))
        assert back.name == name
        for k, v in back.arguments.items():
            assert v == arguments[k]


def test_tools_cover_every_action_with_schemas():
    tools = {t.name: t for t in web_tools()}
    assert set(tools) == set(ACTIONS)
    schema = tools["fill"].schema()["function"]["parameters"]
    assert schema["required"] == ["bid", "value"]
    assert tools["click"].validate({"bid": 12}) == {"bid": "12", "button": "left"}
    with pytest.raises(ParseError):
        tools["noop"].validate({"wait_ms": 10**9})
