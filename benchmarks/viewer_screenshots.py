"""Screenshots of the episode viewer (`arl-envs view`) for the README: the list, and one web episode expanded.

Records the same episodes as the viewer's tests (:func:`arl_envs.viewer.record_sample_episodes`: tool-using math
expert, random search agent, web expert with screenshots, one env_error line), writes the page and shoots it in headless Debian Chromium.

    PYTHONPATH=$PWD:$PWD/baselines python benchmarks/viewer_screenshots.py   # -> benchmarks/viewer-*.png
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from arl_envs.envs.web.browser import find_chromium
from arl_envs.viewer import record_sample_episodes, write_viewer

OUT = Path(__file__).resolve().parent


def main() -> None:
    """Write ``benchmarks/viewer-list.png``, ``viewer-episode.png`` and ``viewer-web.png``."""
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        eps = record_sample_episodes(Path(tmp) / "episodes.jsonl")
        page_path = write_viewer(Path(tmp) / "episodes.jsonl")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), headless=True)
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(page_path.as_uri())
            page.screenshot(path=str(OUT / "viewer-list.png"))
            rows = page.locator("#episodes tbody tr")
            rows.nth(0).click()
            page.screenshot(path=str(OUT / "viewer-episode.png"), full_page=True)
            web = next(i for i, e in enumerate(eps) if e["env_id"].startswith("arl/web."))
            rows.nth(web).click()
            page.screenshot(path=str(OUT / "viewer-web.png"), full_page=True)
            browser.close()
    print(f"wrote {OUT}/viewer-list.png, viewer-episode.png, viewer-web.png")


if __name__ == "__main__":
    main()
