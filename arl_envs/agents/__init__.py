"""Reference agents: random, scripted expert, and a human at the keyboard."""

from arl_envs.agents.agents import Agent, Episode, ExpertAgent, HumanAgent, RandomAgent, make_agent, run_episode

__all__ = ["Agent", "Episode", "ExpertAgent", "HumanAgent", "RandomAgent", "make_agent", "run_episode"]
