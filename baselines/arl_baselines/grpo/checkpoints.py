"""SFT checkpoints: the file format (:func:`read_sft_checkpoint`), the shipped files (:data:`SHIPPED_SFT_CHECKPOINTS`),
``train(sft_checkpoint=...)``'s choice of warm start (:func:`sft_checkpoint_spec`, :func:`_warm_start`) and the
:class:`SFTCheckpoints` methods of :class:`~arl_baselines.grpo.trainer.Trainer` that save, load and snapshot its
SFT state.
"""

from __future__ import annotations

import copy
import hashlib
import io
import os
import pickle
import random
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arl_baselines.grpo.config import TRAIN_SEED_RANGE, GRPOConfig
from arl_baselines.grpo.policy import Policy
from arl_baselines.grpo.rollout import Episode, RolloutEngine

#: Version of the :meth:`~arl_baselines.grpo.trainer.Trainer.save_sft_checkpoint` file layout.
SFT_CHECKPOINT_FORMAT = 1
#: Settings an SFT checkpoint must share with the run that loads it (they shape the data, the schedule or the SFT
#: optimiser, whose state the checkpoint brings back); the resolved ``use_instructions`` is checked too.
SFT_CHECKPOINT_KEYS = (
    "sft_steps",
    "sft_episodes",
    "sft_error_rate",
    "sft_lr",
    "sft_schedule",
    "sft_min_lr_ratio",
    "sft_batch_size",
    "max_seq_len",
    "weight_decay",
    "adam_betas",
    "max_grad_norm",
)

#: The shipped SFT checkpoint the demo starts from (built by
#: :func:`~arl_baselines.grpo.experiments.build_demo_checkpoint`; 1.8 MB).
DEMO_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "demo_sft.pt"
#: A shipped SFT checkpoint of countdown's tiny defaults (``recommended_settings``: 1500 constant-lr steps on the
#: in-order expert; built by ``python -m arl_baselines.grpo.demo_checkpoint --env arl/math.countdown-v1``, 1.8 MB):
#: the test of the defaults' GRPO phase starts from it instead of 8 CPU minutes of SFT.
COUNTDOWN_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "countdown_sft.pt"
#: A shipped SFT checkpoint of code.functions' tiny defaults (600 constant-lr steps on the difficulty-1 generated
#: tasks; built by ``python -m arl_baselines.grpo.demo_checkpoint --env arl/code.functions-v0``, 1.8 MB): the test
#: of those defaults starts from it instead of 14 CPU minutes of sandboxed demonstrations and SFT.
CODE_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "code_sft.pt"
#: A shipped SFT checkpoint of arithmetic's tiny defaults (500 cosine SFT steps from 3e-3 to 3e-4; built by
#: ``python -m arl_baselines.grpo.demo_checkpoint --env arl/math.arithmetic-v1``, 1.8 MB).
ARITHMETIC_SFT_CHECKPOINT = Path(__file__).resolve().parent / "data" / "arithmetic_sft.pt"
#: The seed of every :data:`SHIPPED_SFT_CHECKPOINTS` build (``demonstrator_seed`` ``"0-demonstrator"`` in the files).
SHIPPED_SFT_SEED = 0
#: The SFT checkpoints :func:`~arl_baselines.grpo.train.train` starts from with ``sft_checkpoint="auto"`` (its
#: default) when the run's settings are the env's tiny defaults: env id -> file. Each is the SFT phase of those
#: defaults, seed 0, one torch thread.
SHIPPED_SFT_CHECKPOINTS: dict[str, Path] = {
    "arl/math.arithmetic-v1": ARITHMETIC_SFT_CHECKPOINT,
    "arl/math.countdown-v1": COUNTDOWN_SFT_CHECKPOINT,
    "arl/code.functions-v0": CODE_SFT_CHECKPOINT,
}
#: Env ids retired by a version bump -> the id that replaced them. An SFT checkpoint records the id it was trained
#: on, and :func:`read_sft_checkpoint` reads that id through this map, so a checkpoint of a retired id loads for its
#: successor. Sound because the bumps changed rewards only, which SFT never sees: it imitates expert trajectories,
#: and the experts, tasks and observations of these ids are unchanged (CHANGELOG.md). The shipped arithmetic,
#: countdown and demo checkpoints were written under the ``-v0`` ids.
CHECKPOINT_ENV_ALIASES: dict[str, str] = {
    f"arl/{name}-v0": f"arl/{name}-v1"
    for name in ("math.arithmetic", "math.countdown", "math.dataset", "math.tool", "search.multihop", "search.qa",
                 "code.repo", "selfplay.propose-solve", "memory.bank", "multiagent.tictactoe",
                 "multiagent.connect_four", "multiagent.kuhn_poker", "multiagent.negotiation",
                 "multiagent.referential", "multiagent.gridpath")
}


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists, recursively (a checkpoint's settings compare equal to the run's)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _sft_identity(env_id: str, model: str, cfg: GRPOConfig) -> dict[str, Any]:
    """What an SFT checkpoint must share with the run that loads it (:data:`SFT_CHECKPOINT_KEYS`)."""
    return _plain(
        {
            "env_id": env_id,
            "env_kwargs": dict(cfg.env_kwargs or {}),
            "model_spec": model,
            "settings": {k: getattr(cfg, k) for k in SFT_CHECKPOINT_KEYS},
        }
    )


