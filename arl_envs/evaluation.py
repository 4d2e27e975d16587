"""Evaluate a model behind an OpenAI-compatible endpoint on env ids: the engine of ``arl-envs eval``.

Many episodes are in flight at once (asyncio; each model request is an ``httpx.AsyncClient`` call, each env call runs
in a worker thread so a slow env never blocks the loop). Per env id, episode ``i`` uses seed ``seed + i``, so two
models evaluated with the same ``--seed`` see the same tasks. Each env is wrapped in
:class:`~arl_envs.wrappers.ChatMessages`; the model is a :class:`~arl_envs.agents.ChatModelAgent`; an env is reused
by the next episode of its id once one ends (at most ``concurrency`` envs per id).

Output directory (:data:`RUN_FILES`):

* ``config.json``: what identifies the run (model name, URL, tool mode, tokens, temperature, env kwargs);
* ``episodes.jsonl``: one line per finished episode, the keys of :class:`~arl_envs.wrappers.RecordEpisodes` (so
  ``arl-envs view`` reads it) plus ``model``, ``tool_mode``, ``max_turns``, ``model_error``, ``env_error``,
  ``context_exceeded``, ``tokens_in`` / ``tokens_out`` (sums over the episode's requests, the server's ``usage``),
  ``first_prompt_tokens`` (the first request's prompt, counted by the server's tokenizer), ``cut_replies``
  (replies stopped at ``max_tokens``), ``model_calls`` (latency, tokens, finish reason, attempts per request),
  ``latency_s`` (model time), ``env_s`` (env time) and ``seconds`` (wall time of the episode);
* ``summary.json`` / ``summary.md``: per id, success rate (95% Wilson interval) and mean return (95% Student-t
  interval) over the scored episodes; episodes that ended on ``model_error`` or ``env_error`` are counted apart and
  not scored; a reply cut by the model's context (``context_exceeded``) ends the episode as a failure;
* ``episodes.html``: the episode viewer (:mod:`arl_envs.viewer`) of the run.

Resume: a run into a directory that holds a run of the same ``config.json`` plays only the (id, seed) pairs without
a finished line; an episode that ended on ``model_error`` or ``env_error`` is played again, and the newest line of a
pair is the one that counts.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym

from arl_envs.agents.chat_model import TOOL_MODES, ChatModelAgent, ContextLengthExceeded, ModelError
from arl_envs.core.errors import ArlError
from arl_envs.stats import mean_interval, wilson_interval

#: Files of a run directory.
RUN_FILES = ("config.json", "episodes.jsonl", "summary.json", "summary.md", "episodes.html")
#: Config keys that must match for a rerun to resume an earlier run in the same directory.
IDENTITY_KEYS = ("model_name", "tool_mode", "max_tokens", "temperature", "env_kwargs")
#: Safety cap on steps per episode (every env truncates itself well before).
MAX_STEPS = 1_000


@dataclass
class EvalConfig:
    """Settings of one evaluation run (``arl-envs eval`` options).

    Attributes:
        model_url: OpenAI API root, e.g. ``http://127.0.0.1:8080/v1``.
        model_name: The ``model`` field of the requests.
        env_ids: Env ids (patterns already resolved).
        episodes: Episodes per id.
        concurrency: Episodes in flight at once.
        seed: Episode ``i`` of every id uses seed ``seed + i``.
        max_tokens: Tokens per reply.
        tool_mode: ``native`` | ``json`` | ``openai`` (:class:`ChatModelAgent`); ``json`` and ``openai`` make the
            envs with ``action_format="json"`` unless ``env_kwargs`` says otherwise.
        temperature: Sampling temperature.
        env_kwargs: Extra env kwargs (``gym.make``), for every id.
        timeout_s: Seconds per model request.
        retries: Retries per model request.
        api_key: Bearer token (not written to ``config.json``).
    """

    model_url: str
    model_name: str
    env_ids: list[str]
    episodes: int = 10
    concurrency: int = 4
    seed: int = 0
    max_tokens: int = 512
    tool_mode: str = "native"
    temperature: float = 0.0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 120.0
    retries: int = 3
    api_key: str | None = None

    def env_kwargs_for_mode(self) -> dict[str, Any]:
        """``env_kwargs`` with ``action_format="json"`` added for the ``json`` and ``openai`` tool modes."""
        kwargs = dict(self.env_kwargs)
        if self.tool_mode in ("json", "openai"):
            kwargs.setdefault("action_format", "json")
        return kwargs

    def record(self) -> dict[str, Any]:
        """What ``config.json`` holds (no API key)."""
        out = asdict(self)
        out.pop("api_key")
        return out


def resolve_env_ids(patterns: list[str]) -> list[str]:
    """Registered ids matching any of ``patterns`` (exact ids or shell patterns such as ``arl/math.*``), in order.

    Raises:
        ValueError: A pattern matches no registered id.
    """
    import arl_envs

    known = arl_envs.env_ids()
    out: list[str] = []
    for pattern in patterns:
        hits = [e for e in known if fnmatch.fnmatchcase(e, pattern)]
        if not hits:
            raise ValueError(f"no registered env id matches {pattern!r} (see `arl-envs list`)")
        out += [h for h in hits if h not in out]
    return out


def check_eval_args(config: EvalConfig, output: str | Path, overwrite: bool = False) -> bool:
    """Check the settings and the output directory before anything is written.

    Returns:
        True when ``output`` holds an earlier run of the same config (this run resumes it).

    Raises:
        ValueError: Bad settings (tool mode, counts, URL, env kwargs an id does not take: ``InvalidKwargs``).
        FileExistsError: ``output`` is a file, or holds a run of another config and ``overwrite`` is False.
    """
    if config.tool_mode not in TOOL_MODES:
        raise ValueError(f"--tool-mode must be one of {', '.join(TOOL_MODES)}, got {config.tool_mode!r}")
    for name in ("episodes", "concurrency", "max_tokens"):
        if int(getattr(config, name)) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(config, name)}")
    if not config.model_url.startswith(("http://", "https://")):
        raise ValueError(f"--model must be an http(s) URL of an OpenAI-compatible API root, got {config.model_url!r}")
    for env_id in config.env_ids:  # an unknown kwarg or a bad value is the caller's, not every episode's env error
        spec = gym.spec(env_id)
        creator = gym.envs.registration.load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) \
            else spec.entry_point
        if isinstance(creator, type) and hasattr(creator, "check_kwargs"):
            creator.check_kwargs({**spec.kwargs, **config.env_kwargs})
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"the output directory {out} is a file")
    if overwrite or not out.is_dir():
        return False
    cfg_path = out / "config.json"
    if not cfg_path.exists():
        if any((out / name).exists() for name in RUN_FILES):
            raise FileExistsError(f"{out} holds run files without config.json: give another output, or --overwrite")
        return False
    try:
        old = json.loads(cfg_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise FileExistsError(f"{cfg_path} is unreadable ({exc}): give another output, or --overwrite") from None
    new = config.record()
    diff = [k for k in IDENTITY_KEYS if old.get(k) != new.get(k)]
    if diff:
        raise FileExistsError(
            f"{out} holds a run of another config ({', '.join(f'{k}: {old.get(k)!r} != {new.get(k)!r}' for k in diff)})"
            ": give another output, or --overwrite to replace it"
        )
    return True


def load_records(path: str | Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The newest line per ``(env_id, seed)`` of an ``episodes.jsonl`` (unparsable lines are skipped)."""
    records: dict[tuple[str, int], dict[str, Any]] = {}
    p = Path(path)
    if not p.exists():
        return records
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
            records[(str(rec["env_id"]), int(rec["seed"]))] = rec
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
    return records


