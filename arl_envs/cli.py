"""The ``arl-envs`` command line: ``list | play | view | check | demo | eval | serve | serve-retriever | sandbox | bench |
swe``, plus ``train`` and ``scoreboard`` from ``arl_baselines`` (entry points, see :data:`CLI_GROUP`).

Run ``arl-envs --help`` for the commands and ``arl-envs COMMAND --help`` for their options.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table
from arl_envs.cli_support import (  # noqa: F401  (_check_output_file etc.: used by the commands below)
    console,
    _check_ids,
    _check_output_file,
    _cx,
    _kwargs,
    _local_ids,
    _on_pseudo_fs,
    _OneLineErrors,
)

app = typer.Typer(add_completion=False, no_args_is_help=True, cls=_OneLineErrors,
                  help="Gymnasium environments for agentic RL of LLM agents.")

#: Episodes per agent and env in ``arl-envs demo``.
DEMO_EPISODES = 5
#: Seed of the untimed warm-up episode played before the timed ones (outside the timed seeds 1000, 1001, ...).
WARMUP_SEED = 999
#: Entry-point groups through which installed packages extend the command line (``arl_baselines`` declares its
#: ``train`` and ``scoreboard`` commands and the GRPO part of the demo there, in pyproject.toml): an ``arl_envs.cli``
#: entry point is ``register(app)``; an ``arl_envs.demo`` entry point is ``run() -> bool`` (False: it could not run).
CLI_GROUP, DEMO_GROUP = "arl_envs.cli", "arl_envs.demo"
#: What to do when the entry points are missing (an install whose metadata predates them, or no torch extra).
REINSTALL_HINT = "Reinstall the package (pip install -e '.[train]' in a checkout) to get them."


def _entry_points(group: str) -> list[Any]:
    """The installed entry points of ``group``, by name."""
    from importlib.metadata import entry_points

    return sorted(entry_points(group=group), key=lambda ep: ep.name)


@app.command("list")
def list_envs(
    miniwob: bool = typer.Option(False, "--miniwob", help="List the MiniWoB++ tasks of arl/web.miniwob-v0 instead."),
) -> None:
    """List every registered env id with a one-line description."""
    if miniwob:
        from arl_envs.envs.web.miniwob import miniwob_task_rows

        table = Table("task (arl/web.miniwob-v0, task=...)", "expert", "deterministic", "note")
        for row in miniwob_task_rows():
            table.add_row(row["task"], "yes" if row["expert"] else "-", "yes" if row["deterministic"] else "no",
                          row["note"])
        console.print(table)
        return
    from arl_envs.registration import ENVS, source_library

    # Grouped by (domain, source library), groups in order of first appearance, ids in table order within each.
    groups: dict[tuple[str, str], list[Any]] = {}
    for row in ENVS:
        domain = row.id.removeprefix("arl/").split(".", 1)[0]
        groups.setdefault((domain, source_library(row)), []).append(row)
    table = Table("domain", "source", "id", "description")
    for (domain, source), rows in groups.items():
        for i, row in enumerate(rows):
            first = i == 0
            table.add_row(domain if first else "", f"{source} ({len(rows)})" if first else "", row.id,
                          row.description, end_section=i == len(rows) - 1)
    console.print(table)


@app.command()
def play(
    env_id: str = typer.Argument(..., help="Env id, e.g. arl/math.arithmetic-v1"),
    agent: str = typer.Option("expert", help="expert | random | human"),
    seed: int = typer.Option(0, min=0, help="Seed of the first episode (episode i uses seed + i)."),
    episodes: int = typer.Option(1, min=1, help="Number of episodes (>= 1)."),
    kwarg: list[str] = typer.Option([], "--kwarg", "-k", help="Env kwarg key=value (JSON values), repeatable."),
    record: Optional[str] = typer.Option(
        None, "--record", help="Append the episodes to this JSONL file (RecordEpisodes; open with `arl-envs view`)."
    ),
) -> None:
    """Play episodes with a reference agent and print the transcript and reward parts."""
    import gymnasium as gym

    import arl_envs  # noqa: F401  (registers ids)
    from arl_envs.agents import make_agent, run_episode
    from arl_envs.agents.agents import AGENTS
    from arl_envs.core.errors import ArlError

    if agent not in AGENTS:
        raise typer.BadParameter(f"unknown agent {agent!r}; choose from {', '.join(sorted(AGENTS))}",
                                 param_hint="--agent")
    _check_ids([env_id], "ENV_ID")
    _check_output_file(record, "--record")
    kwargs = _kwargs(kwarg)
    try:  # an unknown kwarg (TypeError) or a bad value (ValueError) is the user's: a usage error
        env = gym.make(env_id, render_mode="ansi", **kwargs)
    except (TypeError, ValueError, gym.error.Error) as exc:
        raise typer.BadParameter(str(exc), param_hint="--kwarg") from exc
    except ArlError as exc:  # the env cannot run on this machine (e.g. no bubblewrap): one line, exit 1
        raise _cx.ClickException(str(exc)) from exc
    if record:
        from arl_envs.wrappers import RecordEpisodes

        env = RecordEpisodes(env, record)
    try:
        for i in range(episodes):
            ag = make_agent(agent, env, seed=seed + i)
            ep = run_episode(env, ag, seed=seed + i)
            console.rule(f"{env_id} episode {i} (seed {seed + i}, task {ep.infos[0]['task_id']})")
            console.print(env.render(), markup=False, highlight=False)
            for t, info in enumerate(ep.infos[1:], 1):
                console.print(f"step {t}: reward {ep.rewards[t - 1]:+.3f} parts {info['reward_components']}", markup=False)
            console.print(
                f"return {ep.total_reward:+.3f}  success {ep.success}  steps {ep.steps}  "
                f"{'terminated' if ep.terminated else 'truncated' if ep.truncated else 'unfinished'}",
                markup=False,
            )
    finally:
        env.close()


@app.command()
def view(
    path: str = typer.Argument(..., help="JSONL file of episodes (RecordEpisodes, `arl-envs play --record`)."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o",
        help="HTML file (default: PATH with .html; PATH.view.html when PATH ends in .html). Never PATH itself, nor "
        "an existing file that is not a viewer page.",
    ),
) -> None:
    """Write a self-contained HTML page (no network) to browse recorded episodes turn by turn."""
    from arl_envs.viewer import write_viewer

    _check_output_file(output, "--output")
    try:
        out = write_viewer(path, output)
    except FileExistsError as exc:  # the page would replace the input or another file
        raise typer.BadParameter(str(exc), param_hint="--output") from exc
    except (OSError, ValueError) as exc:  # no such file, not a JSONL file of episodes
        raise typer.BadParameter(str(exc), param_hint="PATH") from exc
    console.print(f"wrote {out}", markup=False)


@app.command()
def check(
    env_ids: Optional[list[str]] = typer.Argument(None, help="Ids to check (default: every registered id)."),
    fuzz: int = typer.Option(200, min=0, help="Fuzzed actions per env."),
) -> None:
    """Run the conformance suite (arl_envs.testing) and exit 1 on any failure."""
    from arl_envs.testing import check_conformance

    ids = env_ids or _local_ids()
    _check_ids(ids)
    ok = True
    for env_id in ids:
        report = check_conformance(env_id, n_fuzz=fuzz)
        console.print(report.summary(), markup=False)
        ok &= report.passed
    raise typer.Exit(0 if ok else 1)


def play_reference_agents(env_ids: list[str], episodes: int = DEMO_EPISODES) -> list[dict[str, Any]]:
    """Play every env with its expert and random agents; one summary row per (env, agent).

    Returns:
        Rows with ``env_id``, ``agent``, ``success_rate``, ``mean_return``, ``mean_steps``, ``steps_per_s``
        (steps per wall second of ``reset`` + ``step`` + the agent, over the ``episodes`` timed episodes, after
        ``env.warm_up()`` and one untimed warm-up episode per agent), ``timed_steps``, or ``error`` when the env cannot run here.
    """
    import gymnasium as gym
    from tqdm import tqdm

    from arl_envs.agents import make_agent, run_episode
    from arl_envs.core.errors import ArlError

    rows: list[dict[str, Any]] = []
    bar = tqdm(total=len(env_ids) * 2 * episodes, desc="demo episodes", unit="ep", file=sys.stderr)
    for env_id in env_ids:
        try:
            env = gym.make(env_id)
        except ArlError as exc:  # e.g. SandboxUnavailable on a machine without bubblewrap
            rows.append({"env_id": env_id, "agent": "-", "error": str(exc)})
            bar.update(2 * episodes)
            continue
        try:
            getattr(env.unwrapped, "warm_up", lambda: None)()
            for agent_name in ("expert", "random"):
                # One untimed warm-up episode first: lazy start-up (the math-verify worker, a sandbox, a browser, a
                # JVM) is a one-off cost, not throughput.
                run_episode(env, make_agent(agent_name, env, seed=WARMUP_SEED), seed=WARMUP_SEED)
                eps = []
                for i in range(episodes):
                    eps.append(run_episode(env, make_agent(agent_name, env, seed=i), seed=1000 + i))
                    bar.update(1)
                steps = sum(e.steps for e in eps)
                secs = sum(e.seconds for e in eps)
                outcomes = [e.infos[-1].get("outcome") for e in eps]
                rows.append(
                    {
                        "env_id": env_id,
                        "agent": agent_name,
                        "success_rate": sum(e.success for e in eps) / len(eps),
                        "mean_return": sum(e.total_reward for e in eps) / len(eps),
                        "mean_steps": steps / len(eps),
                        "steps_per_s": steps / secs if secs > 0 else float("inf"),
                        "timed_steps": steps,
                        # games (arl/multiagent.*): wins/draws/losses against the env's default opponent
                        "wdl": "/".join(str(outcomes.count(k)) for k in ("win", "draw", "loss"))
                        if any(outcomes) else "",
                    }
                )
        finally:
            env.close()
    bar.close()
    return rows


@app.command()
def demo(
    episodes: int = typer.Option(DEMO_EPISODES, min=1, help="Episodes per env and agent."),
    grpo: bool = typer.Option(True, help="End with a short GRPO training run (needs the [train] extra)."),
) -> None:
    """The main job: every env played by its expert and random agents, then a short GRPO run."""

    start = time.perf_counter()
    rows = play_reference_agents(_local_ids(), episodes)
    table = Table("env id", "agent", "success", "mean return", "mean steps", "steps/s", "games W/D/L",
                  title="Reference agents (games: vs the default opponent)")
    failed = False
    for r in rows:
        if "error" in r:
            failed = True
            table.add_row(r["env_id"], "-", "[red]unavailable[/red]", r["error"][:60], "", "", "")
            continue
        table.add_row(
            r["env_id"], r["agent"], f"{r['success_rate']:.0%}", f"{r['mean_return']:+.3f}", f"{r['mean_steps']:.1f}",
            f"{r['steps_per_s']:.0f}", r.get("wdl", ""),
        )
        if r["agent"] == "expert" and r["success_rate"] < 1.0:
            failed = True
    console.print(table)
    console.print(
        f"steps/s: env steps per wall second of reset + step + agent over {episodes} timed episodes per row (seeds "
        f"1000-{999 + episodes}), after env.warm_up() and one untimed warm-up episode per agent (grader worker, "
        "sandbox, browser start-up excluded); gym.make and close are not timed.",
        markup=False,
    )
    if grpo:
        parts = _entry_points(DEMO_GROUP)
        if not parts:
            console.print(f"GRPO demo unavailable: no {DEMO_GROUP} entry point is installed. {REINSTALL_HINT}",
                          style="red", markup=False)
        failed |= not parts or not all([ep.load()() for ep in parts])
    console.print(f"demo finished in {time.perf_counter() - start:.1f}s")
    raise typer.Exit(1 if failed else 0)


@app.command("eval")
def eval_cmd(
    model: str = typer.Option(..., "--model", help="OpenAI-compatible API root, e.g. http://127.0.0.1:8080/v1"),
    model_name: str = typer.Option(..., "--model-name", help="The `model` field of the requests."),
    env: list[str] = typer.Option(..., "--env", help="Env id or shell pattern (arl/math.*), repeatable."),
    episodes: int = typer.Option(10, min=1, help="Episodes per id (episode i uses seed SEED + i)."),
    concurrency: int = typer.Option(4, min=1, help="Episodes in flight at once."),
    seed: int = typer.Option(0, help="Seed of episode 0 of every id."),
    output: str = typer.Option(..., "--output", "-o", help="Run directory (episodes.jsonl, summary, viewer page)."),
    max_tokens: int = typer.Option(512, "--max-tokens", min=1, help="Tokens per reply."),
    tool_mode: str = typer.Option("native", "--tool-mode", help="native | json | openai (OpenAI tool calls)."),
    temperature: float = typer.Option(0.0, help="Sampling temperature."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="OPENAI_API_KEY", help="Bearer token."),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Seconds per model request."),
    retries: int = typer.Option(3, min=0, help="Retries per model request (connection error, timeout, 429, 5xx)."),
    env_kwarg: list[str] = typer.Option([], "--kwarg", "-k", help="Env kwarg key=value (JSON values), repeatable."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a run of another config in --output."),
    progress: bool = typer.Option(True, help="Progress bar on stderr."),
) -> None:
    """Evaluate a model behind an OpenAI-compatible endpoint; a rerun into the same --output resumes."""
    from arl_envs.evaluation import EvalConfig, check_eval_args, resolve_env_ids, run_eval

    try:
        ids = resolve_env_ids(env)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--env") from exc
    cfg = EvalConfig(model, model_name, ids, episodes=episodes, concurrency=concurrency, seed=seed,
                     max_tokens=max_tokens, tool_mode=tool_mode, temperature=temperature, env_kwargs=_kwargs(env_kwarg),
                     timeout_s=timeout, retries=retries, api_key=api_key)
    try:
        resumed = check_eval_args(cfg, output, overwrite=overwrite)
    except FileExistsError as exc:
        raise typer.BadParameter(str(exc), param_hint="--output") from exc
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if overwrite:
        from pathlib import Path

        from arl_envs.evaluation import RUN_FILES

        for name in RUN_FILES:
            (Path(output) / name).unlink(missing_ok=True)
    summary = run_eval(cfg, output, progress=progress, log=lambda line: console.print(line, markup=False))
    table = Table("env id", "n", "success [95% CI]", "mean return [95% CI]", "model errors", "env errors",
                  "turns (max)", "tokens in/out", title=f"{model_name}: {len(ids)} ids x {episodes} episodes")
    from arl_envs.evaluation import format_interval

    for r in summary["rows"]:
        table.add_row(r["env_id"], str(r["episodes"]), format_interval(r["success_rate"], r["success_ci"], True),
                      format_interval(r["mean_return"], r["return_ci"], False), str(r["model_errors"]), str(r["env_errors"]),
                      f"{r['turns']:.1f} ({r['max_turns'] or '-'})" if r["episodes"] else "-",
                      f"{r['tokens_in']:.0f}/{r['tokens_out']:.0f}" if r["episodes"] else "-")
    console.print(table)
    console.print(
        f"{summary['played']} episodes played in {summary['wall_s']:.1f} s"
        + (f", {summary['skipped']} kept from the earlier run" if resumed else "")
        + f"; wrote {output}/episodes.jsonl, summary.md, episodes.html",
        markup=False,
    )
    if summary["model_errors"]:
        console.print(f"{summary['model_errors']} episodes ended on a model error (not scored); rerun the same "
                      "command to retry them", markup=False)
        raise typer.Exit(1)


@app.command("serve-retriever")
def serve_retriever_cmd(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (0.0.0.0 serves other machines too)."),
    port: int = typer.Option(8000, min=0, max=65535, help="TCP port."),
    corpus_path: Optional[str] = typer.Option(
        None, help="wiki-18 JSONL corpus ({id, contents}); default: the generated world of arl/search.multihop-v1."
    ),
    retriever: str = typer.Option("bm25", help="bm25 | dense"),
    n_articles: Optional[int] = typer.Option(None, min=1, help="Size of the generated world (without --corpus-path)."),
    world_seed: int = typer.Option(0, help="Seed of the generated world."),
    topk: int = typer.Option(3, min=1, help="topk of requests that give none."),
) -> None:
    """Serve a search index with the Search-R1 retrieval API (POST /retrieve) for env workers or Search-R1."""
    from arl_envs.envs.search.server import serve_retriever

    if retriever not in ("bm25", "dense"):
        raise typer.BadParameter(f"choose bm25 or dense, got {retriever!r}", param_hint="--retriever")
    if corpus_path is not None and not Path(corpus_path).is_file():
        raise typer.BadParameter(f"no such file: {corpus_path}", param_hint="--corpus-path")

    serve_retriever(host, port, corpus_path=corpus_path, retriever=retriever, n_articles=n_articles,
                    world_seed=world_seed, topk=topk)


@app.command("serve")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", help="Interface to bind (0.0.0.0 serves other machines too)."),
    port: int = typer.Option(8000, help="TCP port."),
    env: list[str] = typer.Option([], "--env", help="Ids to serve, shell patterns (arl/math.*), repeatable; default all."),
    max_sessions: int = typer.Option(256, "--max-sessions", help="Open sessions at most (per worker)."),
    idle_timeout: float = typer.Option(600.0, "--idle-timeout", help="Close a session idle this many seconds (0: never)."),
    token: Optional[str] = typer.Option(None, "--token", help="Require 'Authorization: Bearer TOKEN' on every route."),
    workers: int = typer.Option(1, "--workers", help="Server processes; a session stays in one."),
) -> None:
    """Serve env ids over OpenEnv's HTTP/WebSocket protocol (/reset /step /state /schema /health /ws) and MCP (/mcp)."""
    try:
        from arl_envs.server.main import serve
    except ImportError as exc:
        print(f"arl-envs serve: {exc}; install with: pip install 'arl-envs[serve]'", file=sys.stderr)
        raise typer.Exit(1) from exc
    problem = None
    if not 0 <= port <= 65535:
        problem = f"--port must be in 0..65535, got {port}"
    elif max_sessions < 1 or workers < 1 or idle_timeout < 0:
        problem = "--max-sessions and --workers must be >= 1 and --idle-timeout >= 0"
    else:
        from arl_envs.server.sessions import served_ids

        try:
            served_ids(env or None)
        except ValueError as exc:
            problem = str(exc)
    if problem:
        raise typer.BadParameter(problem)
    serve(host, port, env_patterns=env or None, max_sessions=max_sessions, idle_timeout_s=idle_timeout or None,
          token=token, workers=workers)


