"""The episode viewer (`arl-envs view`): recorded episodes -> one HTML page, checked in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import arl_envs  # noqa: F401
from arl_envs.cli import app
from arl_envs.viewer import SAMPLE_ENV_ERROR_EPISODE, load_episodes, record_sample_episodes, render_html


def test_page_is_self_contained_and_escapes(tmp_path: Path) -> None:
    eps = [dict(SAMPLE_ENV_ERROR_EPISODE, observations=["</script><script>alert(1)</script>", "x"])]
    page = render_html(eps)
    assert page.count("</script>") == 2  # the data block's and the code block's, none from the data
    assert "http://" not in page and "https://" not in page and "<link" not in page
    with pytest.raises(ValueError, match="line 1|:1:"):
        (tmp_path / "bad.jsonl").write_text('{"seed": 1}\n')
        load_episodes(tmp_path / "bad.jsonl")


def test_cli_play_record_then_view(tmp_path: Path) -> None:
    runner = CliRunner()
    rec = tmp_path / "eps.jsonl"
    res = runner.invoke(app, ["play", "arl/math.arithmetic-v1", "--episodes", "2", "--record", str(rec)])
    assert res.exit_code == 0, res.output
    eps = load_episodes(rec)
    assert [e["seed"] for e in eps] == [0, 1] and all(e["success"] for e in eps)
    assert eps[0]["steps"][0]["action_error"] is None
    res = runner.invoke(app, ["view", str(rec), "-o", str(tmp_path / "page.html")])
    assert res.exit_code == 0, res.output
    assert "arl/math.arithmetic-v1" in (tmp_path / "page.html").read_text()


@pytest.mark.slow
def test_viewer_in_headless_chromium(tmp_path: Path) -> None:
    from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium

    try:
        chromium = find_chromium()
    except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
        pytest.skip(f"no Chromium on this machine: {exc}")
    from playwright.sync_api import sync_playwright

    eps = record_sample_episodes(tmp_path / "eps.jsonl")
    page_path = tmp_path / "eps.html"
    res = CliRunner().invoke(app, ["view", str(tmp_path / "eps.jsonl"), "-o", str(page_path)])
    assert res.exit_code == 0, res.output
    web = [i for i, e in enumerate(eps) if e["env_id"].startswith("arl/web.")]
    assert web and eps[web[0]]["screenshots"][0] is not None  # the recorder kept the PNGs
    errors_at = [i for i, e in enumerate(eps) if any(s["action_error"] for s in e["steps"])]
    assert errors_at, "the random search agent made no malformed action: pick other seeds"

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        page = browser.new_page()
        remote: list[str] = []
        page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        js_errors: list[str] = []
        page.on("pageerror", lambda e: js_errors.append(str(e)))
        page.goto(page_path.as_uri())
        rows = page.locator("#episodes tbody tr")
        assert rows.count() == len(eps)
        # filter by env id, then by success
        page.select_option("#env-filter", "arl/search.qa-v1")
        assert rows.count() == sum(e["env_id"] == "arl/search.qa-v1" for e in eps)
        page.select_option("#env-filter", "")
        page.select_option("#success-filter", "false")
        assert rows.count() == sum(not e["success"] for e in eps) and rows.count() < len(eps)
        page.select_option("#success-filter", "")
        # expand a tool-using expert episode: its turns, tool calls and reward parts
        rows.nth(0).click()
        ep = eps[0]
        assert page.locator("#detail .turn").count() == 1 + 2 * len(ep["actions"])
        assert page.locator("#detail .turn.tool").count() >= 1
        assert page.locator("#detail .call").first.inner_text().startswith("tool call: python(")
        parts = page.locator("#detail .parts").all_inner_texts()
        assert len(parts) == len(ep["actions"]) and all("task" in p for p in parts)
        assert "+1.000" in parts[-1]
        # an episode with malformed actions, the env_error line, a web episode with screenshots
        rows.nth(errors_at[0]).click()
        assert page.locator("#detail .action_error").count() == sum(
            bool(s["action_error"]) for s in eps[errors_at[0]]["steps"])
        rows.nth(len(eps) - 1).click()
        assert "SandboxUnavailable" in page.locator("#detail .env_error").inner_text()
        rows.nth(web[0]).click()
        shots = page.locator("#detail img.shot")
        assert shots.count() == len(eps[web[0]]["observations"])
        assert shots.first.evaluate("img => img.naturalWidth") > 0  # the PNG decodes
        assert not remote and not js_errors
        browser.close()


def _strict_json(text: str) -> object:
    """Parse as JavaScript's ``JSON.parse`` does: ``NaN`` / ``Infinity`` are not JSON."""
    def refuse(token: str) -> object:
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _data_block(page: str) -> str:
    start = page.index('id="episodes-data">') + len('id="episodes-data">')
    return page[start:page.index("</script>", start)]


