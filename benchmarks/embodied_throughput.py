"""Embodied env throughput: steps/s per ``arl/embodied.*`` id with its expert, beside a reference in the same run.

Usage:
    python benchmarks/embodied_throughput.py [--steps 20000] [--repeats 3] [--only household sokoban ...]

Each measurement function below returns table rows; ``MEASUREMENTS`` lists them (add a function there to measure a
new id). Every env is made with ``gym.make`` (Gymnasium's wrappers count, as in a user's loop) and driven by its
expert (``env.unwrapped.expert_action()``, whose planning time counts); resets are inside the timed loop. Each row
is the best of ``--repeats`` runs, with the env and its reference measured alternately so machine load hits both;
wall-clock and process-CPU steps/s are both reported (the ratio uses CPU time).

References:
    * household, sokoban: a trivial Discrete env whose step does nothing (:class:`arl_envs.bench.TrivialEnv`,
      through ``gym.make``): the floor of Gymnasium's own per-step cost.
    * frozenlake: gymnasium's own ``FrozenLake-v1`` (``gym.make``, same map, not slippery) replaying the expert's
      moves: the library step our text layer wraps.
    * babyai: minigrid's own ``BabyAI-<level>-v0`` on the same seeds, replaying the BabyAI bot's actions (steps
      only) and with the bot planning every step (see :func:`measure_babyai`).
    * scienceworld: ScienceWorld's own ``ScienceWorldEnv.step`` on the same commands (see
      :func:`measure_scienceworld`).
"""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any, Callable

import gymnasium as gym

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.bench import TrivialEnv

Row = dict[str, Any]


