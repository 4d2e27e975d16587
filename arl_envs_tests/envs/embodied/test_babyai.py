"""arl/embodied.babyai-v0: the text follows minigrid's visibility, the bot solves every level, rewards."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minigrid", reason="BabyAI needs minigrid: pip install 'arl-envs[embodied]'")

import gymnasium as gym  # noqa: E402

import arl_envs  # noqa: E402,F401
from arl_envs.envs.embodied.babyai import COMMANDS, LEVELS, BabyAIEnv  # noqa: E402


def _where(world, x: int, y: int) -> str:
    """The phrase the text uses for the absolute cell (x, y), from minigrid's own view coordinates."""
    vx, vy = world.relative_coords(x, y)
    fwd, side = world.agent_view_size - 1 - vy, vx - world.agent_view_size // 2
    parts = []
    if fwd:
        parts.append(f"{fwd} step{'s' if fwd != 1 else ''} forward")
    if side:
        parts.append(f"{abs(side)} step{'s' if abs(side) != 1 else ''} {'right' if side > 0 else 'left'}")
    return " and ".join(parts)


def _face_wall_with_key_behind(env: BabyAIEnv):
    """Put the agent in room (0, 0) of a 3x3 level facing the wall to room (1, 0), a red key right behind it.

    Every door of that wall within the agent's view is replaced by wall, so the key is inside the 7x7 view
    square but hidden by a solid wall. Returns (world, key position, wall position).
    """
    from minigrid.core.world_object import Key, Wall

    world = env.world
    room = world.get_room(0, 0)
    (rx, ry), (w, h) = room.top, room.size
    wall_x = rx + w - 1  # east wall of room (0, 0)
    y = ry + h // 2
    for yy in range(y - 3, y + 4):
        if 0 < yy < world.height - 1:
            world.grid.set(wall_x, yy, Wall())
    agent = (wall_x - 1, y)
    world.grid.set(*agent, None)
    world.agent_pos, world.agent_dir = agent, 3  # facing north; the test turns right (east) through step()
    key_pos = (wall_x + 1, y)
    world.grid.set(*key_pos, Key("red"))
    return world, key_pos, (wall_x, y)


def test_key_behind_a_wall_is_not_described() -> None:
    env = BabyAIEnv(level="Open")  # a 3x3 grid of rooms
    env.reset(seed=0)
    world, key_pos, wall_pos = _face_wall_with_key_behind(env)
    obs, *_ = env.step("turn right")
    # The real grid: the agent faces a wall, and a key sits right behind it, inside the view square.
    assert world.agent_dir == 0 and tuple(world.front_pos) == wall_pos
    assert world.grid.get(*wall_pos).type == "wall"
    assert world.grid.get(*key_pos).type == "key" and world.in_view(*key_pos)
    assert not world.agent_sees(*key_pos)  # minigrid's own visibility agrees
    assert "key" not in obs
    assert "Right in front of you: a wall." in obs
    # Control: the same key becomes visible (and described) once the wall cell is an open door.
    from minigrid.core.world_object import Door

    world.grid.set(*wall_pos, Door("blue", is_open=True))
    obs, *_ = env.step("turn left")
    obs, *_ = env.step("turn right")
    assert world.agent_sees(*key_pos)
    assert "a red key 2 steps forward" in obs


def test_key_behind_a_closed_door_is_not_described() -> None:
    from minigrid.core.world_object import Door

    env = BabyAIEnv(level="Open")
    env.reset(seed=1)
    world, key_pos, wall_pos = _face_wall_with_key_behind(env)
    world.grid.set(*wall_pos, Door("blue", is_open=False))
    obs, *_ = env.step("turn right")
    assert "a closed blue door 1 step forward" in obs and "key" not in obs
    obs, *_ = env.step("toggle")
    assert obs.startswith("You open the blue door.")
    assert "a red key 2 steps forward" in obs


