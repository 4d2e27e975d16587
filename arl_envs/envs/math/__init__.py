"""Math environments: ``arl/math.arithmetic-v0``, ``arl/math.countdown-v0``, ``arl/math.dataset-v0``."""

from arl_envs.envs.math.env import ArithmeticEnv, CountdownEnv, DatasetEnv, MathEnv

__all__ = ["ArithmeticEnv", "CountdownEnv", "DatasetEnv", "MathEnv"]
