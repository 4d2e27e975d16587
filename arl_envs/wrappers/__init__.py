"""Wrappers for trainers: chat-message histories and episode recording."""

from arl_envs.wrappers.chat import ChatMessages
from arl_envs.wrappers.record import RecordEpisodes

__all__ = ["ChatMessages", "RecordEpisodes"]