def time_loop(env: gym.Env, act: Callable[[], Any], steps: int, seed: int = 0) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` per step over ``steps`` steps (resetting at episode ends; resets timed).

    CPU time (``time.process_time``) is the process's own CPU use: on a shared, loaded machine it is the steadier
    measure of what a step costs; wall time is what a training loop sees on an idle core.
    """
    env.reset(seed=seed)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        *_, terminated, truncated, _ = env.step(act())
        if terminated or truncated:
            env.reset()
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def _trivial() -> gym.Env:
    if "arl_envs_trivial-v0" not in gym.registry:
        gym.register("arl_envs_trivial-v0", entry_point=TrivialEnv)
    return gym.make("arl_envs_trivial-v0")


def _expert_vs(env_id: str, kwargs: dict[str, Any], ref: gym.Env, ref_act: Callable[[], Any], ref_name: str,
               steps: int, repeats: int) -> Row:
    env = gym.make(env_id, **kwargs)
    raw = env.unwrapped
    best, best_ref = (float("inf"), float("inf")), (float("inf"), float("inf"))
    episodes = 0
    for _ in range(repeats):
        wall, cpu = time_loop(env, raw.expert_action, steps)
        best = (min(best[0], wall), min(best[1], cpu))
        wall, cpu = time_loop(ref, ref_act, steps)
        best_ref = (min(best_ref[0], wall), min(best_ref[1], cpu))
    # the expert must actually be solving: success rate over a few episodes in the same config
    from arl_envs.agents import ExpertAgent, run_episode

    wins = 0
    for seed in range(20):
        wins += run_episode(env, ExpertAgent(env), seed=seed).success
        episodes += 1
    env.close()
    return {
        "env_id": env_id, "config": ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "defaults",
        "steps_per_s": 1 / best[0], "cpu_steps_per_s": 1 / best[1], "us_per_step": best[1] * 1e6,
        "reference": ref_name, "ref_steps_per_s": 1 / best_ref[0], "ref_cpu_steps_per_s": 1 / best_ref[1],
        "ratio": best[1] / best_ref[1], "expert_success": wins / episodes,
    }


def measure_household(steps: int, repeats: int) -> list[Row]:
    """Household at difficulty 1, 3 (default) and 5 vs the trivial env (target: >= 10,000 steps/s)."""
    ref = _trivial()
    return [_expert_vs("arl/embodied.household-v0", {"difficulty": d}, ref, lambda: 0, "trivial env", steps, repeats)
            for d in (1, 3, 5)]


def measure_sokoban(steps: int, repeats: int) -> list[Row]:
    """Sokoban at the default 6x6 / 1 box and at 8x8 / 2 boxes vs the trivial env (solver time included)."""
    ref = _trivial()
    return [_expert_vs("arl/embodied.sokoban-v0", kw, ref, lambda: 0, "trivial env", max(steps // 4, 1000), repeats)
            for kw in ({}, {"size": 8, "num_boxes": 2})]


def measure_frozenlake(steps: int, repeats: int) -> list[Row]:
    """FrozenLake (gymnasium's 4x4 and 8x8 maps, not slippery) vs gymnasium's FrozenLake-v1 on the same map."""
    from arl_envs.envs.embodied.frozenlake import GYM_ACTIONS

    rows = []
    for name in ("4x4", "8x8"):
        probe = gym.make("arl/embodied.frozenlake-v0", map_name=name)
        probe.reset(seed=0)
        moves: list[int] = []
        while True:  # the expert's route, replayed on gymnasium's env
            cmd = probe.unwrapped.expert_action()
            moves.append(GYM_ACTIONS[cmd])
            *_, term, trunc, _ = probe.step(cmd)
            if term or trunc:
                break
        probe.close()
        ref = gym.make("FrozenLake-v1", map_name=name, is_slippery=False)
        cursor = [0]

        def replay() -> int:
            a = moves[cursor[0] % len(moves)]
            cursor[0] += 1
            return a

        rows.append(_expert_vs("arl/embodied.frozenlake-v0", {"map_name": name}, ref, replay,
                               "gymnasium FrozenLake-v1 step", steps, repeats))
    return rows


def _bot_trajectories(level: str, min_steps: int) -> list[tuple[str, int, list[int]]]:
    """(task_id, minigrid seed, bot actions) for seeds 0, 1, ... until ``min_steps`` actions are collected."""
    from arl_envs.envs.embodied.babyai import COMMANDS, BabyAIEnv

    env = BabyAIEnv(level=level)
    out: list[tuple[str, int, list[int]]] = []
    total, seed = 0, 0
    while total < min_steps:
        _, info = env.reset(seed=seed)
        actions: list[int] = []
        while True:
            idx = env.expert_action_index()
            *_, term, trunc, info = env.step(COMMANDS[idx])
            actions.append(idx)
            if term or trunc:
                break
        assert info["success"], f"the BabyAI bot failed on {level} seed {seed}"
        out.append((info["task_id"], int(info["task_id"].rsplit(":", 1)[1]), actions))
        total += len(actions)
        seed += 1
    env.close()
    return out


def _row(env_id: str, config: str, ours: tuple[float, float], ref: tuple[float, float], ref_name: str,
         success: float) -> Row:
    """A table row from ``(wall s, CPU s)`` per step of ours and of the reference (the ratio is on CPU time)."""
    return {
        "env_id": env_id, "config": config, "steps_per_s": 1 / ours[0], "cpu_steps_per_s": 1 / ours[1],
        "us_per_step": ours[1] * 1e6, "reference": ref_name, "ref_steps_per_s": 1 / ref[0],
        "ref_cpu_steps_per_s": 1 / ref[1], "ratio": ours[1] / ref[1], "expert_success": success,
    }


def measure_babyai(steps: int, repeats: int) -> list[Row]:
    """BabyAI text env vs minigrid's own ``BabyAI-<level>-v0`` (targets: >= 1,000 steps/s, within 2x of minigrid).

    Rows per level (GoToLocal, BossLevel): (1) the text env (``gym.make``) replaying the BabyAI bot's actions as
    text commands vs minigrid's env (``gym.make(...).unwrapped``, what the text env wraps) stepped with the same
    actions on the same seeds: steps only (the resets, the same minigrid level generation in both, are left out of
    both), alternated per episode, each episode's best of ``repeats``; (2) the text env with the bot planning every
    step (``expert_action``, resets included) vs minigrid's env with ``BabyAIBot.replan()`` every step, same seeds.
    """
    from minigrid.utils.baby_ai_bot import BabyAIBot

    from arl_envs.envs.embodied.babyai import COMMANDS

    rows: list[Row] = []
    for level in ("GoToLocal", "BossLevel"):
        trajectories = _bot_trajectories(level, min(steps, 5_000))
        n = sum(len(a) for *_, a in trajectories)
        env = gym.make("arl/embodied.babyai-v0", level=level)
        world = gym.make(f"BabyAI-{level}-v0").unwrapped
        texts = [[COMMANDS[a] for a in actions] for *_, actions in trajectories]

        def timed(fn: Callable[[], None]) -> tuple[float, float]:
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            return time.perf_counter() - w0, time.process_time() - c0

        ours_t, own_t = [0.0, 0.0], [0.0, 0.0]
        for (task_id, mg_seed, actions), commands in zip(trajectories, texts):
            best_ours, best_own = (float("inf"),) * 2, (float("inf"),) * 2
            for _ in range(repeats):
                world.reset(seed=mg_seed)
                t = timed(lambda: [world.step(a) for a in actions])
                best_own = (min(best_own[0], t[0]), min(best_own[1], t[1]))
                env.reset(options={"task_id": task_id})
                t = timed(lambda: [env.step(c) for c in commands])
                best_ours = (min(best_ours[0], t[0]), min(best_ours[1], t[1]))
            for k in (0, 1):
                ours_t[k] += best_ours[k]
                own_t[k] += best_own[k]
        rows.append(_row("arl/embodied.babyai-v0", f"level={level}, bot's actions replayed ({n} steps, resets "
                         "excluded)", (ours_t[0] / n, ours_t[1] / n), (own_t[0] / n, own_t[1] / n),
                         "minigrid step, same actions", 1.0))

        def ours_bot() -> None:
            for task_id, _, actions in trajectories:
                env.reset(options={"task_id": task_id})
                for _ in actions:
                    env.step(env.unwrapped.expert_action())

        def own_bot() -> None:
            for _, mg_seed, actions in trajectories:
                world.reset(seed=mg_seed)
                bot = BabyAIBot(world)
                for _ in actions:
                    world.step(bot.replan())

        best_ours, best_own = (float("inf"),) * 2, (float("inf"),) * 2
        for _ in range(repeats):
            t = timed(ours_bot)
            best_ours = (min(best_ours[0], t[0] / n), min(best_ours[1], t[1] / n))
            t = timed(own_bot)
            best_own = (min(best_own[0], t[0] / n), min(best_own[1], t[1] / n))
        rows.append(_row("arl/embodied.babyai-v0", f"level={level}, bot plans every step ({n} steps, resets "
                         "included)", best_ours, best_own, "minigrid step + BabyAIBot.replan", 1.0))
        env.close()
    return rows


def _jvm_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux ``/proc``; 0 elsewhere)."""
    import os

    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def measure_scienceworld(steps: int, repeats: int) -> list[Row]:
    """ScienceWorld text env (gold path, default task) vs ScienceWorld's own ``ScienceWorldEnv.step``.

    The same commands on the same variations (find-non-living-thing, the train variations of seeds 0-9); steps
    only: the loads (the same simulator call in both) are left out of both. CPU time counts the Python process and
    its JVM (read from ``/proc``). ScienceWorld's ``step`` also fetches the look/inventory/task texts and every valid
    action-object combination on each step, which the text env only does on request (``valid_actions=True``, the
    second row).
    """
    from scienceworld import ScienceWorldEnv as NativeEnv

    from arl_envs.envs.embodied.scienceworld import DEFAULT_TASK

    episodes = 10
    runs: list[tuple[int, list[str]]] = []
    wins = 0
    rows: list[Row] = []
    native = NativeEnv("", envStepLimit=10**9)
    native_pid = native._gateway.java_process.pid

    def clocked(jvm_pid: int, fn: Callable[[], None]) -> tuple[float, float]:
        w0, c0, j0 = time.perf_counter(), time.process_time(), _jvm_cpu_s(jvm_pid)
        fn()
        return time.perf_counter() - w0, time.process_time() - c0 + _jvm_cpu_s(jvm_pid) - j0

    for valid in (False, True):
        env = gym.make("arl/embodied.scienceworld-v0", valid_actions=valid)
        if not runs:
            for seed in range(episodes):
                env.reset(seed=seed)
                commands: list[str] = []
                while True:
                    commands.append(env.unwrapped.expert_action())
                    *_, term, trunc, info = env.step(commands[-1])
                    if term or trunc:
                        break
                wins += bool(info["success"])
                runs.append((env.unwrapped.variation, commands))
        else:
            env.reset(seed=0)
        pid = env.unwrapped._sw._gateway.java_process.pid
        n = sum(len(c) for _, c in runs)
        ours_t, own_t = [0.0, 0.0], [0.0, 0.0]
        for variation, commands in runs:
            best_ours, best_own = (float("inf"),) * 2, (float("inf"),) * 2
            for _ in range(max(1, min(repeats, 2))):
                native.load(DEFAULT_TASK, variation, "", generateGoldPath=False)
                native.reset()
                t = clocked(native_pid, lambda: [native.step(c) for c in commands])
                best_own = (min(best_own[0], t[0]), min(best_own[1], t[1]))
                env.reset(options={"task_id": f"{DEFAULT_TASK}:{variation}"})
                t = clocked(pid, lambda: [env.step(c) for c in commands])
                best_ours = (min(best_ours[0], t[0]), min(best_ours[1], t[1]))
            for k in (0, 1):
                ours_t[k] += best_ours[k]
                own_t[k] += best_own[k]
        rows.append(_row("arl/embodied.scienceworld-v0",
                         f"task={DEFAULT_TASK}, gold path, valid_actions={valid} ({n} steps, loads excluded)",
                         (ours_t[0] / n, ours_t[1] / n), (own_t[0] / n, own_t[1] / n),
                         "ScienceWorldEnv.step, same commands", wins / episodes))
        env.close()
    native.close()
    return rows


#: The measurement functions, in table order: ``fn(steps, repeats) -> rows``. Add one per new id.
MEASUREMENTS: list[Callable[[int, int], list[Row]]] = [
    measure_household, measure_sokoban, measure_frozenlake, measure_babyai, measure_scienceworld,
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000, help="timed steps per env per repeat")
    parser.add_argument("--repeats", type=int, default=3, help="repeats (the best is reported)")
    parser.add_argument("--only", nargs="*", default=None,
                        help="names of measurement functions without 'measure_' (default: all)")
    args = parser.parse_args()
    chosen = [fn for fn in MEASUREMENTS if args.only is None or fn.__name__.removeprefix("measure_") in args.only]
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print("| env id | config | steps/s (wall) | steps/s (CPU) | CPU µs/step | reference | reference steps/s (wall / CPU) "
          "| CPU time ratio | expert success |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|")
    for fn in chosen:
        for r in fn(args.steps, args.repeats):
            print(f"| {r['env_id']} | {r['config']} | {r['steps_per_s']:.0f} | {r['cpu_steps_per_s']:.0f} | "
                  f"{r['us_per_step']:.1f} | {r['reference']} | {r['ref_steps_per_s']:.0f} / "
                  f"{r['ref_cpu_steps_per_s']:.0f} | {r['ratio']:.1f}x | {r['expert_success']:.0%} |", flush=True)


if __name__ == "__main__":
    main()