def read_sft_checkpoint(
    path: str | os.PathLike[str],
    *,
    env_id: str | None = None,
    model: str | None = None,
    cfg: GRPOConfig | None = None,
    device: str | torch.device = "cpu",
) -> dict[str, Any]:
    """Read a :meth:`~arl_baselines.grpo.trainer.Trainer.save_sft_checkpoint` file
    (``torch.load(weights_only=True)``: tensors and plain containers only, no pickled code) and, given ``env_id``,
    ``model`` and ``cfg``, check it fits that run.

    Returns:
        The file's dict (tensors under ``model`` and ``opt``) plus its ``sha256`` and ``path``.

    Raises:
        FileNotFoundError: No file at ``path``.
        ValueError: Not a readable SFT checkpoint of :data:`SFT_CHECKPOINT_FORMAT`; or it does not fit the run
            (the message names each differing key as ``(checkpoint, run)``), or holds fewer SFT steps than
            ``cfg.sft_steps``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no SFT checkpoint at {path}")
    raw = path.read_bytes()  # read once: hashed and loaded from the same bytes
    if not raw:
        raise ValueError(f"{path} is not an SFT checkpoint: the file is empty")
    if not zipfile.is_zipfile(io.BytesIO(raw)):
        raise ValueError(f"{path} is not an SFT checkpoint: not a torch.save file (no zip archive)")
    try:
        ck = torch.load(io.BytesIO(raw), map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise ValueError(f"{path} is not an SFT checkpoint: it holds objects other than tensors and plain "
                         "containers, refused (loading them would run pickled code)") from exc
    except Exception as exc:  # noqa: BLE001  (torch raises RuntimeError, EOFError, ...)
        raise ValueError(f"{path} is not a readable SFT checkpoint: {type(exc).__name__}: {str(exc)[:200]}") from exc
    need = ("env_id", "env_kwargs", "model_spec", "settings", "use_instructions", "sft_seeds", "demonstrator_seed",
            "demonstrator_success", "sft_steps_done", "model", "opt")
    if not isinstance(ck, dict) or ck.get("format") != SFT_CHECKPOINT_FORMAT or any(k not in ck for k in need):
        raise ValueError(
            f"{path} is not an arl-baselines SFT checkpoint of format {SFT_CHECKPOINT_FORMAT} "
            f"(needs the keys {', '.join(need)})"
        )
    ck["sha256"] = hashlib.sha256(raw).hexdigest()
    ck["path"] = str(path)
    if env_id is None or model is None or cfg is None:
        return ck
    mine = _sft_identity(env_id, model, cfg)
    theirs = _plain({k: ck[k] for k in ("env_id", "env_kwargs", "model_spec", "settings")})
    theirs["env_id"] = CHECKPOINT_ENV_ALIASES.get(theirs["env_id"], theirs["env_id"])
    flat_mine = {**{k: v for k, v in mine.items() if k != "settings"}, **mine["settings"]}
    flat_theirs = {**{k: v for k, v in theirs.items() if k != "settings"}, **theirs["settings"]}
    diff = {k: (flat_theirs.get(k), v) for k, v in flat_mine.items() if flat_theirs.get(k) != v}
    if diff:
        raise ValueError(f"SFT checkpoint {path} does not match this run (checkpoint, run): {diff}")
    if int(ck["sft_steps_done"]) < cfg.sft_steps:
        raise ValueError(
            f"SFT checkpoint {path} holds {ck['sft_steps_done']} SFT steps, fewer than the run's sft_steps="
            f"{cfg.sft_steps} (a partial SFT)"
        )
    return ck


def sft_checkpoint_spec(spec: str | os.PathLike[str] | None) -> str | os.PathLike[str] | None:
    """:func:`~arl_baselines.grpo.train.train`'s ``sft_checkpoint`` (also ``--sft-checkpoint``) normalised:
    ``"auto"``, None (``"none"``; keywords in any case) or the path of an existing file.

    Raises:
        FileNotFoundError: A path with no file (the message lists the keywords, for a misspelt one).
    """
    if isinstance(spec, str) and spec.strip().lower() in ("auto", "none"):
        return None if spec.strip().lower() == "none" else "auto"
    if spec is not None and not Path(spec).is_file():
        raise FileNotFoundError(f"no SFT checkpoint file at {spec} (sft_checkpoint / --sft-checkpoint: auto, none "
                                "or the path of a saved SFT checkpoint)")
    return spec


def _check_sft_checkpoint(path: str | os.PathLike[str], env_id: str, model: str, cfg: GRPOConfig) -> dict[str, Any]:
    """Check that the SFT checkpoint ``path`` fits the run before its ``Trainer`` empties the run directory's
    logs (:func:`read_sft_checkpoint`); returns its ``path``, ``sha256`` and ``sft_steps_done``.

    Raises:
        FileNotFoundError, ValueError: As :func:`read_sft_checkpoint`.
    """
    ck = read_sft_checkpoint(path, env_id=env_id, model=model, cfg=cfg)
    return {"path": ck["path"], "sha256": ck["sha256"], "sft_steps_done": ck["sft_steps_done"]}


def _warm_start(tr: SFTCheckpoints, spec: str | os.PathLike[str] | None) -> bool:
    """Load the SFT warm start ``spec`` (see :func:`sft_checkpoint_spec`) into ``tr``, weights only; True if loaded.

    After a load, the run's task-seed stream skips the draw the SFT's demonstrations would have taken, so the GRPO
    phase sees the task seeds of a run that ran the same SFT itself.

    Raises:
        ValueError, FileNotFoundError: An explicit path that cannot be loaded (``"auto"`` never raises: it falls
            back to running the SFT and records why in ``tr.sft_checkpoint_skipped``).
    """
    if spec is None:
        return False
    path = SHIPPED_SFT_CHECKPOINTS.get(tr.env_id) if spec == "auto" else spec
    if spec == "auto":
        if path is None:
            tr.sft_checkpoint_skipped = f"no shipped SFT checkpoint for {tr.env_id}"
        elif tr.cfg.seed != SHIPPED_SFT_SEED:
            tr.sft_checkpoint_skipped = (f"the shipped SFT checkpoints are the SFT of seed {SHIPPED_SFT_SEED}; "
                                         f"this run's seed is {tr.cfg.seed}")
        else:
            try:
                tr.load_sft_checkpoint(path, demonstrations=False)
            except (ValueError, FileNotFoundError) as exc:
                tr.sft_checkpoint_skipped = str(exc)
        if tr.sft_checkpoint_skipped is not None:
            if tr.cfg.progress:
                print(f"shipped SFT checkpoint not used, running the SFT here: {tr.sft_checkpoint_skipped}",
                      file=sys.stderr)
            return False
    else:
        tr.load_sft_checkpoint(path, demonstrations=False)
    tr.task_rng.integers(0, TRAIN_SEED_RANGE, size=tr.cfg.sft_episodes)
    if spec == "auto" and tr.cfg.progress:
        print(f"SFT warm start: shipped checkpoint {path.name} (sha256 {tr.sft_checkpoint['sha256'][:12]}; "
              "sft_checkpoint='none' / --sft-checkpoint none runs the SFT here)", file=sys.stderr)
    return True


class SFTCheckpoints:
    """The SFT state of a :class:`~arl_baselines.grpo.trainer.Trainer` (weights, SFT optimiser, SFT step, data
    stream) as in-memory snapshots (:meth:`sft_snapshot`) and files (:meth:`save_sft_checkpoint`,
    :meth:`load_sft_checkpoint`).

    A base class of ``Trainer``: ``Trainer.__init__`` sets the attributes annotated here, and ``Trainer.prepare_sft``
    (which :meth:`load_sft_checkpoint` calls) collects the demonstrations and builds the SFT optimiser.
    """

    env_id: str
    model_spec: str
    cfg: GRPOConfig
    device: torch.device
    policy: Policy
    engine: RolloutEngine
    step: int
    opt: Any
    sft_examples: int
    demonstrator_success: float | None
    sft_checkpoint: dict[str, Any] | None
    sft_checkpoint_skipped: str | None
    task_rng: np.random.Generator
    _sft_data: list[Episode] | None
    _sft_opt: Any
    _sft_rng: random.Random
    _sft_step: int
    _sft_seeds: list[int]
    _demonstrator_seed: str

    @property
    def sft_source(self) -> str | None:
        """Where the SFT weights came from: ``"shipped"`` (a file of :data:`SHIPPED_SFT_CHECKPOINTS`), ``"file"``
        (another :meth:`load_sft_checkpoint` file), ``"trained"`` (:meth:`sft` in this run), None (no SFT)."""
        if self.sft_checkpoint is not None:
            shipped = {str(p) for p in SHIPPED_SFT_CHECKPOINTS.values()}
            return "shipped" if str(Path(self.sft_checkpoint["path"]).resolve()) in shipped else "file"
        return "trained" if self._sft_step > 0 else None

    def sft_snapshot(self) -> dict[str, Any]:
        """Copies of the model weights, the SFT optimiser state, step and data-stream state (after :meth:`sft`),
        for :meth:`restore_sft_snapshot`: two continuations of one SFT checkpoint
        (:func:`~arl_baselines.grpo.experiments.sft_vs_grpo`)."""
        if self._sft_opt is None:
            raise RuntimeError("sft_snapshot needs a finished sft() call")
        return {
            "model": copy.deepcopy(self.policy.model.state_dict()),
            "opt": copy.deepcopy(self._sft_opt.state_dict()),
            "step": self._sft_step,
            "rng": self._sft_rng.getstate(),
        }

    def restore_sft_snapshot(self, snapshot: dict[str, Any]) -> None:
        """Put the model, SFT optimiser, step and data stream back to ``snapshot`` (:meth:`sft_snapshot`)."""
        self.policy.model.load_state_dict(snapshot["model"])
        self._sft_opt.load_state_dict(snapshot["opt"])
        self._sft_step = snapshot["step"]
        self._sft_rng.setstate(snapshot["rng"])

    def save_sft_checkpoint(self, path: str | os.PathLike[str]) -> Path:
        """Write the SFT state (after :meth:`sft`) to ``path`` (a ``torch.save`` file, ~3x the model's float32
        size: weights and the AdamW moments) for :meth:`load_sft_checkpoint`.

        Besides the weights it records what rebuilds the rest exactly: env id and kwargs, model spec, the
        demonstrations' seeds and demonstrator seed, the SFT settings (:data:`SFT_CHECKPOINT_KEYS` and the
        resolved ``use_instructions``), steps done and the demonstrator's success.

        Raises:
            RuntimeError: No :meth:`sft` call yet.
        """
        if self._sft_opt is None or self._sft_step == 0:
            raise RuntimeError("save_sft_checkpoint needs a finished sft() call")
        payload = {
            "format": SFT_CHECKPOINT_FORMAT,
            **_sft_identity(self.env_id, self.model_spec, self.cfg),
            "use_instructions": self.engine.use_instructions,
            "sft_seeds": list(self._sft_seeds),
            "demonstrator_seed": self._demonstrator_seed,
            "demonstrator_success": self.demonstrator_success,
            "sft_steps_done": self._sft_step,
            "model": self.policy.model.state_dict(),
            "opt": self._sft_opt.state_dict(),
        }
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(payload, path)
        return path

    def load_sft_checkpoint(self, path: str | os.PathLike[str], *, demonstrations: bool = True) -> dict[str, Any]:
        """Continue from a :meth:`save_sft_checkpoint` file, before any SFT or GRPO step of this run: by default the
        same demonstrations are rebuilt (seeds and demonstrator seed from the file), then the weights, SFT optimiser
        state (its lr, betas and weight decay included) and SFT step are loaded; the SFT data order is reseeded
        from ``cfg.seed`` (so runs with different seeds continue differently).

        Args:
            path: The checkpoint file.
            demonstrations: False loads the weights only (after the same checks), for a GRPO phase or an
                evaluation: the demonstrations are not rebuilt (on code.functions that is 512 sandboxed episodes,
                ~110 s) and SFT cannot continue (a later :meth:`sft` raises RuntimeError).

        Returns:
            The file's metadata (everything but the tensors) plus its ``sha256``.

        Raises:
            FileNotFoundError: No file at ``path``.
            ValueError: The file is not a readable SFT checkpoint of this format; or its env id, env kwargs,
                model spec, SFT settings (:data:`SFT_CHECKPOINT_KEYS`) or resolved ``use_instructions`` differ
                from this run's; or it holds fewer SFT steps than ``cfg.sft_steps`` (a partial SFT); or its
                weights' names or shapes differ from the model's (another architecture or vocabulary).
            RuntimeError: This run already collected demonstrations (:meth:`sft` / :meth:`prepare_sft` ran),
                loaded a checkpoint, or set up its GRPO phase (:meth:`setup_grpo`: its optimiser and reference
                model would belong to the old weights).
        """
        if self._sft_data is not None:
            raise RuntimeError("load_sft_checkpoint must come before any sft()/prepare_sft() of this run")
        if self.sft_checkpoint is not None:
            raise RuntimeError(f"this run already loaded the checkpoint {self.sft_checkpoint['path']}")
        if self.step > 0 or self.opt is not None:
            raise RuntimeError("load_sft_checkpoint must come before setup_grpo() and any GRPO step of this run")
        ck = read_sft_checkpoint(path, env_id=self.env_id, model=self.model_spec, cfg=self.cfg, device=self.device)
        if ck["use_instructions"] != self.engine.use_instructions:
            raise ValueError(
                f"SFT checkpoint {path} does not match this run (checkpoint, run): "
                f"{{'use_instructions': ({ck['use_instructions']}, {self.engine.use_instructions})}}"
            )
        mine, theirs = self.policy.model.state_dict(), ck["model"]
        odd = sorted(k for k in mine.keys() | theirs.keys()
                     if k not in mine or k not in theirs or mine[k].shape != theirs[k].shape)
        if odd:  # checked before anything is loaded: load_state_dict would copy the tensors that do fit
            raise ValueError(f"SFT checkpoint {path} holds the weights of another architecture than this run's "
                             f"{self.model_spec!r} model ({len(odd)} tensors differ, e.g. {odd[:3]})")
        if demonstrations:
            self.prepare_sft(seeds=ck["sft_seeds"], demonstrator_seed=ck["demonstrator_seed"])
            self._sft_opt.load_state_dict(ck["opt"])
            self._sft_step = int(ck["sft_steps_done"])
            self._sft_rng = random.Random(f"{self.cfg.seed}-sft-continuation")
            self.sft_examples = len(self._sft_data or [])
        else:
            self.demonstrator_success = ck["demonstrator_success"]
        self.policy.model.load_state_dict(ck["model"])
        self.sft_checkpoint = {"path": str(path), "sha256": ck["sha256"], "sft_steps_done": int(ck["sft_steps_done"]),
                               "weights_only": not demonstrations}
        return {k: v for k, v in ck.items() if k not in ("model", "opt")}
