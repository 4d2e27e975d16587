"""Plumbing of the ``arl-envs`` command line (:mod:`arl_envs.cli`): the one-line usage-error group and the checks of
ids, ``-k`` kwargs and output paths that every subcommand runs before it does anything."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from typer.core import TyperGroup

#: The command line's output (its commands and those entry points add): a terminal's width, 160 columns in logs and
#: CI so that env ids are not cut.
console = Console()
if not console.is_terminal:
    console = Console(width=160)
#: Click's exception classes as this typer uses them (the ``click`` package, or the copy newer typers vendor).
_cx = sys.modules[typer.BadParameter.__module__]
#: What click raises on Ctrl-C / EOF: ``typer.Abort`` (newer typers' vendored click has no ``Abort`` of its own).
_ABORTS = tuple({typer.Abort, getattr(_cx, "Abort", typer.Abort)})


class _OneLineErrors(TyperGroup):
    """Typer's command group, with a usage error printed as ONE line on stderr (``Error: arl-envs CMD: message (see
    arl-envs CMD --help)``) and exit code 2, for every subcommand; click's other ``ClickException`` s print one
    line too (their own exit code); ``arl-envs`` alone prints the help."""

    def main(self, args: Any = None, prog_name: Optional[str] = None, complete_var: Optional[str] = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                                **extra)
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                              **extra)
        except _cx.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except _cx.ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            where = f"{ctx.command_path}: " if ctx is not None else ""
            see = f" (see {ctx.command_path} --help)" if ctx is not None and isinstance(exc, _cx.UsageError) else ""
            typer.echo(f"Error: {where}{' '.join(exc.format_message().split())}{see}", err=True)
            sys.exit(exc.exit_code)
        except _ABORTS:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        # standalone_mode=False returns the exit code of a typer.Exit, else the command's return value (None)
        sys.exit(rv if isinstance(rv, int) else 0)



def _local_ids() -> list[str]:
    """Every id that runs in-process (not ``arl/remote-v0``, the client of `arl-envs serve`): the default of
    ``check``, ``demo`` and ``bench``."""
    from arl_envs.registration import ENVS

    return [row.id for row in ENVS if "remote" not in row.tags]


def _kwargs(pairs: list[str]) -> dict[str, Any]:
    """Parse ``key=value`` options (values as JSON when they parse, else strings)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"expected key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _check_ids(env_ids: list[str], param_hint: str = "ENV_IDS") -> None:
    """Raise a usage error naming the closest ids when one of ``env_ids`` is not registered."""
    import gymnasium as gym

    import arl_envs  # noqa: F401  (registers ids)

    for env_id in env_ids:
        try:
            gym.spec(env_id)
        except gym.error.Error as exc:
            raise typer.BadParameter(str(exc), param_hint=param_hint) from exc


def _check_output_file(path: Optional[str], param_hint: str) -> None:
    """Raise a usage error when ``path`` cannot be written as a file: it is a directory (or another non-file), a
    dangling symlink, its nearest existing ancestor is not a directory, or it cannot be written (``os.access``:
    no permission, a read-only file system; or below ``/proc`` or ``/sys``). Checks only: nothing is created."""
    if not path:
        return
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise typer.BadParameter(f"{path} is a dangling symlink", param_hint=param_hint)
    if p.exists() and not p.is_file():
        raise typer.BadParameter(f"{path} exists and is not a file", param_hint=param_hint)
    parent = p.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise typer.BadParameter(f"{path} would be below the file {parent}", param_hint=param_hint)
    if p.exists():
        probe_ok = os.access(p, os.W_OK)
    else:  # the nearest existing directory must take a new entry (the command creates the missing ones)
        probe_ok = os.access(parent, os.W_OK | os.X_OK) and not _on_pseudo_fs(parent)
    if not probe_ok:
        raise typer.BadParameter(f"{path} cannot be written", param_hint=param_hint)


def _on_pseudo_fs(path: Path) -> bool:
    """Whether ``path`` is on a kernel pseudo file system (``/proc``, ``/sys``) where no file can be created."""
    resolved = path.resolve()
    return any(resolved == Path(root) or Path(root) in resolved.parents for root in ("/proc", "/sys"))


