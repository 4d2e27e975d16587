"""Reference agents: random, scripted expert, a human at the keyboard, and lookahead over env branches."""

from arl_envs.agents.agents import Agent, Episode, ExpertAgent, HumanAgent, RandomAgent, make_agent, run_episode
from arl_envs.agents.lookahead import LookaheadAgent

__all__ = ["Agent", "Episode", "ExpertAgent", "HumanAgent", "LookaheadAgent", "RandomAgent", "make_agent", "run_episode"]
