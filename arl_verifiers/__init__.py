"""verifiers plugin name of arl-envs: ``--env.taskset.id arl-verifiers`` (verifiers imports a taskset by its
top-level module name; the adapter is :mod:`arl_envs.integrations.verifiers_env`)."""

from arl_envs.integrations.verifiers_env import (
    ArlData,
    ArlEnvConfig,
    ArlTask,
    ArlTaskset,
    ArlTasksetConfig,
    ArlVerifiersEnv,
)

__all__ = ["ArlData", "ArlEnvConfig", "ArlTask", "ArlTaskset", "ArlTasksetConfig", "ArlVerifiersEnv"]
