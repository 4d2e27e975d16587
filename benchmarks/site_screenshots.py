"""Screenshots of the shop site's main pages (headless Chromium), taken along expert episodes.

    python3 benchmarks/site_screenshots.py [--out docs/sites]

Writes ``shop-<page>.png`` for the home, search, product, login, checkout, order and cart pages.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import urlsplit

from arl_envs.envs.web.sites.env import SiteEnv


def page_kind(url: str) -> str:
    path = urlsplit(url).path.split("/", 2)[-1]
    return {"index.html": "home", "": "home"}.get(path, path.split("/")[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/sites")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    for family, seed in (("webshop", 0), ("change", 3), ("info", 20), ("nav", 2)):
        env = SiteEnv("shop", family=family, obs_mode="axtree+screenshot", viewport=(1000, 760))
        try:
            _, info = env.reset(seed=seed)
            for _ in range(30):
                kind = page_kind(info["url"])
                if kind not in taken and info.get("screenshot"):
                    (out / f"shop-{kind}.png").write_bytes(info["screenshot"])
                    taken.add(kind)
                _, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    kind = page_kind(info["url"])
                    if kind not in taken and info.get("screenshot"):
                        (out / f"shop-{kind}.png").write_bytes(info["screenshot"])
                        taken.add(kind)
                    break
        finally:
            env.close()
    print("wrote", ", ".join(sorted(f"shop-{k}.png" for k in taken)), "to", out)


if __name__ == "__main__":
    main()
