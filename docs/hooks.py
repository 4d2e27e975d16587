"""MkDocs hook: generates the pages that come from the repository rather than from ``docs/``.

* ``envs/index.md`` and ``envs/<domain>.md``: the environment catalogue (:mod:`gen_catalogue`), one page per domain
  of ``arl_envs/registration.py`` (with ``docs/intros/<domain>.md``, hand-written, when it exists), added to the nav under "Environments" in table order;
* ``add-env.md``: ``docs/intros/add-env.md`` (hand-written) + one skeleton per domain base (generated);
* ``contract.md``: ``arl_envs/CONTRACT.md``;
* ``results/RESULTS.md``, ``results/scoreboard.md`` and the figures of ``benchmarks/`` they show.

A failed example (an id that cannot be imported, reset or played by its expert) is logged as a warning, so
``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
for p in (str(ROOT / "baselines"), str(ROOT), str(ROOT / "docs")):
    if p not in sys.path:
        sys.path.insert(0, p)

import gen_catalogue  # noqa: E402 - after the path set-up above

from mkdocs.structure.files import File  # noqa: E402

log = logging.getLogger("mkdocs.plugins.arl_envs_catalogue")


def on_config(config):
    """Put one nav entry per domain right after "Environments"."""
    doms = gen_catalogue.domains()
    nav = config["nav"]
    for i, entry in enumerate(nav):
        if isinstance(entry, dict) and "Environments" in entry:
            pages = [{"Overview": "envs/index.md"}]
            pages += [{gen_catalogue.title(d): f"envs/{d}.md"} for d in doms]
            nav[i] = {"Environments": pages}
    return config


def on_files(files, config):
    board, doms = gen_catalogue.load_scoreboard(), gen_catalogue.domains()
    files.append(File.generated(config, "envs/index.md", content=gen_catalogue.index_page(doms)))
    for d, rows in doms.items():
        intro = DOCS / "intros" / f"{d}.md"
        intro_text = intro.read_text("utf-8") if intro.exists() else ""
        page = gen_catalogue.domain_page(d, rows, board, log.warning, intro_text)
        files.append(File.generated(config, f"envs/{d}.md", content=page))
    add_env = (DOCS / "intros" / "add-env.md").read_text("utf-8") + "\n" + gen_catalogue.templates_page()
    files.append(File.generated(config, "add-env.md", content=add_env))
    files.append(File.generated(config, "contract.md", content=(ROOT / "arl_envs" / "CONTRACT.md").read_text("utf-8")))
    bench = ROOT / "benchmarks"
    for name in ("RESULTS.md", "scoreboard.md"):
        files.append(File.generated(config, f"results/{name}", abs_src_path=str(bench / name)))
    for png in sorted(bench.glob("*.png")):
        files.append(File.generated(config, f"results/{png.name}", abs_src_path=str(png)))
    return files