def finished(rec: dict[str, Any]) -> bool:
    """Whether an episode line is final (not to be replayed on resume): no model or env error."""
    return not rec.get("model_error") and not rec.get("env_error")


class _EnvPool:
    """Idle envs per id, made on demand in the worker threads."""

    def __init__(self, kwargs: dict[str, Any], run: Callable[..., Any], tools: str = "instructions"):
        self.kwargs = kwargs
        self.tools = tools  # ChatMessages(tools=): "template" puts the schemas in info["tools"] (OpenAI tool mode)
        self.run = run
        self.idle: dict[str, list[gym.Env]] = {}
        self.all: list[gym.Env] = []

    async def get(self, env_id: str) -> gym.Env:
        free = self.idle.setdefault(env_id, [])
        if free:
            return free.pop()
        from arl_envs.wrappers import ChatMessages

        env = await self.run(lambda: ChatMessages(gym.make(env_id, **self.kwargs), tools=self.tools))
        self.all.append(env)
        return env

    def put(self, env_id: str, env: gym.Env) -> None:
        self.idle.setdefault(env_id, []).append(env)

    def discard(self, env: gym.Env) -> None:
        if env in self.all:
            self.all.remove(env)
        try:
            env.close()
        except Exception:  # noqa: BLE001 - closing a broken env must not end the run
            pass

    def close(self) -> None:
        for env in self.all:
            try:
                env.close()
            except Exception:  # noqa: BLE001
                pass
        self.all.clear()


