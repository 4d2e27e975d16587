"""The docs site's environment catalogue, generated from the id table (``arl_envs/registration.py``).

One Markdown page per domain (``arl/<domain>.<task>-vN``), one section per id with: its description, entry point,
registered kwargs and tags; the reward parts and their default weights (``default_reward_weights``); the
constructor kwargs with defaults (the ``__init__`` signatures along the class hierarchy, down to ``AgentEnv``);
expert and random success from ``benchmarks/scoreboard.jsonl`` (the newest row of the id, or of an earlier version
of it, labelled so); the class docstring; and an example: the observation after ``reset(seed=0)``, the expert's
first action and the rendered transcript of an expert episode (at most :data:`MAX_EXAMPLE_STEPS` steps).

Ids tagged with one of :data:`STATIC_TAGS` (a browser, a JVM, a sandbox, a server) are not run at build time (slow and
fragile there): their example is read from ``docs/cached/<id>.txt`` when that file exists (written by
``python3 docs/gen_catalogue.py --cache ID ...`` with the real env), else the page says so.

Run by the MkDocs hook ``docs/hooks.py`` on every build (nothing generated is checked in), or by hand:
``python3 docs/gen_catalogue.py --out DIR`` writes the pages into DIR.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import signal
import sys
import traceback
from collections import OrderedDict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCOREBOARD = ROOT / "benchmarks" / "scoreboard.jsonl"
CACHE_DIR = ROOT / "docs" / "cached"
#: Tags whose ids are not run at docs-build time (they start a browser, a JVM or a sandbox, or need a server).
STATIC_TAGS = frozenset({"browser", "slow", "sandbox", "docker", "jvm", "remote"})
#: Steps of the expert episode shown in the transcript.
MAX_EXAMPLE_STEPS = 6
#: Seconds one id's example may take before it is reported as failed.
EXAMPLE_TIMEOUT_S = 30
#: Longest text shown in one code block, in lines and characters.
MAX_LINES, MAX_CHARS = 60, 4000

DOMAIN_TITLES = {
    "math": "Math",
    "search": "Search",
    "code": "Code",
    "multiagent": "Multi-agent games",
    "embodied": "Embodied",
    "web": "Web",
    "memory": "Memory",
    "selfplay": "Self-play",
    "tooluse": "Tool use",
    "remote": "Remote (a served env)",
    "example": "Example",
}


def domain_of(env_id: str) -> str:
    """``"math"`` for ``arl/math.arithmetic-v1``; ``"remote"`` for ``arl/remote-v0`` (an id without a task)."""
    name = env_id.split("/", 1)[1]
    return name.split(".", 1)[0] if "." in name else name.rsplit("-v", 1)[0]


def slug(env_id: str) -> str:
    """A file-name form of an id: ``arl/math.arithmetic-v1`` -> ``arl_math.arithmetic-v1``."""
    return env_id.replace("/", "_")


def base_id(env_id: str) -> str:
    """The id without its version: ``arl/math.arithmetic-v1`` -> ``arl/math.arithmetic``."""
    return env_id.rsplit("-v", 1)[0]


def domains() -> "OrderedDict[str, list[Any]]":
    """Domain -> its table rows, in the order of the id table."""
    from arl_envs.registration import ENVS

    out: OrderedDict[str, list[Any]] = OrderedDict()
    for row in ENVS:
        out.setdefault(domain_of(row.id), []).append(row)
    return out


def title(domain: str) -> str:
    return DOMAIN_TITLES.get(domain, domain.replace("_", " ").capitalize())


def load_scoreboard(path: Path = SCOREBOARD) -> dict[tuple[str, str], dict[str, Any]]:
    """(env_id, agent) -> the newest scoreboard row (the file is appended to, so later rows are newer)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    if not path.exists():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            rows[(r["env_id"], r["agent"])] = r
    return rows


def score_cell(board: dict[tuple[str, str], dict[str, Any]], env_id: str, agent: str) -> str:
    """``"6/6 (100%)"``, the same for an earlier version of the id (labelled), or ``"not measured"``."""
    row = board.get((env_id, agent))
    label = ""
    if row is None:
        older = [r for (i, a), r in board.items() if a == agent and base_id(i) == base_id(env_id)]
        if not older:
            return "not measured"
        row = older[-1]
        label = f" (measured on `{row['env_id']}`)"
    ok = sum(bool(s) for s in row["successes"])
    n = len(row["successes"])
    errors = f", {row['env_errors']} env errors" if row.get("env_errors") else ""
    return f"{ok}/{n} ({ok / max(n, 1):.0%}){errors}{label}"


