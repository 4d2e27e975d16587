"""The conformance suite over EVERY registered id: each env added to the table is checked automatically."""

from __future__ import annotations

import pytest

import arl_envs
from arl_envs.registration import ENVS
from arl_envs.testing import check_conformance


#: Ids that start a browser: their conformance runs in their domain test with fewer fuzzed actions and one
#: browser for all checks (arl_envs_tests/envs/web/test_web_conformance.py), to keep CI time down. Ids tagged
#: "domain-conformance" (Coq / sandbox-heavy) run it in their domain test with fewer fuzzed actions, likewise.
_BROWSER_IDS = {row.id for row in ENVS if "browser" in row.tags or "domain-conformance" in row.tags}


@pytest.mark.parametrize("env_id", [i for i in arl_envs.env_ids() if i not in _BROWSER_IDS])
def test_conformance(env_id: str) -> None:
    report = check_conformance(env_id)
    assert report.passed, report.summary()


def test_every_row_is_registered_and_documented() -> None:
    import gymnasium as gym

    for row in ENVS:
        assert row.id in gym.registry
        assert row.id.startswith("arl/") and row.id == row.id.lower()
        assert row.description


@pytest.mark.parametrize("env_id", [i for i in arl_envs.env_ids() if i.startswith("arl/math.")])
def test_conformance_json_format(env_id: str) -> None:
    report = check_conformance(env_id, env_kwargs={"action_format": "json"}, n_fuzz=60)
    assert report.passed, report.summary()
