"""Math environments: ``arl/math.arithmetic-v1``, ``arl/math.countdown-v1``, ``arl/math.dataset-v1``."""

from arl_envs.envs.math.env import ArithmeticEnv, CountdownEnv, DatasetEnv, MathEnv

__all__ = ["ArithmeticEnv", "CountdownEnv", "DatasetEnv", "MathEnv"]
