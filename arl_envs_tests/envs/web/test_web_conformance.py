"""The conformance suite over every ``arl/web.<task>-v0`` id of our own tasks, with a real Chromium.

Every check of :func:`arl_envs.testing.check_conformance` runs (API, determinism, reset sequence, expert solves
seeds 0-4, random agent, fuzzed actions never raise, close twice), with fewer fuzzed actions and random episodes
than the generic suite and one browser for the whole module, to keep CI time down (the generic
``arl_envs_tests/test_conformance.py`` skips ids tagged ``browser`` for that reason).
"""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium, hold_browser  # noqa: E402
from arl_envs.envs.web.tasks import load_all  # noqa: E402
from arl_envs.registration import ENVS  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402

try:
    find_chromium()
except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
    pytest.skip(f"no Chromium on this machine: {exc}", allow_module_level=True)

#: Fuzzed actions per id (the generic suite uses 200; most are parse errors that never reach the browser).
WEB_FUZZ = 30
#: Random-agent episodes per id.
WEB_RANDOM_EPISODES = 1

OWN_IDS = [
    row.id
    for row in ENVS
    if row.entry_point == "arl_envs.envs.web.env:WebEnv" and row.kwargs.get("task") in load_all()
]


@pytest.fixture(scope="module", autouse=True)
def _one_browser():
    with hold_browser():
        yield


def test_every_task_has_an_id():
    assert sorted(OWN_IDS) == sorted(f"arl/web.{name}-v0" for name in load_all())


@pytest.mark.slow
@pytest.mark.parametrize("env_id", OWN_IDS)
def test_web_conformance(env_id: str) -> None:
    report = check_conformance(env_id, n_fuzz=WEB_FUZZ, n_random_episodes=WEB_RANDOM_EPISODES)
    assert report.passed, report.summary()
