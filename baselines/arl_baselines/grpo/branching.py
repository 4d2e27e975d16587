"""Branched rollouts for step-level (GiGPO) advantages: K actions sampled from one snapshotted env state.

GiGPO (Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training", arXiv:2505.10978, section
3.2) forms step groups from turns of a group's episodes that happen to act from the same observation
(:func:`arl_baselines.grpo.loss.step_group_advantages`); on most tasks few states repeat, so most step groups have
one member and carry no signal. Branching makes step groups by construction, as on-policy tree-search rollouts do
(TreeRL, Hou et al. 2025, arXiv:2506.11902; Monte-Carlo rollouts from intermediate states in VinePPO, Kazemnejad et
al. 2024, arXiv:2410.01679): during the GRPO rollout the env
of the first ``branch_points`` episodes of each group is snapshotted before every step
(``env.unwrapped.snapshot()``, ``arl_envs/core/snapshot.py``); afterwards one turn ``t`` of each such *trunk*
episode is drawn uniformly, and ``branch_k`` *branch* episodes start from it: the env restored from the snapshot
taken before turn ``t``, the token sequence the trunk's prefix up to turn ``t`` (prompt, actions, observations;
mask 0, it is context), the policy sampling a fresh action there and playing on to the episode's end.

Why to the end (not a short horizon): the step-level return ``R_t = sum_k gamma^k r_{t+k}`` of a branch is then
a Monte-Carlo sample of the action's value under the current policy, which is what GiGPO's step advantage
compares; a truncated branch would need a value estimate to bootstrap from (this baseline has no critic), and on
sparse-reward ids such as FrozenLake (reward only at the goal) a short branch earns nothing.

Advantages: the trunk's turn ``t`` and its ``branch_k`` branches act from the same state, so they fall in one step
group of ``step_group_advantages`` (keyed by the observation text, as GiGPO's anchor states; the branch group is
exact by construction, and other turns with the same observation text join it as in GiGPO). Each group's step
advantages are computed over its trunk episodes and its branches together. Token advantages: a trunk turn gets
its episode advantage plus ``step_advantage_weight`` times its step advantage (as
:meth:`arl_baselines.grpo.train.Trainer.step_level_advantages`); a branch episode did not start from the task's
reset state, so it has no episode advantage and its turns get ``step_advantage_weight`` times their step
advantage only. Episode-level statistics (group means, zero-spread groups, logged rewards and success) use the
trunk episodes alone; env steps of branches count (``Episode.turns``; restores are not steps).
"""

from __future__ import annotations

import random
from typing import Any

import torch

from arl_baselines.grpo.config import GRPOConfig
from arl_baselines.grpo.loss import step_group_advantages
from arl_baselines.grpo.rollout import Episode, RolloutEngine


