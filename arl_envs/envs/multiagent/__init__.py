"""Multi-agent text games: PettingZoo AEC/Parallel envs and single-agent gym views.

Import a game module the PettingZoo way (``from arl_envs.envs.multiagent import tictactoe_v0``;
``tictactoe_v0.env()`` / ``tictactoe_v0.parallel_env()``). Nothing is imported here, so ``import arl_envs`` stays
light and PettingZoo is needed only when a game is used.
"""
