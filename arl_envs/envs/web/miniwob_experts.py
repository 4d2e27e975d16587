"""Scripted experts for MiniWoB++ tasks (``arl/web.miniwob-v0``), keyed by task name in :data:`EXPERTS`.

An expert is a stateless policy: called after every step with an :class:`~arl_envs.envs.web.task.ExpertView` of
the current page, it returns ONE native action string, built with :func:`~arl_envs.envs.web.task.act` and
addressed by bid through ``view.bid(css_selector)``. It reads:

* ``view.state["utterance"]``: the page's instruction (``core.getUtterance()``), parsed with the task's template
  (the templates are the pages' own ``'Select ' + names + ' and click Submit.'`` strings);
* ``view.state["probe"]``: the result of the task's probe, a JavaScript function the page's ``arlState()`` calls
  (privileged: page globals such as ``buttonsPushed``, the text and unique CSS path -- ``window.__arlPath`` -- of
  the elements it needs, their ``checked``/``value``/visibility).

Most probes are built by :func:`elements`: ``{name: [element, ...]}`` for CSS selectors, each element
``{"sel", "text", "id", "checked", "value", "visible", "href", "cls", "data"}``.

Adding an expert: write ``def _my_task(view) -> str``, register it with ``EXPERTS["my-task"] = Expert(_my_task,
probe)``, and run ``python -m pytest arl_envs_tests/envs/web/test_miniwob.py -k my-task`` (the expert must solve
seeds 0-4).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arl_envs.envs.web.task import ExpertError, ExpertView, act


@dataclass(frozen=True)
class Expert:
    """A scripted MiniWoB++ expert.

    Attributes:
        act: ``view -> action string`` for the current state (``view.state["probe"]`` holds the probe's result,
            ``view.state["utterance"]`` the instruction).
        probe: JavaScript function expression evaluated in the page by ``arlState()`` (None: no probe).
    """

    act: Callable[[ExpertView], str]
    probe: str | None = None


#: Task name -> expert.
EXPERTS: dict[str, Expert] = {}

_ELEMENT_JS = (
    "e => ({sel: __arlPath(e), text: __arlText(e), id: e.id || null, "
    "checked: e.checked === undefined ? null : !!e.checked, value: e.value === undefined ? null : String(e.value), "
    "visible: !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length) "
    "&& getComputedStyle(e).visibility !== 'hidden', href: e.getAttribute('href'), cls: e.className && "
    "typeof e.className === 'string' ? e.className : null, data: Object.assign({}, e.dataset)})"
)


def elements(extra: dict[str, str] | None = None, **selectors: str) -> str:
    """A probe (JS function expression) returning ``{name: [element...]}`` for each ``name=css_selector``.

    Args:
        extra: ``name -> JS expression`` evaluated too (page globals, e.g. ``{"pushed": "buttonsPushed.length"}``).
        **selectors: ``name -> CSS selector`` (all matches, document order).
    """
    parts = [
        f"{json.dumps(name)}: Array.from(document.querySelectorAll({json.dumps(css)})).map({_ELEMENT_JS})"
        for name, css in selectors.items()
    ]
    for name, expr in (extra or {}).items():
        parts.append(f"{json.dumps(name)}: (function () {{ try {{ return ({expr}); }} catch (e) {{ return null; }} }})()")
    return "() => ({" + ", ".join(parts) + "})"


def _probe(view: ExpertView) -> dict[str, Any]:
    probe = view.state.get("probe")
    if not isinstance(probe, dict):
        raise ExpertError(f"no probe data on {view.url} (the episode has not started or is over)")
    return probe


def _utterance(view: ExpertView, pattern: str) -> re.Match[str]:
    text = view.state.get("utterance") or ""
    m = re.search(pattern, text, re.DOTALL)
    if m is None:
        raise ExpertError(f"utterance {text!r} does not match {pattern!r}")
    return m


def _first(items: list[dict[str, Any]], pred: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    for it in items:
        if pred(it):
            return it
    raise ExpertError(f"no element for {what}")


def _click(view: ExpertView, el: dict[str, Any] | str) -> str:
    return act("click", view.bid(el if isinstance(el, str) else el["sel"]))


def _register(name: str, probe: str | None = None) -> Callable[[Callable[[ExpertView], str]], Callable[[ExpertView], str]]:
    def deco(fn: Callable[[ExpertView], str]) -> Callable[[ExpertView], str]:
        for n in name.split():
            EXPERTS[n] = Expert(fn, probe)
        return fn

    return deco


# ------------------------------------------------------------------ click a fixed or named button
@_register("click-test")
def _click_test(view: ExpertView) -> str:
    return _click(view, "#subbtn")


@_register("click-test-2")
def _click_test_2(view: ExpertView) -> str:
    return _click(view, "#subbtn")  # the page's button ONE


@_register("click-test-transfer")
def _click_test_transfer(view: ExpertView) -> str:
    which = _utterance(view, r"Click button (ONE|TWO)\.").group(1)
    return _click(view, "#subbtn" if which == "ONE" else "#subbtn2")


@_register("click-button unicode-test", elements(buttons="#area button"))
def _click_button(view: ExpertView) -> str:
    label = _utterance(view, r'Click on the "(.*)" button\.').group(1)
    return _click(view, _first(_probe(view)["buttons"], lambda b: b["text"] == label, f"button {label!r}"))


@_register("click-button-sequence", elements(extra={"pushed": "buttonsPushed.length"}))
def _click_button_sequence(view: ExpertView) -> str:
    return _click(view, "#subbtn2" if _probe(view)["pushed"] else "#subbtn")


@_register("click-link", elements(links="#area .alink"))
def _click_link(view: ExpertView) -> str:
    text = _utterance(view, r'Click on the link "(.*)"\.').group(1)
    return _click(view, _first(_probe(view)["links"], lambda a: a["text"] == text, f"link {text!r}"))


@_register("click-widget", elements(widgets="#area .widget input, #area .widget textarea, #area .widget button"))
def _click_widget(view: ExpertView) -> str:
    kind = _utterance(view, r'Click on a "(\w+)" widget\.').group(1)
    return _click(view, _first(_probe(view)["widgets"], lambda w: w["data"].get("type") == kind, f"{kind} widget"))


# ------------------------------------------------------------------ checkboxes, radios, lists
#: Labels of the task area and which of them hold a ticked input.
_LABELS = elements(
    labels="#area label",
    extra={
        "ticked": "Array.from(document.querySelectorAll('#area label')).filter(l => "
        "l.querySelector('input') && l.querySelector('input').checked).map(l => __arlPath(l))"
    },
)


@_register("click-checkboxes click-checkboxes-large click-checkboxes-transfer", _LABELS)
def _click_checkboxes(view: ExpertView) -> str:
    names = _utterance(view, r"^Select (.*) and click Submit\.$").group(1)
    want = set() if names == "nothing" else set(names.split(", "))
    probe = _probe(view)
    ticked = set(probe["ticked"] or [])
    for label in probe["labels"]:
        on = label["sel"] in ticked
        if (label["text"] in want) != on:
            return act("uncheck" if on else "check", view.bid(f"{label['sel']} > input"))
    return _click(view, "#subbtn")


@_register("click-option", _LABELS)
def _click_option(view: ExpertView) -> str:
    name = _utterance(view, r"^Select (.*) and click Submit\.$").group(1)
    label = _first(_probe(view)["labels"], lambda lab: lab["text"] == name, f"radio {name!r}")
    if label["sel"] in set(_probe(view)["ticked"] or []):
        return _click(view, "#subbtn")
    return act("check", view.bid(f"{label['sel']} > input"))


@_register("choose-list", elements(select="#options", buttons="#area button"))
def _choose_list(view: ExpertView) -> str:
    item = _utterance(view, r"^Select (.*) from the list and click Submit\.$").group(1)
    sel = _probe(view)["select"][0]
    if sel["value"] != item:
        return act("select_option", view.bid("#options"), item)
    return _click(view, _first(_probe(view)["buttons"], lambda b: b["text"] == "Submit", "Submit"))


# ------------------------------------------------------------------ dialogs, tabs, collapsibles
@_register("click-dialog")
def _click_dialog(view: ExpertView) -> str:
    return _click(view, ".ui-dialog-titlebar button")


@_register("click-dialog-2", elements(buttons=".ui-dialog-buttonset button"))
def _click_dialog_2(view: ExpertView) -> str:
    label = _utterance(view, r'labeled "(.*)"\.').group(1)
    if label == "x":
        return _click(view, ".ui-dialog-titlebar button")
    return _click(view, _first(_probe(view)["buttons"], lambda b: b["text"] == label, f"dialog button {label!r}"))


@_register("click-tab")
def _click_tab(view: ExpertView) -> str:
    n = _utterance(view, r"Click on Tab #(\d+)\.").group(1)
    return _click(view, f'#area ul a[href="#tabs-{n}"]')


_TAB_LINKS = elements(
    links="#area .alink",
    extra={"panels": "Array.from(document.querySelectorAll('#area .alink')).map(a => a.closest('[id^=tabs-]').id)"},
)


@_register("click-tab-2 click-tab-2-easy click-tab-2-hard", _TAB_LINKS)
def _click_tab_2(view: ExpertView, empty_second_tab: bool = False) -> str:
    text = _utterance(view, r'find and click on the link "(.*)"\.').group(1)
    probe = _probe(view)
    links = [dict(link, panel=panel) for link, panel in zip(probe["links"], probe["panels"] or [])]
    if empty_second_tab and not any(a["text"] == text for a in links):
        # -medium empties tab 2; when that removed the requested link, clicking tab 2 is the page's answer
        return _click(view, "#area ul li:nth-child(2) a")
    target = _first(links, lambda a: a["text"] == text, f"link {text!r}")
    visible = [a for a in links if a["text"] == text and a["visible"]]
    if visible:
        return _click(view, visible[0])
    return _click(view, f'#area ul a[href="#{target["panel"]}"]')


@_register("click-tab-2-medium", _TAB_LINKS)
def _click_tab_2_medium(view: ExpertView) -> str:
    return _click_tab_2(view, empty_second_tab=True)


@_register("click-collapsible click-collapsible-nodelay", elements(content=".ui-accordion-content"))
def _click_collapsible(view: ExpertView) -> str:
    if any(c["visible"] for c in _probe(view)["content"]):
        return _click(view, "#subbtn")
    return _click(view, "#area h3")


# ------------------------------------------------------------------ text entry
def _fill_then(view: ExpertView, fields: list[tuple[str, str]], submit: str) -> str:
    values = _probe(view)["inputs"]
    by_sel = {v["id"]: v["value"] for v in values}
    for css, text in fields:
        if by_sel.get(css.lstrip("#")) != text:
            return act("fill", view.bid(css), text)
    return _click(view, submit)


_INPUTS = elements(inputs="#area input")


@_register("enter-text enter-text-dynamic", _INPUTS)
def _enter_text(view: ExpertView) -> str:
    text = _utterance(view, r'^Enter "(.*)" into the text field and press Submit\.$').group(1)
    return _fill_then(view, [("#tt", text)], "#subbtn")


@_register("enter-text-2", _INPUTS)
def _enter_text_2(view: ExpertView) -> str:
    m = _utterance(view, r'^Type "(.*)" in all (upper|lower) case letters')
    text = m.group(1).upper() if m.group(2) == "upper" else m.group(1).lower()
    return _fill_then(view, [("#tt", text)], "#subbtn")


@_register("enter-password", _INPUTS)
def _enter_password(view: ExpertView) -> str:
    pw = _utterance(view, r'^Enter the password "(.*)" into both text fields').group(1)
    return _fill_then(view, [("#password", pw), ("#verify", pw)], "#subbtn")


@_register("login-user", _INPUTS)
def _login_user(view: ExpertView) -> str:
    m = _utterance(view, r'username "(.*)" and the password "(.*)" into the text fields')
    return _fill_then(view, [("#username", m.group(1)), ("#password", m.group(2))], "#subbtn")


@_register("login-user-popup", elements(inputs="#area input", popup="#popup-cancel"))
def _login_user_popup(view: ExpertView) -> str:
    if _probe(view)["popup"]:
        return _click(view, "#popup-cancel")  # dismiss the distraction, stay on the page
    m = _utterance(view, r'username "(.*)" and the password "(.*)" into the text fields')
    return _fill_then(view, [("#username", m.group(1)), ("#password", m.group(2))], "#subbtn")


@_register("enter-date", _INPUTS)
def _enter_date(view: ExpertView) -> str:
    mm, dd, yyyy = _utterance(view, r"^Enter (\d\d)/(\d\d)/(\d{4}) as the date").groups()
    return _fill_then(view, [("#tt", f"{yyyy}-{mm}-{dd}")], "#subbtn")


@_register("find-word", elements(inputs="#area input", para="#area p"))
def _find_word(view: ExpertView) -> str:
    pos = _utterance(view, r"Find the (\d+)(?:st|nd|rd|th) word in the paragraph").group(1)
    words = _probe(view)["para"][0]["text"].split()
    word = re.sub(r"[^a-zA-Z]", "", words[int(pos) - 1])
    return _fill_then(view, [("#answer-input", word)], "#subbtn")


@_register("read-table", elements(inputs="#area input", cells="#tab td"))
def _read_table(view: ExpertView) -> str:
    key = _utterance(view, r"^Enter the value of (.*) into the text field").group(1)
    cells = [c["text"] for c in _probe(view)["cells"]]
    pairs = dict(zip(cells[0::2], cells[1::2]))
    if key not in pairs:
        raise ExpertError(f"no table row {key!r}")
    return _fill_then(view, [("#tt", pairs[key])], "#subbtn")


@_register("simple-arithmetic", elements(inputs="#area input", problem="#math-problem"))
def _simple_arithmetic(view: ExpertView) -> str:
    m = re.fullmatch(r"(-?\d+) ([-+x]) (-?\d+) =", _probe(view)["problem"][0]["text"])
    if m is None:
        raise ExpertError("unreadable math problem")
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    value = a + b if op == "+" else a - b if op == "-" else a * b
    return _fill_then(view, [("#math-answer", str(value))], "#subbtn")


# ------------------------------------------------------------------ focus
@_register("focus-text")
def _focus_text(view: ExpertView) -> str:
    return _click(view, "#tt")


@_register("focus-text-2")
def _focus_text_2(view: ExpertView) -> str:
    n = _utterance(view, r"Focus into the (\d)(?:st|nd|rd) input textbox\.").group(1)
    return _click(view, f"#tt{n}")


# ------------------------------------------------------------------ copy, multi-select, feedback loops
@_register("copy-paste", elements(inputs="#area input", source="#to-copy"))
def _copy_paste(view: ExpertView) -> str:
    return _fill_then(view, [("#answer-input", _probe(view)["source"][0]["value"])], "#subbtn")


@_register("copy-paste-2", elements(inputs="#area input", sources="#area textarea"))
def _copy_paste_2(view: ExpertView) -> str:
    n = _utterance(view, r"Copy the text from the (\d)(?:st|nd|rd) text area").group(1)
    source = _first(_probe(view)["sources"], lambda t: t["id"] == f"text-{n}", f"text area {n}")
    return _fill_then(view, [("#answer-input", source["value"])], "#subbtn")


@_register(
    "click-scroll-list",
    elements(
        options="#options option",
        buttons="#area button",
        extra={"selected": "Array.from(document.getElementById('options').selectedOptions).map(o => o.textContent)"},
    ),
)
def _click_scroll_list(view: ExpertView) -> str:
    wanted = _utterance(view, r"^Select (.*) from the scroll list and click Submit\.$").group(1)
    names = [o["text"] for o in _probe(view)["options"]]
    # the page joins one or two names with ", " (names such as countries may hold commas themselves)
    if wanted in names:
        pick = [wanted]
    else:
        pairs = [[a, b] for a in names for b in names if a != b and f"{a}, {b}" == wanted]
        if not pairs:
            raise ExpertError(f"no options make {wanted!r}")
        pick = pairs[0]
    if sorted(_probe(view)["selected"] or []) != sorted(pick):
        return f"select_option({json.dumps(view.bid('#options'))}, {json.dumps(pick, ensure_ascii=False)})"
    return _click(view, _first(_probe(view)["buttons"], lambda b: b["text"] == "Submit", "Submit"))


@_register("guess-number", elements(inputs="#area input", higher="#higher span", lower="#lower span",
                                    feedback="#feedback div"))
def _guess_number(view: ExpertView) -> str:
    probe = _probe(view)
    visible = {d["id"] for d in probe["feedback"] if d["visible"]}
    # stateless search from the page's own feedback: start at 5, then step towards the number
    if "higher" in visible:
        guess = int(probe["higher"][0]["text"]) + 1
    elif "lower" in visible:
        guess = int(probe["lower"][0]["text"]) - 1
    else:
        guess = 5
    return _fill_then(view, [("#tt", str(guess))], "#subbtn")
