"""The checks of :func:`~arl_baselines.grpo.train.train`'s arguments, done before anything is written
(:func:`check_train_args`, which ``arl-envs train`` runs first to report bad input as a usage error), the settings
they resolve to (:func:`_config`), and the run directory's life: :func:`check_run_dir`, :func:`start_run_dir`
(an earlier run moved aside, :data:`PARTIAL_MARK` written), :func:`finish_run_dir`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

from arl_baselines.grpo.checkpoints import _check_sft_checkpoint, sft_checkpoint_spec
from arl_baselines.grpo.config import TINY_SIZES, GRPOConfig, recommended_settings, recommended_steps

#: Files of a run directory: one holding any of them holds an earlier run (:func:`~arl_baselines.grpo.train.train`
#: refuses to replace it).
RUN_FILES = ("config.json", "metrics.jsonl", "sft.jsonl", "samples.jsonl", "summary.json")
#: The file that marks a run directory whose run has not finished (written first, removed once ``summary.json`` and
#: ``curves.png`` are written; it says why when the run stopped on an exception or an interrupt).
PARTIAL_MARK = "PARTIAL"
#: Subdirectory of a run directory where ``overwrite`` moves the earlier run's files (replacing an older one there).
PREVIOUS_DIR = "previous"
#: Everything a run writes in its directory: what ``overwrite`` moves aside into :data:`PREVIOUS_DIR`.
RUN_OUTPUTS = (*RUN_FILES, "curves.png", "comparison.json", "model", PARTIAL_MARK)
#: Trees a run directory may not be in: the kernel's pseudo-filesystems (``/dev/shm`` is a plain tmpfs: allowed).
_PSEUDO_FS = ("/proc", "/sys", "/dev")


def check_run_dir(output: str | os.PathLike[str]) -> Path:
    """Check that ``output`` can be a run directory, without writing anything; return it as a Path.

    Raises:
        FileExistsError: ``output`` is a file, a dangling symbolic link, or below a file.
        ValueError: ``output`` is (in) the installed ``arl_envs`` / ``arl_baselines`` package, or in a kernel
            pseudo-filesystem (``/proc``, ``/sys``, ``/dev`` other than ``/dev/shm``).
        PermissionError: The nearest existing directory of ``output`` is not writable.
    """
    import arl_envs

    out = Path(output)
    if out.is_symlink() and not out.exists():
        raise FileExistsError(f"the run directory {out} is a dangling symbolic link (to {os.readlink(out)})")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"the run directory {out} is a file")
    real = Path(os.path.realpath(out))
    packages = [Path(arl_envs.__file__).resolve().parent, Path(__file__).resolve().parents[1]]
    for pkg in packages:
        if real == pkg or pkg in real.parents:
            raise ValueError(f"the run directory {out} is in the installed package {pkg}: give a directory of your own")
    for root in _PSEUDO_FS:
        root_p = Path(root)
        if (real == root_p or root_p in real.parents) and not (real == Path("/dev/shm") or Path("/dev/shm") in real.parents):
            raise ValueError(f"the run directory {out} is in {root}, a kernel pseudo-filesystem: give a real directory")
    existing = real
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise FileExistsError(f"the run directory {out} would be below the file {existing}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"the run directory {out} cannot be written ({existing} is not writable)")
    return out


def start_run_dir(output: str | os.PathLike[str], *, overwrite: bool) -> Path:
    """Create the run directory ``output`` and mark it :data:`PARTIAL_MARK`; with ``overwrite``, first move an
    earlier run's files (:data:`RUN_OUTPUTS`) into ``output/previous/`` (replacing what an older overwrite left
    there), so the new run's files are never mixed with the old ones.

    Raises:
        FileExistsError: ``output`` holds an earlier run and not ``overwrite``.
    """
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    earlier = [name for name in RUN_OUTPUTS if os.path.lexists(out / name)]
    if earlier:
        if not overwrite:
            raise FileExistsError(f"{out} holds an earlier run ({', '.join(earlier)}): give another output, or "
                                  "overwrite=True / --overwrite to move it to previous/")
        prev = out / PREVIOUS_DIR
        if prev.is_dir() and not prev.is_symlink():
            shutil.rmtree(prev)
        elif os.path.lexists(prev):
            prev.unlink()
        prev.mkdir()
        for name in earlier:
            os.replace(out / name, prev / name)
    (out / PARTIAL_MARK).write_text(
        f"This run has not finished (started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, pid {os.getpid()}): "
        "summary.json and curves.png are written when it ends, and this file is removed. If no process is running "
        "it, it was interrupted.\n"
    )
    return out


def finish_run_dir(output: str | os.PathLike[str]) -> None:
    """Remove the :data:`PARTIAL_MARK` of a run directory whose run has written all its files."""
    (Path(output) / PARTIAL_MARK).unlink(missing_ok=True)


def _mark_interrupted(output: str | os.PathLike[str], exc: BaseException) -> None:
    """Append why the run stopped to its :data:`PARTIAL_MARK` (best effort: the original error is what matters)."""
    with contextlib.suppress(OSError):
        with open(Path(output) / PARTIAL_MARK, "a") as fh:
            fh.write(f"Stopped by {type(exc).__name__}: {exc}\n")


def _config(env_id: str, model: str, cfg: dict[str, Any]) -> GRPOConfig:
    """A :class:`GRPOConfig` from keyword settings laid over the env's recommended ones (unless ``env_defaults=False``).

    ``env_kwargs`` are merged key by key (the user's win), so ``env_kwargs={"max_number": 20}`` on countdown keeps
    the recommended ``expert``; ``env_defaults=False`` drops them all.
    """
    cfg = dict(cfg)
    if bool(cfg.pop("env_defaults", True)):
        rec = recommended_settings(env_id, tiny=model in TINY_SIZES)
        if "env_kwargs" in rec and cfg.get("env_kwargs") is not None:
            cfg["env_kwargs"] = {**rec["env_kwargs"], **dict(cfg["env_kwargs"])}
        cfg = {**rec, **cfg}
    return GRPOConfig.from_kwargs(**cfg)


def check_train_args(
    env_id: str,
    model: str = "tiny",
    steps: int | None = None,
    output: str | os.PathLike[str] = "runs/grpo",
    *,
    sft_checkpoint: str | os.PathLike[str] | None = "auto",
    overwrite: bool = False,
    **cfg: Any,
) -> tuple[GRPOConfig, int, str | os.PathLike[str] | None]:
    """:func:`~arl_baselines.grpo.train.train`'s checks of its arguments, done before it writes anything
    (``arl-envs train`` runs them first to report bad input as a usage error); returns the settings, the GRPO steps
    and the normalised ``sft_checkpoint`` (:func:`~arl_baselines.grpo.checkpoints.sft_checkpoint_spec`).

    Raises:
        gymnasium.error.Error: ``env_id`` is not registered.
        TypeError, ValueError, FileNotFoundError, FileExistsError, PermissionError: As
            :func:`~arl_baselines.grpo.train.train`; nothing is written.
    """
    import gymnasium as gym

    import arl_envs  # noqa: F401  (registers the ids)

    gym.spec(env_id)  # an unknown id fails here (gymnasium's error names the closest ids), not after a directory exists
    cfg = {k: v for k, v in cfg.items() if k != "save_model"}
    config = _config(env_id, model, cfg)
    if steps is None:
        steps = recommended_steps(env_id, tiny=model in TINY_SIZES and bool(cfg.get("env_defaults", True)))
    if int(steps) < 0:
        raise ValueError(f"steps must be >= 0 GRPO steps, got {steps}")
    out = check_run_dir(output)
    earlier = [name for name in RUN_OUTPUTS if os.path.lexists(out / name)] if out.is_dir() else []
    if not overwrite and earlier:
        raise FileExistsError(f"{out} holds an earlier run ({', '.join(earlier)}): give another output, or "
                              "overwrite=True / --overwrite to move it to previous/")
    spec = sft_checkpoint_spec(sft_checkpoint)
    if spec not in (None, "auto"):
        _check_sft_checkpoint(spec, env_id, model, config)
    return config, int(steps), spec