sandbox_app = typer.Typer(no_args_is_help=True, help="Sandbox backends: bubblewrap (default) and Docker.")
app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("build-image")
def sandbox_build_image(
    tag: Optional[str] = typer.Option(None, help="Image tag (default: the one DockerSandbox uses)."),
    method: str = typer.Option("auto", help="auto | dockerfile | debootstrap"),
    mirror: Optional[str] = typer.Option(None, help="Debian mirror for debootstrap (default: this machine's apt one)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even if the image exists."),
) -> None:
    """Build the Docker sandbox image (cached by tag). Needs dockerd; offline: root + debootstrap."""
    from arl_envs.core.errors import SandboxUnavailable
    from arl_envs.sandbox.image import DEFAULT_IMAGE, build_image

    if method not in ("auto", "dockerfile", "debootstrap"):
        raise typer.BadParameter(f"choose auto, dockerfile or debootstrap, got {method!r}", param_hint="--method")
    try:
        build_image(tag or DEFAULT_IMAGE, method=method, mirror=mirror, force=force, log=console.print)
    except (SandboxUnavailable, ValueError) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from exc


@sandbox_app.command("check")
def sandbox_check() -> None:
    """Run print(1) in each sandbox backend and say which work here (and the install step for the others)."""
    from arl_envs.core.errors import SandboxUnavailable
    from arl_envs.sandbox import BACKENDS, get_sandbox

    ok = True
    for backend in BACKENDS:
        try:
            with get_sandbox(backend) as sb:
                result = sb.run(code="print(1)")
            status = "ok" if result.ok else f"FAILED: {result.describe()} {result.stderr.strip()[-300:]}"
            ok &= result.ok
            console.print(f"{backend}: {status} ({result.duration_s * 1000:.0f} ms)", markup=False)
        except SandboxUnavailable as exc:
            console.print(f"{backend}: unavailable: {exc}", markup=False)
    raise typer.Exit(0 if ok else 1)


