"""``arl/web.click-link-v0``: open the news story whose link text the instruction names."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    html_escape,
    register_task,
    urls_match,
)
from arl_envs.envs.web.tasks._kit import CITIES, WORDS, page, pick

#: Sections on the front page and links per section.
N_SECTIONS = 3
LINKS_PER_SECTION = 4
SECTIONS = ("World", "Business", "Science", "Sport", "Culture", "Travel")
_TEMPLATES = (
    "{c} council votes on {w} plan",
    "{W} prices rise in {c}",
    "New {w} museum opens in {c}",
    "{c} team wins {w} cup",
    "Scientists in {c} study {w} ice",
    "{W} festival returns to {c}",
    "{c} airport adds {w} routes",
    "Startup from {c} raises funds for {w} app",
)

_INDEX_JS = """
window.arlState = () => ({page: 'front'});
"""

_STORY_JS = """
var id = new URLSearchParams(location.search).get('id');
var story = ARL_DATA.stories[id];
document.getElementById('headline').textContent = story ? story : 'Story not found';
window.arlState = () => ({page: 'story', id: id});
"""


@register_task
class ClickLink(WebTask):
    """Click the link whose text the instruction quotes, among look-alike headlines.

    Instance: ``N_SECTIONS`` sections of ``LINKS_PER_SECTION`` headline links each (``story.html?id=N``);
    several headlines share the target's city or word.
    State: ``{"page": "front" | "story", "id": str}`` plus the env's ``url``.
    Validation: done as soon as a story page is open; success iff its canonical URL is the target's
    (``/story.html?id=<target>``). Sub-goal: ``"opened-target"``.
    """

    name = "click-link"
    description = "Click the news link with the given text among look-alike headlines."
    max_turns = 6
    n_subgoals = 1

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        n = N_SECTIONS * LINKS_PER_SECTION
        city, word = pick(rng, CITIES), pick(rng, WORDS)
        headlines: list[str] = []
        while len(headlines) < n:
            # Half the headlines reuse the target's city or word, so the text must be read in full.
            c = city if rng.random() < 0.4 else pick(rng, CITIES)
            w = word if rng.random() < 0.4 else pick(rng, WORDS)
            h = pick(rng, _TEMPLATES).format(c=c, w=w, W=w.capitalize())
            if h not in headlines:
                headlines.append(h)
        target = int(rng.integers(n))
        sections = [str(s) for s in rng.choice(SECTIONS, size=N_SECTIONS, replace=False)]
        body = ["<h1>The Daily Ledger</h1>"]
        for s, name in enumerate(sections):
            body.append(f"<h2>{name}</h2><ul>")
            for k in range(LINKS_PER_SECTION):
                i = s * LINKS_PER_SECTION + k
                body.append(f'<li><a href="story.html?id={i}" data-id="{i}">{html_escape(headlines[i])}</a></li>')
            body.append("</ul>")
        story_body = '<p><a href="index.html">Front page</a></p><h1 id="headline"></h1><p>Full story follows.</p>'
        data = {"stories": {str(i): h for i, h in enumerate(headlines)}}
        return TaskInstance(
            goal={"id": str(target), "url": f"/story.html?id={target}"},
            utterance=f'Open the news story "{headlines[target]}".',
            files={
                "index.html": page("The Daily Ledger", "\n".join(body), _INDEX_JS),
                "story.html": page("Story", story_body, _STORY_JS, data),
            },
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        if state.get("page") != "story":
            return Score(done=False, success=False)
        ok = urls_match(str(state.get("url", "")), goal["url"])
        return Score(done=True, success=ok, subgoals=frozenset({"opened-target"} if ok else ()))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        return act("click", view.bid(f'a[data-id="{goal["id"]}"]'))
