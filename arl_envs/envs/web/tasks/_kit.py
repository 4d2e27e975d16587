"""Shared pieces of the hand-written web tasks: page shell, word lists, seeded choices.

Every page made here is self-contained (inline CSS and JS, no external resources). The instance data a page needs
(never the hidden goal) is embedded as the JS literal ``ARL_DATA``. Each page defines ``window.arlState()``, a JSON-serialisable snapshot of its real
state (DOM values, JS state, what was submitted) that the task's validator reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from arl_envs.envs.web.task import html_page, js_value

#: CSS added to :data:`~arl_envs.envs.web.task.BASE_CSS` on every page of these tasks.
KIT_CSS = (
    "h1{font-size:20px;margin:0 0 10px 0}h2{font-size:16px;margin:10px 0 6px 0}"
    ".error{color:#b00020;font-size:13px}.muted{color:#666;font-size:13px}.row{margin:4px 0}"
    ".card{border:1px solid #ccc;border-radius:4px;padding:8px;margin:6px 0}nav a{margin-right:12px}"
)

#: JS shared by every page: ``ARL_STORE`` (sessionStorage as JSON; the env gives each episode fresh storage)
#: and ``arlEsc`` (HTML escaping for text the page inserts).
KIT_JS = """
var ARL_STORE = {
  get: function (k, dflt) { var v = window.sessionStorage.getItem('arl:' + k); return v === null ? dflt : JSON.parse(v); },
  set: function (k, v) { window.sessionStorage.setItem('arl:' + k, JSON.stringify(v)); }
};
function arlEsc(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
"""

FIRST_NAMES = (
    "Alice", "Bruno", "Chen", "Dana", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kenji", "Lena", "Marta",
    "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wei", "Yara", "Zane", "Amir",
    "Bea", "Carlos", "Dmitri", "Eva", "Femi", "Gita", "Hana", "Ivan", "Jade", "Karl", "Luis", "Mina", "Nils",
)
LAST_NAMES = (
    "Adams", "Baker", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Kowalski",
    "Lopez", "Moreau", "Nakamura", "Okafor", "Petrov", "Quinn", "Rossi", "Silva", "Tanaka", "Ueda", "Varga",
    "Weber", "Xu", "Young", "Zhang", "Novak", "Larsen", "Mendes", "Oliveira",
)
CITIES = (
    "Amsterdam", "Berlin", "Chicago", "Dublin", "Lisbon", "Madrid", "Nairobi", "Oslo", "Paris", "Prague", "Rome",
    "Seoul", "Sydney", "Tokyo", "Toronto", "Vienna", "Warsaw", "Zurich", "Denver", "Boston", "Lima", "Cairo",
)
COLORS = ("Red", "Blue", "Green", "Black", "White", "Yellow", "Purple", "Orange", "Grey", "Pink", "Teal", "Brown")
PRODUCTS = (
    "Mug", "Scarf", "Lamp", "Notebook", "Backpack", "Umbrella", "Candle", "Teapot", "Wallet", "Pillow", "Bottle",
    "Headphones", "Keyboard", "Blanket", "Vase", "Clock", "Towel", "Jacket", "Cap", "Kettle",
)
WORDS = (
    "amber", "basil", "cedar", "delta", "ember", "fjord", "glade", "harbor", "indigo", "juniper", "kestrel",
    "lumen", "maple", "nectar", "onyx", "pebble", "quartz", "raven", "sable", "tundra", "umber", "velvet",
    "willow", "yonder", "zephyr", "aspen", "birch", "coral", "dune", "echo", "flint", "garnet", "hazel", "iris",
)
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
)


def pick(rng: np.random.Generator, seq: Sequence[Any]) -> Any:
    """One element of ``seq``, chosen by ``rng``."""
    return seq[int(rng.integers(len(seq)))]


def sample(rng: np.random.Generator, seq: Sequence[Any], k: int) -> list[Any]:
    """``k`` distinct elements of ``seq`` in random order.

    Raises:
        ValueError: ``k`` exceeds ``len(seq)``.
    """
    if k > len(seq):
        raise ValueError(f"cannot sample {k} of {len(seq)} elements")
    return [seq[int(i)] for i in rng.choice(len(seq), size=k, replace=False)]


def person_names(rng: np.random.Generator, k: int) -> list[str]:
    """``k`` distinct "First Last" names."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < k:
        name = f"{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES)}"
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def page(title: str, body: str, script: str = "", data: Any = None, css: str = "") -> str:
    """A complete self-contained HTML document (W1's :func:`html_page` plus this kit's CSS and JS).

    Args:
        title: The document title (shown as the tab title).
        body: Inner HTML of ``<body>``.
        script: Page JS, run at the end of ``<body>`` after ``var ARL_DATA = <data>;`` and :data:`KIT_JS`;
            it must define ``window.arlState``.
        data: JSON-able instance data for the page script (never the hidden goal).
        css: Extra CSS.

    Returns:
        The HTML text.
    """
    return html_page(title, body, f"var ARL_DATA = {js_value(data)};\n{KIT_JS}\n{script}", KIT_CSS + css)
