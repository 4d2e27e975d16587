"""Reference agents: random, scripted expert, a human at the keyboard, lookahead over env branches, a model
behind an OpenAI-compatible API, and the scripted search-and-patch agent of ``arl/code.swe-v0``."""

from arl_envs.agents.agents import Agent, Episode, ExpertAgent, HumanAgent, RandomAgent, make_agent, run_episode
from arl_envs.agents.chat_model import ChatModelAgent, ContextLengthExceeded, ModelCall, ModelError
from arl_envs.agents.lookahead import LookaheadAgent
from arl_envs.agents.search_patch import SearchPatchAgent

__all__ = [
    "Agent", "ChatModelAgent", "ContextLengthExceeded", "Episode", "ExpertAgent", "HumanAgent", "LookaheadAgent",
    "ModelCall", "ModelError", "RandomAgent", "SearchPatchAgent", "make_agent", "run_episode",
]
