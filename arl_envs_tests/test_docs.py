"""The docs site's generated catalogue (``docs/gen_catalogue.py``); the whole site is built by ``.ci/run``
(``mkdocs build --strict``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_catalogue", ROOT / "docs" / "gen_catalogue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_id_has_a_section_on_its_domain_page(gen):
    from arl_envs.registration import ENVS

    doms = gen.domains()
    assert sorted(r.id for rows in doms.values() for r in rows) == sorted(r.id for r in ENVS)
    index = gen.index_page(doms)
    for d in doms:
        assert f"]({d}.md)" in index


def test_example_page_is_generated_from_the_env(gen, tmp_path):
    from arl_envs.registration import ENVS

    rows = [r for r in ENVS if r.id == "arl/example.guess-v0"]
    board = tmp_path / "board.jsonl"
    board.write_text(
        json.dumps({"env_id": "arl/example.guess-v0", "agent": "expert", "successes": [True, True, False],
                    "env_errors": 0}) + "\n",
        encoding="utf-8",
    )
    warnings: list[str] = []
    page = gen.domain_page("example", rows, gen.load_scoreboard(board), warnings.append)
    assert warnings == []
    assert "## `arl/example.guess-v0`" in page
    assert "| `high` | `int` | `100` | GuessEnv |" in page  # kwargs from GuessEnv.__init__
    assert "`task` 1, `format` 0.1" in page  # reward parts from default_reward_weights
    assert "| Expert success (scoreboard) | 2/3 (67%) |" in page
    assert "| Random success (scoreboard) | not measured |" in page
    assert "Guess the number (1-100)." in page  # the observation after reset(seed=0)
    assert '{"name": "guess", "arguments": {"number": 50}}' in page  # the expert's first action (binary search)
    assert "=== assistant ===" in page and "Correct!" in page  # the rendered expert episode ends on success


def test_a_failing_example_is_a_warning(gen, monkeypatch):
    from arl_envs.registration import ENVS

    def broken(env_id):
        raise RuntimeError("grader down")

    monkeypatch.setattr(gen, "example_text", broken)
    warnings: list[str] = []
    rows = [r for r in ENVS if r.id == "arl/example.guess-v0"]
    page = gen.domain_page("example", rows, {}, warnings.append)
    assert len(warnings) == 1 and "grader down" in warnings[0]
    assert "Example failed" in page


def test_scoreboard_of_an_earlier_version_is_labelled(gen):
    board = {("arl/math.arithmetic-v0", "expert"): {"env_id": "arl/math.arithmetic-v0", "successes": [True]}}
    assert gen.score_cell(board, "arl/math.arithmetic-v1", "expert") == "1/1 (100%) (measured on `arl/math.arithmetic-v0`)"


def test_each_domain_base_gets_a_template(gen):
    bases = {b.__name__ for b in gen.domain_bases()}
    assert {"MathEnv", "CommandEnv", "WebTask", "TextGameEnv"} <= bases
    from arl_envs.envs.math.env import MathEnv

    template = gen.base_template(MathEnv)
    compile(template, "<template>", "exec")  # the skeleton is valid Python
    assert "class MyEnv(MathEnv):" in template and "def _new_task(self) -> MathTask:" in template


def test_domain_of_ids_with_and_without_a_task(gen):
    assert gen.domain_of("arl/math.arithmetic-v1") == "math"
    assert gen.domain_of("arl/remote-v0") == "remote"