def test_non_finite_numbers_blank_one_cell_not_the_page() -> None:
    """NaN / Infinity in a recorded reward (Python's json reads and writes them) reach the page as text: the
    data block is JSON that JSON.parse accepts, every episode is in it, and the values read NaN / Infinity."""
    good = dict(SAMPLE_ENV_ERROR_EPISODE, task_id="good")
    bad = dict(SAMPLE_ENV_ERROR_EPISODE, task_id="bad", rewards=[float("nan")], reward_components=[{"task": float("inf")}],
               **{"return": float("-inf")})
    data = _strict_json(_data_block(render_html([good, bad])))
    assert [e["task_id"] for e in data] == ["good", "bad"]
    assert data[1]["rewards"] == ["NaN"] and data[1]["reward_components"] == [{"task": "Infinity"}]
    assert data[1]["return"] == "-Infinity" and data[0]["rewards"] == [0.0]


def test_view_never_writes_over_its_input(tmp_path: Path) -> None:
    """A JSONL file named ``*.html`` gets its page beside it (``NAME.view.html``); the input is unchanged, and a
    second run replaces the page it wrote."""
    src = tmp_path / "eps.html"
    src.write_text(json.dumps(SAMPLE_ENV_ERROR_EPISODE) + "\n")
    before = src.read_bytes()
    runner = CliRunner()
    for _ in range(2):
        res = runner.invoke(app, ["view", str(src)])
        assert res.exit_code == 0, res.output
    assert src.read_bytes() == before
    assert "arl/code.functions-v0" in (tmp_path / "eps.view.html").read_text()
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    res = runner.invoke(app, ["view", str(link), "-o", str(src)])  # the input reached through a link
    assert res.exit_code == 2 and src.read_bytes() == before


@pytest.mark.slow
def test_page_with_a_non_finite_number_shows_every_episode_in_chromium(tmp_path: Path) -> None:
    from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium

    try:
        chromium = find_chromium()
    except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
        pytest.skip(f"no Chromium on this machine: {exc}")
    from playwright.sync_api import sync_playwright

    bad = dict(SAMPLE_ENV_ERROR_EPISODE, task_id="bad", rewards=[float("nan")], reward_components=[{"task": float("nan")}])
    bad.pop("return")
    page_path = tmp_path / "page.html"
    page_path.write_text(render_html([dict(SAMPLE_ENV_ERROR_EPISODE, task_id="good"), bad]))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        page = browser.new_page()
        js_errors: list[str] = []
        page.on("pageerror", lambda e: js_errors.append(str(e)))
        page.goto(page_path.as_uri())
        rows = page.locator("#episodes tbody tr")
        assert rows.count() == 2 and not js_errors
        assert "NaN" in rows.nth(1).inner_text() and "good" in rows.nth(0).inner_text()
        rows.nth(1).click()
        assert "NaN" in page.locator("#detail .parts").first.inner_text() and not js_errors
        browser.close()
