"""The baseline's part of the ``arl-envs`` command line: the ``train`` and ``scoreboard`` subcommands and the GRPO
part of ``arl-envs demo``.

``arl_envs`` never imports ``arl_baselines``: its command line loads these through entry points declared in
``pyproject.toml`` (group ``arl_envs.cli``: :func:`register` adds the subcommands to the app; group
``arl_envs.demo``: :func:`demo_grpo` runs after the reference agents). Torch and the trainer are imported when a
command runs, not when the command line starts.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from arl_envs.cli_support import _check_ids, _check_output_file, _kwargs, console

#: The id ``arl-envs train`` trains on without ``--env``: one whose shipped tiny defaults lift held-out success over
#: their SFT checkpoint (benchmarks/RESULTS.md, "Defaults"); arithmetic's do not.
DEFAULT_TRAIN_ENV = "arl/math.countdown-v1"



def demo_grpo() -> bool:
    """Run the GRPO part of the demo: from an SFT checkpoint that imitated an imperfect demonstrator (wrong on 30%
    of its demonstrations) to its plateau, GRPO vs more SFT at equal compute.

    True when it ran (the comparison is printed whichever way it goes; the demo does not fail on it).
    """
    try:
        from arl_baselines.grpo.train import demo_run
    except ImportError as exc:
        console.print(f"GRPO demo unavailable: {exc}. Install with: pip install -e '.[train]'", style="red", markup=False)
        return False
    console.rule(
        "GRPO (tiny model, CPU): imitation of a demonstrator wrong 30% of the time, then GRPO vs more SFT at equal compute"
    )
    r = demo_run()
    console.print(
        f"SFT-only {r['success_sft_only']:.0%} vs SFT+GRPO {r['success_sft_grpo']:.0%} held-out success "
        f"(demonstrator {r['demonstrator_success']:.0%}; the shared SFT checkpoint {r['after_sft']['success']:.0%}; "
        f"equal compute: {r['grpo_s']:.0f} s of GRPO = {r['sft_extra_steps']} more SFT steps). "
        f"Curves: {r['output']}/curves.png",
        markup=False,
    )
    return True


def train(
    env: str = typer.Option(
        DEFAULT_TRAIN_ENV, "--env",
        help="Env id to train on (default: countdown, where the tiny defaults show a GRPO lift; see above).",
    ),
    model: str = typer.Option("tiny", help="tiny[-S|-M|-L] | a local HF checkpoint dir | a .gguf file | smollm2"),
    steps: Optional[int] = typer.Option(
        None, min=0,
        help="GRPO steps (default: the env's recommended number, 100; 40 for code.functions with a tiny model).",
    ),
    output: str = typer.Option("runs/grpo", help="Run directory: metrics.jsonl, curves.png, summary.json."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Move an earlier run in --output to --output/previous/ and start afresh."
    ),
    sft_checkpoint: str = typer.Option(
        "auto", "--sft-checkpoint",
        help="SFT warm start: auto (the shipped checkpoint of the env's tiny defaults when the settings are those, "
        "else run the SFT) | none (always run the SFT) | PATH (a saved SFT checkpoint).",
    ),
    setting: list[str] = typer.Option([], "--set", "-s", help="GRPOConfig field key=value (JSON values), repeatable."),
    env_kwarg: list[str] = typer.Option([], "--kwarg", "-k", help="Env kwarg key=value (JSON values), repeatable."),
) -> None:
    """Train the GRPO baseline agent against an env (SFT warm start from the expert, then GRPO, then evaluation).

    Which ids show a lift with the tiny defaults (held-out success after SFT -> after GRPO, benchmarks/RESULTS.md):
    arl/math.countdown-v1, the default, 0.047 -> 0.168 (+12 points, 100 GRPO steps, about 90 s on 2 cores; 40 steps
    over 3 seeds: +9.4 points); arl/code.functions-v0 0.125 -> 0.250 (+12 points, 40 steps, about 200 s, needs
    bubblewrap). arl/math.arithmetic-v1 shows NO lift: 0.031 -> 0.020 (its rise is the SFT's; `arl-envs demo` shows
    GRPO beating more SFT there, from a demonstrator wrong 30% of the time). Other ids: not measured with the
    defaults.
    """
    try:
        from arl_baselines.grpo.train import train as run_train
    except ImportError as exc:
        console.print(f"{exc}. Install with: pip install -e '.[train]'", style="red", markup=False)
        raise typer.Exit(1) from exc
    from arl_baselines.grpo.train import check_train_args

    cfg = _kwargs(setting)
    if env_kwarg:
        cfg["env_kwargs"] = _kwargs(env_kwarg)
    import gymnasium as gym

    try:  # bad input is a usage error before anything is written; the run's own errors keep their traceback
        check_train_args(env, model, steps, output, sft_checkpoint=sft_checkpoint, overwrite=overwrite, **cfg)
    except gym.error.Error as exc:
        raise typer.BadParameter(str(exc), param_hint="--env") from exc
    except (FileExistsError, PermissionError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--output") from exc
    except (FileNotFoundError, ValueError, TypeError) as exc:  # settings, steps, the SFT checkpoint
        raise typer.BadParameter(str(exc)) from exc
    summary = run_train(env, model, steps, output, sft_checkpoint=sft_checkpoint, overwrite=overwrite, **cfg)
    console.print_json(json.dumps(summary, default=str))

def scoreboard(
    quick: bool = typer.Option(False, "--quick", help="CI size: 2 seeds, the tiny model only (1 turn x 4 tokens)."),
    env_ids: Optional[list[str]] = typer.Argument(None, help="Ids (default: all)."),
    seeds: Optional[int] = typer.Option(None, min=1, help="Held-out seeds per random/expert row (default 6; quick 2)."),
    lm_seeds: Optional[int] = typer.Option(None, min=1, help="Seeds per language-model row (default 2; quick 1)."),
    lm: list[str] = typer.Option([], "--lm", help="load_policy spec, repeatable (default: none; quick: tiny). "
                                 "Real-model rows: benchmarks/scoreboard_eval.py (arl-envs eval)."),
    output: str = typer.Option("runs/scoreboard.jsonl", "--output", "-o",
                               help="Rows (JSONL; not a .md name); the table goes beside it with the suffix .md."),
    resume: bool = typer.Option(False, help="Skip rows already in --output."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an earlier board in --output."),
) -> None:
    """Success rate and mean return (95% intervals) of random, expert, a zero-shot LM and GRPO, per env id."""
    try:
        from arl_baselines.scoreboard import check_output, run_and_write
    except ImportError as exc:
        console.print(f"{exc}. Install with: pip install -e '.[train]'", style="red", markup=False)
        raise typer.Exit(1) from exc
    _check_ids(env_ids or [])
    _check_output_file(output, "--output")
    try:  # an earlier board is resumed, replaced on request, or refused: before anything runs or is written
        check_output(output, resume=resume, overwrite=overwrite)
    except (FileExistsError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--output") from exc
    _, md = run_and_write(output, quick=quick, env_ids=env_ids, seeds=seeds, lm_seeds=lm_seeds, lms=lm or None,
                          resume=resume, overwrite=overwrite, command="arl-envs scoreboard " + " ".join(sys.argv[2:]),
                          log=lambda line: console.print(line, markup=False, highlight=False))
    console.print(md, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``train`` and ``scoreboard`` to the ``arl-envs`` app (entry point of the group ``arl_envs.cli``)."""
    app.command()(train)
    app.command()(scoreboard)
