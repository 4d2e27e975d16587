"""Screenshots of a site's main pages (headless Chromium), taken along expert episodes.

    python3 benchmarks/site_screenshots.py [--out docs/sites] [--site shop|forum]

Writes ``shop-<page>.png`` for the shop's home, search, product, login, checkout, order and cart pages, or
``forum-<page>.png`` for the forum's home, subforum, post, profile, search, login, new-post and account pages.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from arl_envs.envs.web.sites.env import SiteEnv, templates_for


FORUM_KINDS = {"f": "subforum", "p": "post", "u": "profile", "submit": "new-post"}


def page_kind(url: str) -> str:
    path = urlsplit(url).path.split("/", 2)[-1]
    kind = {"index.html": "home", "": "home"}.get(path, path.split("/")[0])
    if path.endswith("/edit"):
        return "edit"
    return FORUM_KINDS.get(kind, kind)


def seed_of(site: str, template: str) -> int:
    """The first seed whose episode draws ``template`` (family ``all``)."""
    names = [t.name for t in templates_for(site, "all")]
    return next(s for s in range(10_000) if names[int(np.random.default_rng(s).integers(len(names)))] == template)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/sites")
    ap.add_argument("--site", default="shop", choices=["shop", "forum"])
    args = ap.parse_args()
    site = args.site
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    runs = {"shop": (("webshop", 0), ("change", 3), ("info", 20), ("nav", 2)),
            "forum": tuple(("all", seed_of("forum", n)) for n in ("create-post", "update-bio", "user-karma",
                                                                    "search-in-subforum", "edit-post-title",
                                                                    "open-top-post"))}
    for family, seed in runs[site]:
        env = SiteEnv(site, family=family, obs_mode="axtree+screenshot", viewport=(1000, 760))
        try:
            _, info = env.reset(seed=seed, options={"task_id": str(seed)} if site != "shop" else None)
            for _ in range(30):
                kind = page_kind(info["url"])
                if kind not in taken and info.get("screenshot"):
                    (out / f"{site}-{kind}.png").write_bytes(info["screenshot"])
                    taken.add(kind)
                _, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    kind = page_kind(info["url"])
                    if kind not in taken and info.get("screenshot"):
                        (out / f"{site}-{kind}.png").write_bytes(info["screenshot"])
                        taken.add(kind)
                    break
        finally:
            env.close()
    print("wrote", ", ".join(sorted(f"{site}-{k}.png" for k in taken)), "to", out)


if __name__ == "__main__":
    main()