def entry_class(row: Any) -> type:
    module, name = row.entry_point.split(":")
    return getattr(importlib.import_module(module), name)


def init_kwargs(cls: type) -> list[tuple[str, str, str, str]]:
    """(name, type, default, defined in) of every keyword parameter of ``cls(...)`` down to ``AgentEnv``."""
    from arl_envs.core.env import AgentEnv

    out, seen = [], set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        forwards = False
        for p in list(inspect.signature(init).parameters.values())[1:]:
            if p.kind is p.VAR_KEYWORD:
                forwards = True
            elif p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in seen:
                seen.add(p.name)
                ann = p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation)
                ann = "" if p.annotation is p.empty else ann
                default = "required" if p.default is p.empty else repr(p.default)
                out.append((p.name, ann, default, klass.__name__))
        if not forwards or klass is AgentEnv:
            break
    return out


def fence(text: str, lang: str = "text") -> str:
    """``text`` in a fenced code block (cut at :data:`MAX_LINES` / :data:`MAX_CHARS`), fence longer than any run
    of backticks inside it."""
    lines = text.rstrip("\n").splitlines()
    cut = len(lines) > MAX_LINES or len(text) > MAX_CHARS
    text = "\n".join(lines[:MAX_LINES])[:MAX_CHARS]
    if cut:
        text += "\n[... cut for the docs ...]"
    run, longest = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout(f"the example took more than {EXAMPLE_TIMEOUT_S} s")


def play_example(env_id: str, seed: int = 0) -> dict[str, str]:
    """Reset ``env_id`` with ``seed``, play its expert for up to :data:`MAX_EXAMPLE_STEPS` steps.

    Returns:
        ``{"observation", "action", "transcript", "outcome"}`` (texts).
    """
    import gymnasium as gym

    import arl_envs  # noqa: F401 - registers the ids

    env = gym.make(env_id, render_mode="ansi")
    try:
        obs, _ = env.reset(seed=seed)
        core = env.unwrapped
        first = core.expert_action()
        action, steps, total, end = first, 0, 0.0, "not ended"
        while steps < MAX_EXAMPLE_STEPS:
            _, reward, terminated, truncated, info = env.step(action)
            steps += 1
            total += reward
            if terminated or truncated:
                end = f"{'terminated' if terminated else 'truncated'}, success={info.get('success')}"
                break
            action = core.expert_action()
        outcome = f"expert, seed {seed}: {steps} step(s), return {total:+.2f}, {end}"
        return {"observation": obs, "action": first, "transcript": env.render() or "", "outcome": outcome}
    finally:
        env.close()


def example_text(env_id: str) -> dict[str, str]:
    """:func:`play_example` under a timeout (SIGALRM where this is the main thread)."""
    use_alarm = hasattr(signal, "SIGALRM") and __import__("threading").current_thread() is __import__(
        "threading"
    ).main_thread()
    old = None
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(EXAMPLE_TIMEOUT_S)
    try:
        return play_example(env_id)
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


