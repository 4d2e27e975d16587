"""Screenshots of a site's main pages (headless Chromium), taken along expert episodes.

    python3 benchmarks/site_screenshots.py [--out docs/sites] [--site shop|forum|tracker|admin]

Writes ``shop-<page>.png`` for the shop's home, search, product, login, checkout, order and cart pages,
``forum-<page>.png`` for the forum's home, subforum, post, profile, search, login, new-post and account pages,
``tracker-<page>.png`` for the tracker's projects, project, issue list, issue, new issue, merge request list and page,
milestones, milestone, labels, user, search and sign-in pages, or ``admin-<page>.png`` for the admin's sign-in,
dashboard, orders, order, customers, customer, products, product and reports pages. The tracker and the admin play one
expert episode per template and keep a page kind's first visit, replaced once by a visit with query parameters (a
filled report or a filtered list shows more than the empty form).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from arl_envs.envs.web.sites.env import SiteEnv, templates_for


FORUM_KINDS = {"f": "subforum", "p": "post", "u": "profile", "submit": "new-post"}


def page_kind(url: str) -> str:
    path = urlsplit(url).path.split("/", 2)[-1]
    if path.startswith("projects/"):  # the tracker
        parts = path.split("/")[2:]
        if not parts:
            return "project"
        if len(parts) == 1:
            return parts[0]
        return {"issues": "issue", "merge_requests": "merge_request", "milestones": "milestone"}[parts[0]] + (
            "-new" if parts[1] == "new" else "")
    if path.startswith("users/"):
        return "user"
    if re.fullmatch(r"(orders|customers|products)/\d+", path):  # the admin
        return path.split("/")[0].rstrip("s")
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
    ap.add_argument("--site", default="shop", choices=["shop", "forum", "tracker", "admin"])
    args = ap.parse_args()
    site = args.site
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if site in ("tracker", "admin"):
        one_per_template(site, out)
        return
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


def one_per_template(site: str, out: Path) -> None:
    """One expert episode per template of ``site``: each page kind's first visit, replaced once by a visit with query
    parameters."""
    names = [t.name for t in templates_for(site, "all")]
    taken: dict[str, bool] = {}  # page kind -> whether its shot had query parameters

    def shoot(info) -> None:
        kind, query = page_kind(info["url"]), bool(urlsplit(info["url"]).query)
        if taken.get(kind, False) or (kind in taken and not query):
            return
        if info.get("screenshot") and re.fullmatch(r"[a-z_-]+", kind):
            (out / f"{site}-{kind}.png").write_bytes(info["screenshot"])
            taken[kind] = query

    for name in names:
        env = SiteEnv(site, obs_mode="axtree+screenshot", viewport=(1000, 760))
        try:
            _, info = env.reset(options={"task_id": str(seed_of(site, name))})
            for _ in range(30):
                shoot(info)
                _, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    shoot(info)
                    break
        finally:
            env.close()
    print("wrote", ", ".join(sorted(f"{site}-{k}.png" for k in taken)), "to", out)


if __name__ == "__main__":
    main()