@app.command()
def bench(
    steps: int = typer.Option(2000, min=1, help="Expert steps per env id."),
    env_ids: Optional[list[str]] = typer.Argument(None, help="Ids (default: all)."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Also write a PNG bar chart of steps/s per id here."),
) -> None:
    """Env throughput (expert agent, one process), with the ratio to a trivial gymnasium env in the same run."""
    from arl_envs.bench import env_throughput

    _check_ids(env_ids or [])
    _check_output_file(plot, "--plot")  # before the run, whose results a bad path would lose
    table = Table("env id", "steps/s", "µs/step", "ratio to trivial env")
    rows = env_throughput(env_ids or _local_ids(), steps)
    for row in rows:
        table.add_row(row["env_id"], f"{row['steps_per_s']:.0f}", f"{row['us_per_step']:.1f}", f"{row['ratio']:.1f}x")
    console.print(table)
    if plot:
        from arl_envs.plots import plot_throughput

        console.print(f"wrote {plot_throughput(rows, plot, f'Env throughput, {steps} expert steps per id')}",
                      markup=False)


swe_app = typer.Typer(help="SWE-smith-style instances on real PyPI projects (arl/code.swe-v0).", no_args_is_help=True)
app.add_typer(swe_app, name="swe")


@swe_app.command("build")
def swe_build(
    projects: Optional[list[str]] = typer.Option(None, "--projects", help="Project names (default: all), repeatable."),
    max_instances: int = typer.Option(40, "--max-instances", help="Validated instances to keep per project."),
    export: Optional[str] = typer.Option(None, "--export", help="Also write SWE-bench-format JSONL here."),
) -> None:
    """Fetch, mutate and validate instances (deterministic, resumable); writes the package's instance metadata."""
    from rich.progress import Progress

    from arl_envs.core.errors import SandboxUnavailable
    from arl_envs.envs.code.swe import build as swe_build_mod
    from arl_envs.envs.code.swe import export_jsonl
    from arl_envs.envs.code.swe.projects import PROJECTS

    names = projects or list(PROJECTS)
    unknown = [n for n in names if n not in PROJECTS]
    if unknown:
        raise typer.BadParameter(f"unknown project(s) {', '.join(unknown)}; known: {', '.join(PROJECTS)}",
                                 param_hint="--projects")
    results = {}
    try:
        with Progress(console=console) as progress:
            for name in names:
                task = progress.add_task(f"{name}: kept 0", total=max_instances)

                def tick(n: str, kept: int, tried: int, task: int = task) -> None:
                    progress.update(task, completed=kept, description=f"{n}: kept {kept} / tried {tried}")

                results[name] = swe_build_mod.build_project(PROJECTS[name], max_instances, progress=tick)
                swe_build_mod.write_metadata({name: results[name]})
    except SandboxUnavailable as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from exc
    console.print(swe_build_mod.format_report(results), markup=False, highlight=False)
    if export:
        console.print(f"wrote {export_jsonl(export)} instances to {export}", markup=False)


def _add_entry_point_commands() -> None:
    """Let each ``arl_envs.cli`` entry point add its commands; one that fails to load costs its own commands (a line
    on stderr says why), not the command line. With none installed (metadata written before the groups existed),
    hidden ``train`` and ``scoreboard`` commands say how to get them."""
    found = _entry_points(CLI_GROUP)
    for ep in found:
        try:
            ep.load()(app)
        except Exception as exc:  # noqa: BLE001 - a broken extension must not take down list, play, check, ...
            print(f"arl-envs: the commands of {ep.value} are unavailable ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
    if found:
        return

    def missing() -> None:
        print(f"arl-envs: this install declares no {CLI_GROUP} entry point, which the baseline's commands come "
              f"through. {REINSTALL_HINT}", file=sys.stderr)
        raise typer.Exit(1)

    for name in ("train", "scoreboard"):
        app.command(name, hidden=True, help="Not installed (see the message it prints).", add_help_option=False,
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(missing)


_add_entry_point_commands()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
