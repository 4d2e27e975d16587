"""Screenshots of an offline site's pages (headless Chromium), taken along expert episodes.

    python3 benchmarks/site_screenshots.py [--site shop|tracker|admin] [--out docs/sites]

Writes ``<site>-<page>.png``: for the shop the home, search, product, login, checkout, order and cart pages; for the
tracker the projects, project, issue list, issue, new issue, merge request list and page, milestones, milestone,
labels, user, search and sign-in pages; for the admin the sign-in, dashboard, orders, order, customers, customer,
products, product and reports pages.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import urlsplit

from arl_envs.envs.web.sites.env import SiteEnv

#: site -> [(family, seed)] of the expert episodes to photograph (None: one episode per template, which covers
#: every page kind).
EPISODES = {"shop": [("webshop", 0), ("change", 3), ("info", 20), ("nav", 2)], "tracker": None, "admin": None}


def one_per_template(site: str) -> list[tuple[str, int]]:
    """(``"all"``, the first seed that draws each template of ``site``)."""
    import numpy as np

    from arl_envs.envs.web.sites.env import templates_for

    names = [t.name for t in templates_for(site, "all")]
    seeds: dict[str, int] = {}
    s = 0
    while len(seeds) < len(names):
        seeds.setdefault(names[int(np.random.default_rng(s).integers(len(names)))], s)
        s += 1
    return [("all", s) for s in seeds.values()]


def page_kind(url: str) -> str:
    path = urlsplit(url).path.split("/", 2)[-1]
    if path.startswith("projects/"):
        parts = path.split("/")[2:]
        if not parts:
            return "project"
        if len(parts) == 1:
            return parts[0]
        return {"issues": "issue", "merge_requests": "merge_request", "milestones": "milestone"}[parts[0]] + (
            "-new" if parts[1] == "new" else "")
    if path.startswith("users/"):
        return "user"
    if re.fullmatch(r"(orders|customers|products)/\d+", path):
        return path.split("/")[0].rstrip("s")
    return {"index.html": "home", "": "home"}.get(path, path.split("/")[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--site", default="shop", choices=sorted(EPISODES))
    ap.add_argument("--out", default="docs/sites")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    taken: dict[str, bool] = {}  # page kind -> whether its shot had query parameters

    def shoot(info) -> None:
        """The first visit of each page kind, replaced once by a visit with query parameters (a filled report or a
        filtered list shows more than the empty form)."""
        kind, query = page_kind(info["url"]), bool(urlsplit(info["url"]).query)
        if taken.get(kind, False) or (kind in taken and not query):
            return
        if info.get("screenshot") and re.fullmatch(r"[a-z_-]+", kind):
            (out / f"{args.site}-{kind}.png").write_bytes(info["screenshot"])
            taken[kind] = query

    for family, seed in EPISODES[args.site] or one_per_template(args.site):
        env = SiteEnv(args.site, family=family, obs_mode="axtree+screenshot", viewport=(1000, 760))
        try:
            _, info = env.reset(options={"task_id": str(seed)}) if family == "all" else env.reset(seed=seed)
            for _ in range(30):
                shoot(info)
                _, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    shoot(info)
                    break
        finally:
            env.close()
    print("wrote", ", ".join(sorted(f"{args.site}-{k}.png" for k in taken)), "to", out)


if __name__ == "__main__":
    main()