@pytest.mark.parametrize("level", ["GoToLocal", "Open", "BossLevel"])
def test_text_names_exactly_the_objects_minigrid_shows(level: str) -> None:
    """Every object in the world is described iff minigrid's own ``agent_sees`` says it is visible."""
    env = BabyAIEnv(level=level)
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(2):
        obs, _ = env.reset(seed=seed)
        for _ in range(40):
            world = env.world
            for x in range(world.width):
                for y in range(world.height):
                    cell = world.grid.get(x, y)
                    if cell is None or cell.type == "wall" or not world.in_view(x, y):
                        continue
                    if (x, y) == tuple(world.agent_pos):
                        continue
                    name = env.renderer.name(*cell.encode())
                    phrase = f"{name} {_where(world, x, y)}"
                    assert (phrase in obs) == world.agent_sees(x, y), (phrase, obs)
                    checked += 1
            obs, _, term, trunc, _ = env.step(COMMANDS[int(rng.integers(0, 3))])  # turn / move only
            if term or trunc:
                break
    assert checked > 100


@pytest.mark.parametrize("level", LEVELS)
def test_bot_solves_each_level(level: str) -> None:
    env = gym.make("arl/embodied.babyai-v0", level=level)
    obs, info = env.reset(seed=0)
    assert info["task_id"] == f"{level}:{info['task_id'].split(':')[1]}"
    total_task = 0.0
    while True:
        obs, reward, term, trunc, info = env.step(env.unwrapped.expert_action())
        total_task += info["reward_components"]["task"]
        if term or trunc:
            break
    assert term and info["success"] and total_task == 1.0
    assert obs.splitlines()[-1].startswith("Mission complete")
    env.close()


def test_bot_recovers_after_random_actions() -> None:
    """The bot is told the actions the agent actually took (or restarts after a gap) and still solves it."""
    env = BabyAIEnv(level="GoToLocal")
    rng = np.random.default_rng(1)
    for seed in range(5):
        env.reset(seed=seed)
        env.expert_action()  # consult the bot, then ignore it for a few steps
        term = trunc = False
        for _ in range(4):
            *_, term, trunc, info = env.step(COMMANDS[int(rng.integers(0, 3))])
            if term or trunc:
                break
        while not (term or trunc):
            *_, term, trunc, info = env.step(env.expert_action())
        assert info["success"], seed


def test_progress_credits_each_sub_instruction_once() -> None:
    env = BabyAIEnv(level="GoToSeq")
    for seed in range(3):
        _, info = env.reset(seed=seed)
        n = env._leaves_total
        assert n >= 2
        progress = []
        while True:
            *_, term, trunc, info = env.step(env.expert_action())
            progress.append(info["reward_components"]["progress"])
            if term or trunc:
                break
        assert info["success"]
        credited = [p for p in progress if p > 0]
        assert sum(progress) == pytest.approx(env.reward_weights["progress"])  # all n parts, each once
        assert len(credited) <= n


def test_commands_synonyms_and_errors() -> None:
    env = BabyAIEnv(level="GoToRedBall")
    obs, info = env.reset(seed=3)
    assert info["admissible_actions"] == list(COMMANDS)
    assert f"Mission: {env.world.mission}" in obs and "red ball" in env.world.mission
    before = env.world.agent_dir
    _, r, _, _, info = env.step("<think>turn right? no</think><action>left</action>")
    assert info["action_error"] is None and info["tool_calls"][0]["arguments"]["command"] == "turn left"
    assert env.world.agent_dir == (before - 1) % 4
    _, r, term, _, info = env.step("jump over the wall")
    assert info["action_error"] and "turn left" in info["action_error"] and not term
    assert r == pytest.approx(-env.reward_weights["format"])
    steps = env.world.step_count
    env.step("turn left then go forward")  # one action per step: an error, no state change
    assert env.world.step_count == steps


def test_json_format_and_task_id_replay() -> None:
    env = BabyAIEnv(level="PickupLoc", action_format="json")
    obs, info = env.reset(seed=5)
    again = BabyAIEnv(level="PickupLoc")
    obs2, info2 = again.reset(options={"task_id": info["task_id"]})
    assert info2["task"] == info["task"]
    action = env.expert_action()
    assert action.startswith("<tool_call>")
    _, _, _, _, step_info = env.step(action)
    assert step_info["action_error"] is None


def test_unknown_level_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="GoToLocal"):
        BabyAIEnv(level="NoSuchLevel")