async def _play(
    config: EvalConfig, env_id: str, seed: int, pool: _EnvPool, client: Any, run: Callable[..., Any]
) -> dict[str, Any]:
    """Play one episode; always returns its line (errors are recorded, never raised)."""
    start = time.perf_counter()
    rec: dict[str, Any] = {
        "env_id": env_id, "task_id": None, "seed": seed, "model": config.model_name, "tool_mode": config.tool_mode,
        "observations": [], "actions": [], "rewards": [], "reward_components": [], "steps": [],
        "terminated": False, "truncated": False, "success": False, "max_turns": None,
        "model_error": None, "env_error": None, "context_exceeded": None,
    }
    agent = ChatModelAgent(config.model_url, config.model_name, api_key=config.api_key,
                           temperature=config.temperature, max_tokens=config.max_tokens, tool_mode=config.tool_mode,
                           timeout_s=config.timeout_s, retries=config.retries)
    env_s = 0.0

    async def env_call(fn: Callable[[], Any]) -> Any:
        nonlocal env_s
        t = time.perf_counter()
        try:
            return await run(fn)
        finally:
            env_s += time.perf_counter() - t

    env = None
    try:
        t_make = time.perf_counter()
        env = await pool.get(env_id)
        env_s += time.perf_counter() - t_make
        obs, info = await env_call(lambda: env.reset(seed=seed))
        rec["task_id"] = info.get("task_id")
        rec["max_turns"] = getattr(env.unwrapped, "max_turns", None)
        rec["observations"].append(obs)
        agent.reset(seed)
        for _ in range(MAX_STEPS):
            try:
                action = await agent.aact(obs, info, client)
            except ModelError as exc:
                rec["model_error"] = str(exc)
                break
            except ContextLengthExceeded as exc:
                rec["context_exceeded"] = str(exc)
                rec["truncated"] = True
                break
            obs, reward, terminated, truncated, info = await env_call(lambda a=action: env.step(a))
            rec["actions"].append(action)
            rec["observations"].append(obs)
            rec["rewards"].append(float(reward))
            rec["reward_components"].append(info.get("reward_components", {}))
            rec["steps"].append({"action_error": info.get("action_error"), "env_error": info.get("env_error"),
                                 "tool_calls": info.get("tool_calls") or []})
            if info.get("env_error"):
                rec["env_error"] = str(info["env_error"])
            if terminated or truncated:
                rec.update(terminated=bool(terminated), truncated=bool(truncated),
                           success=bool(info.get("success", False)))
                break
    except ArlError as exc:  # the env cannot be made here (SandboxUnavailable, DependencyNotInstalled, ...)
        rec["env_error"] = f"unavailable: {exc}"
    except Exception as exc:  # noqa: BLE001 - an env that raises out of reset/step: infrastructure, recorded
        rec["env_error"] = f"{type(exc).__name__}: {exc}"
        if env is not None:
            pool.discard(env)
            env = None
    finally:
        if env is not None:
            pool.put(env_id, env)
    calls = agent.calls
    rec.update(
        {
            "return": float(sum(rec["rewards"])),
            "turns": len(rec["actions"]),
            "tokens_in": sum(c.tokens_in for c in calls),
            "tokens_out": sum(c.tokens_out for c in calls),
            "first_prompt_tokens": calls[0].tokens_in if calls else None,
            "cut_replies": sum(c.finish_reason == "length" for c in calls),
            "model_calls": [asdict(c) for c in calls],
            "latency_s": sum(c.latency_s for c in calls),
            "env_s": env_s,
            "seconds": time.perf_counter() - start,
        }
    )
    return rec