def cached_example(env_id: str) -> dict[str, str] | None:
    path = CACHE_DIR / f"{slug(env_id)}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def id_section(row: Any, board: dict[tuple[str, str], dict[str, Any]], warn: Any, shown: set | None = None) -> str:
    """The Markdown section of one id; ``shown``: classes whose docstring an earlier section of the page shows."""
    out = [f"## `{row.id}`", "", row.description, ""]
    try:
        cls = entry_class(row)
    except Exception as exc:  # noqa: BLE001 - an optional dependency missing here: the page says which
        warn(f"{row.id}: cannot import {row.entry_point}: {exc}")
        return "\n".join([*out, f"*Not importable when these docs were built: `{exc}`.*", ""])
    weights = getattr(cls, "default_reward_weights", {}) or {}
    parts = ", ".join(f"`{k}` {v:g}" for k, v in weights.items()) or "-"
    out += [
        "| | |",
        "|---|---|",
        f"| Entry point | `{row.entry_point}` |",
        f"| Registered kwargs | `{json.dumps(row.kwargs)}` |" if row.kwargs else "| Registered kwargs | none |",
        f"| Tags | {', '.join(row.tags) or '-'} |",
        f"| Reward parts (default weights) | {parts} |",
        f"| Turn limit (`max_turns` default) | {getattr(cls, 'default_max_turns', '-')} |",
        f"| Expert success (scoreboard) | {score_cell(board, row.id, 'expert')} |",
        f"| Random success (scoreboard) | {score_cell(board, row.id, 'random')} |",
        "",
    ]
    kwargs = init_kwargs(cls)
    if kwargs:
        out += ["| kwarg | type | default | from |", "|---|---|---|---|"]
        # (a `|` inside a code span does not split a cell in Python-Markdown's tables)
        out += [f"| `{n}` | {f'`{t}`' if t else ''} | `{d}` | {k} |" for n, t, d, k in kwargs]
        out.append("")
    doc = inspect.getdoc(cls) or ""
    if doc and shown is not None and cls in shown:
        out += [f"*`{cls.__name__}`'s docstring: in the first section of this page that uses it.*", ""]
    elif doc:
        out += [f'??? info "{cls.__name__} docstring"', "", _indent(fence(doc)), ""]
        if shown is not None:
            shown.add(cls)
    static = set(row.tags) & STATIC_TAGS
    example = None
    if static:
        example = cached_example(row.id)
        if example is None:
            out += [
                f"*No example generated at docs-build time (tagged {', '.join(sorted(static))}: it needs a browser, "
                f"a JVM, a sandbox or a server). Play it with `arl-envs play {row.id} --agent expert`.*",
                "",
            ]
            return "\n".join(out)
        note = "cached (`docs/cached/`, written by `python3 docs/gen_catalogue.py --cache ID` with the real env)"
    else:
        try:
            example = example_text(row.id)
        except Exception as exc:  # noqa: BLE001 - reported as a build warning (fails `mkdocs build --strict`)
            warn(f"{row.id}: example failed: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
            return "\n".join([*out, f"*Example failed when these docs were built: `{type(exc).__name__}`.*", ""])
        note = "generated when these docs were built"
    out += [
        f"**Example** ({note}; {example['outcome']}).",
        "",
        '=== "Observation after reset(seed=0)"',
        "",
        _indent(fence(example["observation"])),
        "",
        '=== "Expert\'s first action"',
        "",
        _indent(fence(example["action"])),
        "",
        '=== "Rendered transcript"',
        "",
        _indent(fence(example["transcript"])),
        "",
    ]
    return "\n".join(out)


def _indent(text: str) -> str:
    return "\n".join(("    " + line) if line else "" for line in text.splitlines())


def domain_page(domain: str, rows: list[Any], board: dict, warn: Any, intro: str = "") -> str:
    """The whole page of one domain."""
    head = [
        f"# {title(domain)} (`arl/{domain}.*`)",
        "",
        "*The tables and examples on this page are generated from the id table (`arl_envs/registration.py`) and "
        "`benchmarks/scoreboard.jsonl` by `docs/gen_catalogue.py` when the site is built.*",
        "",
        "| id | description |",
        "|---|---|",
        *[f"| [`{r.id}`](#{_anchor(r.id)}) | {r.description.replace('|', chr(92) + '|')} |" for r in rows],
        "",
    ]
    if intro:
        head += [intro.rstrip(), ""]
    shown: set = set()
    return "\n".join(head + [id_section(r, board, warn, shown) for r in rows])


def _anchor(env_id: str) -> str:
    """The anchor MkDocs' toc extension gives the heading ``## `<env_id>` ``."""
    keep = "".join(ch if (ch.isalnum() or ch in "-_ ") else "" for ch in env_id.lower())
    return keep.replace(" ", "-")


def index_page(doms: "OrderedDict[str, list[Any]]") -> str:
    lines = [
        "# Environment catalogue",
        "",
        "Every registered id, by domain (generated from `arl_envs/registration.py` at build time). "
        "`arl-envs list` prints the same table.",
        "",
        "| domain | ids |",
        "|---|---|",
    ]
    for d, rows in doms.items():
        lines.append(f"| [{title(d)}]({d}.md) | {len(rows)} |")
    return "\n".join(lines) + "\n"


#: Extension points that are not env classes of the id table: a web task (``arl/web.<name>-v0`` wraps it in
#: ``WebEnv``) and a text game (``arl/multiagent.*`` seats wrap it in ``GameSeatEnv``).
EXTRA_BASES = ("arl_envs.envs.web.task:WebTask", "arl_envs.envs.multiagent.base:TextGameEnv")


def domain_bases() -> list[type]:
    """The abstract classes an env of the id table derives from below ``AgentEnv`` (``MathEnv``, ``CommandEnv``...),
    in table order, then :data:`EXTRA_BASES`."""
    from arl_envs.core.env import AgentEnv
    from arl_envs.registration import ENVS

    found: list[type] = []
    for row in ENVS:
        try:
            cls = entry_class(row)
        except Exception:  # noqa: BLE001 - not importable here: its page says so
            continue
        for klass in cls.__mro__[1:]:
            if klass is AgentEnv:
                break
            if inspect.isabstract(klass) and klass not in found:
                found.append(klass)
    for spec in EXTRA_BASES:
        module, name = spec.split(":")
        try:
            found.append(getattr(importlib.import_module(module), name))
        except Exception:  # noqa: BLE001 - optional extra not installed
            continue
    return found


def base_template(base: type) -> str:
    """A copyable skeleton subclass of ``base``: every abstract method with its signature and docstring."""
    lines = [
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        f"from {base.__module__} import {base.__name__}",
        "",
        "",
        f"class MyEnv({base.__name__}):",
        '    """What the task is. Sections as in the example: Description / Observation / Action / Rewards / '
        'Episode end / Arguments / Version history."""',
        "",
    ]
    for name in sorted(getattr(base, "__abstractmethods__", ())):
        fn = inspect.getattr_static(base, name)
        is_prop = isinstance(fn, property)
        func = fn.fget if is_prop else getattr(fn, "__func__", fn)
        sig = _signature(func)
        doc = (inspect.getdoc(func) or "").strip().splitlines()
        if is_prop:
            lines.append("    @property")
        lines.append(f"    def {name}{sig}:")
        if doc:
            lines.append(f'        """{doc[0]}"""')
        lines += ["        raise NotImplementedError", ""]
    return "\n".join(lines).rstrip() + "\n"


def _signature(func: Any) -> str:
    """``(self, x: int = 1) -> str`` with string annotations written bare (as in the source)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return "(self)"

    def ann(a: Any) -> str:
        return a if isinstance(a, str) else inspect.formatannotation(a)

    params = []
    for p in sig.parameters.values():
        text = p.name if p.kind is not p.VAR_KEYWORD else f"**{p.name}"
        text = f"*{p.name}" if p.kind is p.VAR_POSITIONAL else text
        if p.annotation is not p.empty:
            text += f": {ann(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
        params.append(text)
    ret = "" if sig.return_annotation is sig.empty else f" -> {ann(sig.return_annotation)}"
    return f"({', '.join(params)}){ret}"


def templates_page() -> str:
    """The generated half of "Add an environment": one skeleton per domain base."""
    out = [
        "## One template per domain base",
        "",
        "*Generated from the classes when the site is built (`docs/gen_catalogue.py`): every method the base "
        "leaves abstract, with its signature and the first line of its docstring. Read the base's docstring for "
        "the hooks it offers beyond these.*",
        "",
    ]
    for base in domain_bases():
        first = (inspect.getdoc(base) or "").splitlines()[0] if inspect.getdoc(base) else ""
        out += [f"### `{base.__module__}.{base.__name__}`", "", first, "", fence(base_template(base), "python"), ""]
    return "\n".join(out)


def write_cache(env_ids: list[str]) -> None:
    """Play each id for real and save its example under ``docs/cached/`` (for ids not run at build time)."""
    CACHE_DIR.mkdir(exist_ok=True)
    for env_id in env_ids:
        ex = play_example(env_id)
        (CACHE_DIR / f"{slug(env_id)}.json").write_text(json.dumps(ex, indent=1) + "\n", encoding="utf-8")
        print(f"{env_id}: {ex['outcome']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the catalogue pages into this folder")
    ap.add_argument("--cache", nargs="+", metavar="ID", help="play these ids and save their examples in docs/cached/")
    a = ap.parse_args(argv)
    if a.cache:
        write_cache(a.cache)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        board, doms = load_scoreboard(), domains()
        (out / "index.md").write_text(index_page(doms), encoding="utf-8")
        for d, rows in doms.items():
            page = domain_page(d, rows, board, lambda m: print("WARNING", m, file=sys.stderr))
            (out / f"{d}.md").write_text(page, encoding="utf-8")
    if not (a.cache or a.out):
        ap.error("give --out DIR and/or --cache ID ...")
    return 0


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT), str(ROOT / "baselines")]
    raise SystemExit(main())
