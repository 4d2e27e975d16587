"""Reference agents: random, scripted expert, a human at the keyboard, lookahead over env branches, and a model
behind an OpenAI-compatible API."""

from arl_envs.agents.agents import Agent, Episode, ExpertAgent, HumanAgent, RandomAgent, make_agent, run_episode
from arl_envs.agents.chat_model import ChatModelAgent, ContextLengthExceeded, ModelCall, ModelError
from arl_envs.agents.lookahead import LookaheadAgent

__all__ = [
    "Agent", "ChatModelAgent", "ContextLengthExceeded", "Episode", "ExpertAgent", "HumanAgent", "LookaheadAgent",
    "ModelCall", "ModelError", "RandomAgent", "make_agent", "run_episode",
]