async def run_eval_async(
    config: EvalConfig, output: str | Path, *, progress: bool = True, log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Play every (id, seed) of ``config`` not already finished in ``output``; write the run files.

    Call :func:`check_eval_args` first (it decides whether ``output`` is resumed or replaced).

    Returns:
        The summary (:func:`summarize`) with ``wall_s`` (this call's wall time), ``played`` (episodes played now),
        ``skipped`` (finished episodes kept from an earlier run) and ``env_s`` / ``latency_s`` (env and model
        seconds summed over the episodes played now).
    """
    import httpx
    from tqdm import tqdm

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config.record(), indent=2) + "\n")
    episodes_path = out / "episodes.jsonl"
    done = {k for k, rec in load_records(episodes_path).items() if finished(rec)}
    todo = [(e, config.seed + i) for e in config.env_ids for i in range(config.episodes)
            if (e, config.seed + i) not in done]
    skipped = len(config.env_ids) * config.episodes - len(todo)

    executor = ThreadPoolExecutor(max_workers=config.concurrency + 1, thread_name_prefix="arl-eval-env")
    loop = asyncio.get_running_loop()

    async def run(fn: Callable[[], Any]) -> Any:
        return await loop.run_in_executor(executor, fn)

    pool = _EnvPool(config.env_kwargs_for_mode(), run, tools="template" if config.tool_mode == "openai" else "instructions")
    sem = asyncio.Semaphore(config.concurrency)
    bar = tqdm(total=len(todo), desc="eval episodes", unit="ep", file=sys.stderr, disable=not progress)
    played: list[dict[str, Any]] = []
    limits = httpx.Limits(max_connections=config.concurrency, max_keepalive_connections=config.concurrency)
    start = time.perf_counter()
    async with httpx.AsyncClient(timeout=config.timeout_s, limits=limits) as client:

        async def one(env_id: str, seed: int) -> None:
            async with sem:
                rec = await _play(config, env_id, seed, pool, client, run)
            with episodes_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec) + "\n")
            played.append(rec)
            bar.update(1)
            if rec["model_error"] and log is not None:
                log(f"model_error on {env_id} seed {seed}: {rec['model_error'][:200]}")

        try:
            await asyncio.gather(*(one(e, s) for e, s in todo))
        finally:
            bar.close()
            await loop.run_in_executor(executor, pool.close)
            executor.shutdown(wait=True)
    wall = time.perf_counter() - start
    summary = write_summary(out, config)
    summary.update(
        wall_s=wall, played=len(played), skipped=skipped,
        env_s=sum(r["env_s"] for r in played), latency_s=sum(r["latency_s"] for r in played),
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_eval(config: EvalConfig, output: str | Path, **kwargs: Any) -> dict[str, Any]:
    """:func:`run_eval_async` from synchronous code (starts its own event loop)."""
    return asyncio.run(run_eval_async(config, output, **kwargs))


def summarize(records: list[dict[str, Any]], env_ids: list[str]) -> list[dict[str, Any]]:
    """One row per id: ``episodes`` (scored), ``success_rate`` + ``success_ci``, ``mean_return`` + ``return_ci``,
    ``model_errors``, ``env_errors``, ``context_exceeded``, ``cut_replies``, mean ``turns`` and the id's
    ``max_turns``, mean ``tokens_in`` / ``tokens_out`` per episode, ``first_prompt_tokens`` (max over episodes),
    ``latency_s`` (mean model seconds per episode), ``seconds`` (episode wall seconds summed over the id's lines), and
    the scored ``seeds``, ``successes``, ``returns``."""
    rows = []
    for env_id in env_ids:
        recs = [r for r in records if r["env_id"] == env_id]
        scored = [r for r in recs if finished(r)]
        k = sum(bool(r["success"]) for r in scored)
        returns = [float(r["return"]) for r in scored]
        mean, lo, hi = mean_interval(returns)
        n = len(scored)
        first = [r["first_prompt_tokens"] for r in recs if r.get("first_prompt_tokens")]
        rows.append(
            {
                "env_id": env_id,
                "episodes": n,
                "success_rate": k / n if n else float("nan"),
                "success_ci": wilson_interval(k, n),
                "mean_return": mean,
                "return_ci": (lo, hi),
                "model_errors": sum(bool(r.get("model_error")) for r in recs),
                "env_errors": sum(bool(r.get("env_error")) and not r.get("model_error") for r in recs),
                "context_exceeded": sum(bool(r.get("context_exceeded")) for r in scored),
                "cut_replies": sum(int(r.get("cut_replies") or 0) for r in scored),
                "turns": sum(r["turns"] for r in scored) / n if n else float("nan"),
                "max_turns": next((r["max_turns"] for r in recs if r.get("max_turns")), None),
                "tokens_in": sum(r["tokens_in"] for r in scored) / n if n else float("nan"),
                "tokens_out": sum(r["tokens_out"] for r in scored) / n if n else float("nan"),
                "first_prompt_tokens": max(first) if first else None,
                "latency_s": sum(r["latency_s"] for r in scored) / n if n else float("nan"),
                "seconds": sum(float(r.get("seconds") or 0.0) for r in recs),
                "seeds": [r["seed"] for r in scored],
                "successes": [bool(r["success"]) for r in scored],
                "returns": returns,
            }
        )
    return rows


def format_interval(value: float, ci: tuple[float, float], pct: bool) -> str:
    if value != value:  # NaN: no scored episode
        return "-"
    if pct:
        return f"{value:.0%} [{ci[0]:.0%}, {ci[1]:.0%}]"
    return f"{value:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]"


def markdown_summary(rows: list[dict[str, Any]], config: dict[str, Any]) -> str:
    """The summary as a Markdown table with a header line naming the model and the budgets."""
    head = (f"Model `{config['model_name']}` at {config['model_url']}, tool mode {config['tool_mode']}, "
            f"<= {config['max_tokens']} tokens per reply, temperature {config['temperature']}, each id's own turn "
            f"budget (`max turns`); seeds {config['seed']}..{config['seed'] + config['episodes'] - 1} per id. "
            "Model and env errors are not scored.\n\n")
    lines = [
        "| env id | n | success [95% CI] | mean return [95% CI] | model errors | env errors | turns (max) | "
        "tokens in/out per ep | first prompt tokens | replies cut at max tokens | context exceeded |",
        "|---|---:|---|---|---:|---:|---|---|---:|---:|---:|",
    ]
    for r in rows:
        turns = "-" if r["turns"] != r["turns"] else f"{r['turns']:.1f}"
        tok = "-" if r["tokens_in"] != r["tokens_in"] else f"{r['tokens_in']:.0f} / {r['tokens_out']:.0f}"
        lines.append(
            f"| `{r['env_id']}` | {r['episodes']} | {format_interval(r['success_rate'], r['success_ci'], True)} | "
            f"{format_interval(r['mean_return'], r['return_ci'], False)} | {r['model_errors']} | {r['env_errors']} | "
            f"{turns} ({r['max_turns'] or '-'}) | {tok} | {r['first_prompt_tokens'] or '-'} | {r['cut_replies']} | "
            f"{r['context_exceeded']} |"
        )
    return head + "\n".join(lines) + "\n"


def write_summary(output: str | Path, config: EvalConfig) -> dict[str, Any]:
    """Summarise ``output/episodes.jsonl`` for ``config``'s ids and seeds; write summary.json, summary.md and the
    viewer page ``episodes.html`` (the newest line per episode)."""
    from arl_envs.viewer import render_html

    out = Path(output)
    wanted = {(e, config.seed + i) for e in config.env_ids for i in range(config.episodes)}
    records = [r for k, r in load_records(out / "episodes.jsonl").items() if k in wanted]
    rows = summarize(records, config.env_ids)
    summary = {"config": config.record(), "rows": rows,
               "model_errors": sum(r["model_errors"] for r in rows), "env_errors": sum(r["env_errors"] for r in rows)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(markdown_summary(rows, config.record()))
    records.sort(key=lambda r: (r["env_id"], r["seed"]))
    (out / "episodes.html").write_text(render_html(records, title=f"arl-envs eval: {config.model_name}"),
                                       encoding="utf-8")
    return summary
