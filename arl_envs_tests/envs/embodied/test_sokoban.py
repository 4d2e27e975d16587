"""arl/embodied.sokoban-v0: reverse-play generation, rules, rewards, solver."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.agents import ExpertAgent, RandomAgent, run_episode
from arl_envs.envs.embodied.sokoban import Level, SokobanEnv, generate_level, solve
from arl_envs.testing import check_conformance

ENV_ID = "arl/embodied.sokoban-v0"


def _replay(level: Level, moves: list[str]) -> bool:
    lv = Level(level.rows, level.cols, level.floor, level.targets, level.boxes, level.player)
    for m in moves:
        lv.move(m)
    return lv.solved()


@pytest.mark.parametrize("size,boxes", [(6, 1), (6, 2), (7, 2), (8, 3)])
def test_every_generated_level_is_solvable_by_construction_and_by_the_solver(size: int, boxes: int) -> None:
    for seed in range(25):
        level, construction = generate_level(seed, size, size, boxes)
        assert len(level.boxes) == len(level.targets) == boxes
        assert not level.solved()
        assert level.player in level.floor and level.player not in level.boxes
        assert level.boxes <= level.floor and level.targets <= level.floor
        # the reverse-play path, played forward, solves the level (solvable by construction) ...
        assert _replay(level, construction), (seed, level.render())
        # ... and so does the search
        plan = solve(level)
        assert plan is not None and _replay(level, plan), (seed, level.render())


def test_solver_is_push_optimal_with_weight_one() -> None:
    level = Level(5, 7, {(2, c) for c in range(1, 6)}, frozenset({(2, 5)}), frozenset({(2, 3)}), (2, 1))
    assert solve(level, weight=1.0) == ["right", "right", "right"]


@pytest.mark.parametrize("kwargs", [{}, {"size": 7, "num_boxes": 2}, {"size": [6, 8], "num_boxes": 2}])
def test_expert_solves(kwargs: dict) -> None:
    env = gym.make(ENV_ID, **kwargs)
    for seed in range(30):
        ep = run_episode(env, ExpertAgent(env), seed=seed)
        assert ep.success, (seed, ep.observations[-1])
        # progress pays for the boxes that were NOT on a target at the start
        first = ep.infos[0]["task"]
        start_on = int(first.rsplit("Boxes on targets: ", 1)[1].split("/")[0])
        boxes = env.unwrapped.num_boxes
        expected = 0.1 * (boxes - start_on) / boxes
        assert sum(i["reward_components"]["progress"] for i in ep.infos[1:]) == pytest.approx(expected)


def test_random_text_agent_fails() -> None:
    env = gym.make(ENV_ID)
    assert sum(run_episode(env, RandomAgent(env, seed=s), seed=s).success for s in range(20)) == 0


def _corridor_env() -> SokobanEnv:
    """A hand-made level: one row ``#@_$_.#`` (player, floor, box, floor, target)."""
    env = SokobanEnv()
    env.reset(seed=0)
    env.level = Level(3, 7, {(1, c) for c in range(1, 6)}, frozenset({(1, 5)}), frozenset({(1, 3)}), (1, 1))
    env._best_on_target = 0
    env._plan_state = None
    return env


def test_moves_pushes_walls_and_rendering() -> None:
    env = _corridor_env()
    assert env.level is not None
    assert env.level.render().splitlines()[1] == "#@_$_.#"
    obs, _, _, _, info = env.step("up")
    assert obs.startswith("You walk into a wall") and info["action_error"] is None
    assert env.level.player == (1, 1)
    obs, *_ = env.step("move right")
    assert obs.startswith("You move right") and "#_@$_.#" in obs
    obs, *_ = env.step("right")
    assert obs.startswith("You push the box right") and "#__@$.#" in obs
    obs, reward, term, trunc, info = env.step("east")
    assert term and info["success"] and "#___@*#" in obs
    assert info["reward_components"] == {"task": 1.0, "progress": 0.1, "format": 0.0}


def test_blocked_push_changes_nothing_and_is_not_admissible() -> None:
    env = SokobanEnv()
    env.reset(seed=0)
    # row 1: #@$*_#   (a box, then a box on a target: pushing right is blocked); one floor cell below the player
    env.level = Level(4, 6, {(1, 1), (1, 2), (1, 3), (1, 4), (2, 1)}, frozenset({(1, 3), (2, 1)}),
                      frozenset({(1, 2), (1, 3)}), (1, 1))
    env._best_on_target = env.level.on_target()
    obs, *_, info = env.step("right")
    assert obs.startswith("The box cannot move right") and info["action_error"] is None
    assert env.level.player == (1, 1) and env.level.boxes == frozenset({(1, 2), (1, 3)})
    assert info["admissible_actions"] == ["down"]


def test_progress_only_for_a_new_maximum_of_boxes_on_targets() -> None:
    env = SokobanEnv(num_boxes=2)
    env.reset(seed=0)
    # row 1: #@$._#  (box 1 next to target 1); row 3: #_$_.#  (box 2, target 2); (2, 1) joins the rows
    floor = {(1, c) for c in range(1, 6)} | {(3, c) for c in range(1, 6)} | {(2, 1)}
    env.level = Level(5, 7, floor, frozenset({(1, 3), (3, 4)}), frozenset({(1, 2), (3, 2)}), (1, 1))
    env._best_on_target = 0
    got = []
    for cmd in ("right", "right", "left", "left", "down", "down", "right", "right"):
        got.append(env.step(cmd)[4]["reward_components"]["progress"])
    # box 1 onto its target (+1/2 raw), pushed off it (0), box 2 onto its target: still 1 box on targets (0)
    assert got == pytest.approx([0.05, 0, 0, 0, 0, 0, 0, 0])
    assert env.level.on_target() == 1


def test_chained_moves_are_malformed() -> None:
    env = SokobanEnv()
    env.reset(seed=1)
    assert env.level is not None
    before = (env.level.boxes, env.level.player)
    for cmd in ("up then left", "up, left", "left left", "dance"):
        *_, info = env.step(cmd)
        assert info["action_error"], cmd
    assert (env.level.boxes, env.level.player) == before


def test_task_id_round_trip_and_arguments() -> None:
    env = SokobanEnv(size=7, num_boxes=2)
    obs, info = env.reset(seed=9)
    other = SokobanEnv()
    obs2, info2 = other.reset(options={"task_id": info["task_id"]})
    assert obs2 == obs
    with pytest.raises(ValueError):
        SokobanEnv(size=3)
    with pytest.raises(ValueError):
        SokobanEnv(num_boxes=9)
    with pytest.raises(arl_envs.TaskLoadError):
        other.reset(options={"task_id": "sokoban-99x99-b1-3"})


def test_conformance_json_format_and_larger_levels() -> None:
    report = check_conformance(ENV_ID, env_kwargs={"action_format": "json"}, n_fuzz=60)
    assert report.passed, report.summary()
    report = check_conformance(ENV_ID, env_kwargs={"size": 8, "num_boxes": 2}, n_fuzz=40)
    assert report.passed, report.summary()