class Brancher:
    """Plays a GRPO step's trunk episodes with snapshots, then the branches (see the module docstring).

    Args:
        engine: The trainer's rollout engine (its envs and decoder are reused for the branches).
        cfg: The run's settings (``branch_k``, ``branch_points``, ``group_size``, ``step_gamma``,
            ``step_advantage_weight``, ``scale_rewards``, ``seed``).

    Attributes:
        branches: The branch episodes of the last :meth:`rollout`, group by group (trunk order within a group).
        points: ``(trunk index, turn)`` of each branch point of the last rollout; ``branch_k`` consecutive
            entries of ``branches`` belong to each.
    """

    def __init__(self, engine: RolloutEngine, cfg: GRPOConfig) -> None:
        if cfg.branch_k < 1:
            raise ValueError(f"Brancher needs branch_k >= 1, got {cfg.branch_k}")
        self.engine, self.cfg = engine, cfg
        self.rng = random.Random(cfg.seed)  # draws the branch turns (its own stream: the task seeds stay as they are)
        self.branches: list[Episode] = []
        self.points: list[tuple[int, int]] = []
        self._snaps: dict[int, list[Any]] = {}
        self._trunks: dict[int, list[Episode]] = {}

    def _before_step(self, ep: Episode, env: Any) -> None:
        """Snapshot the env of a trunk episode before its step (the first ``branch_points`` episodes of a group
        to take a first turn are its trunks; the episodes of a group are exchangeable samples)."""
        key = id(ep)
        if key not in self._snaps:
            trunks = self._trunks.setdefault(ep.group, [])
            if len(trunks) >= self.cfg.branch_points or ep.turns:
                return
            trunks.append(ep)
            self._snaps[key] = []
        snaps = self._snaps[key]
        if len(snaps) != ep.turns:
            raise RuntimeError(f"branching: snapshot {len(snaps)} taken before turn {ep.turns}")
        snaps.append(env.unwrapped.snapshot())

    def rollout(
        self,
        seeds: list[int],
        group_size: int,
        *,
        temperature: float = 1.0,
        top_k: int = 0,
        generator: torch.Generator | None = None,
    ) -> list[Episode]:
        """:meth:`RolloutEngine.run` with snapshots of the trunk episodes, then the branches (kept in
        :attr:`branches`); returns the trunk episodes, as ``run`` would."""
        self._snaps, self._trunks = {}, {}
        self.engine.before_step = self._before_step
        try:
            eps = self.engine.run(seeds, group_size, temperature=temperature, top_k=top_k, generator=generator)
        finally:
            self.engine.before_step = None
        index = {id(e): i for i, e in enumerate(eps)}
        plan: list[tuple[Episode, Any]] = []
        self.points = []
        for g in range(len(seeds)):
            for trunk in self._trunks.get(g, []):
                snaps = self._snaps[id(trunk)][: trunk.turns]
                if trunk.env_error is not None or not snaps or len(trunk.states) < len(snaps):
                    continue
                t = self.rng.randrange(len(snaps))
                self.points.append((index[id(trunk)], t))
                for _ in range(self.cfg.branch_k):
                    plan.append((self._branch_start(trunk, t), snaps[t]))
        self._snaps, self._trunks = {}, {}
        self.branches = []
        size = self.engine.batch_size
        for start in range(0, len(plan), size):
            chunk = plan[start : start + size]
            for i, (_, snap) in enumerate(chunk):
                self.engine._env(i).unwrapped.restore(snap)
            started = [b for b, _ in chunk]
            self.branches += self.engine.play(started, [list(b.ids) for b in started], temperature, top_k, generator)
        return eps

    @staticmethod
    def _branch_start(trunk: Episode, t: int) -> Episode:
        """A branch episode at the state before the trunk's turn ``t``: its tokens are the trunk's up to that
        turn (mask 0: context, trained on in the trunk), its first state the trunk's ``states[t]``."""
        start = trunk.turn_spans[t][0]
        b = Episode(group=trunk.group, seed=trunk.seed, task_id=trunk.task_id)
        b.ids, b.mask, b.sample_logprobs = trunk.ids[:start], [0] * start, [0.0] * start
        b.prompt_len, b.states = start, [trunk.states[t]]
        return b

    def advantages(
        self, eps: list[Episode], episode_adv: torch.Tensor, valid: torch.Tensor
    ) -> tuple[list[Episode], list[list[float]], list[bool]]:
        """Per-token advantages of the trunk episodes ``eps`` and the last rollout's branches.

        Args:
            eps: The trunk episodes, group by group (``group_size`` each).
            episode_adv: ``(len(eps),)`` episode-level advantages of the trunks.
            valid: ``(len(eps),)`` bool, False for trunks with env errors.

        Returns:
            ``(trained, rows, signal)``: the trunks followed by the branches; per episode of ``trained`` a list as
            long as its ``ids``; whether it has a non-zero advantage on a sampled token.
        """
        cfg, G = self.cfg, self.cfg.group_size
        by_group: dict[int, list[int]] = {}
        for j, b in enumerate(self.branches):
            by_group.setdefault(b.group, []).append(j)
        trained = list(eps) + self.branches
        step: list[list[float]] = [[] for _ in trained]
        ok = [bool(v) for v in valid] + [b.env_error is None for b in self.branches]
        for g0 in range(0, len(eps), G):
            members = list(range(g0, g0 + G)) + [len(eps) + j for j in by_group.get(eps[g0].group, [])]
            adv = step_group_advantages(
                [trained[i].states[: len(trained[i].step_rewards)] for i in members],
                [trained[i].step_rewards for i in members],
                len(members),
                gamma=cfg.step_gamma,
                scale=cfg.scale_rewards != "none",
                valid=[ok[i] for i in members],
            )
            for i, a in zip(members, adv):
                step[i] = a
        ep_adv = episode_adv.tolist() + [0.0] * len(self.branches)
        rows, signal = [], []
        for e, a_ep, a_steps in zip(trained, ep_adv, step):
            row = [a_ep] * len(e.ids)
            for (start, end), a_s in zip(e.turn_spans, a_steps):
                row[start:end] = [a_ep + cfg.step_advantage_weight * a_s] * (end - start)
            rows.append(row)
            signal.append(any(row[i] != 0.0 for i, m in enumerate(e.mask) if m))
        return trained, rows, signal
