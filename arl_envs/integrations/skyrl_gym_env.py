"""Any arl-envs id as a SkyRL-gym text env (``skyrl_gym.envs.base_text_env.BaseTextEnv``; ``arl-envs[skyrl]``).

    from arl_envs.integrations.skyrl_gym_env import register_skyrl_envs
    register_skyrl_envs()                                    # every arl id, same name, in skyrl_gym's registry
    env = skyrl_gym.make("arl/math.arithmetic-v1", env_config={"env_kwargs": {"difficulty": 2}},
                         extras={"seed": 3})
    prompt, meta = env.init([])                              # [system: instructions, user: task]
    out = env.step(model_reply)                              # observations [user: next obs], reward, done, metadata

``env_config`` (per env class: ``env_kwargs``, ``url`` of an ``arl-envs serve`` server, ``token``) and ``extras``
(per dataset row: ``seed``, ``task_id``, ``env_kwargs`` overrides) choose the episode. The prompt SkyRL passes to
``init`` is replaced by the env's own (instructions + task). ``metadata`` is the step's whole ``info``
(``reward_components``, ``action_error``, ``success``, ``env_error``...); the reward is the env's, per step.
"""

from __future__ import annotations

from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from arl_envs.integrations.episode import TurnEpisode


def _get(config: Any, key: str, default: Any = None) -> Any:
    if config is None:
        return default
    if isinstance(config, dict):
        return config.get(key, default)
    getter = getattr(config, "get", None)  # omegaconf DictConfig
    return getter(key, default) if callable(getter) else getattr(config, key, default)


class ArlSkyRLEnv(BaseTextEnv):
    """An arl-envs episode behind SkyRL-gym's ``init`` / ``step`` / ``close``.

    Args:
        env_config: ``env_id`` (unless made through :func:`register_skyrl_envs`), ``env_kwargs``, ``url``, ``token``.
        extras: Per-sample: ``seed``, ``task_id``, ``env_kwargs`` (merged over ``env_config``'s).
        env_id: The id (set by :func:`register_skyrl_envs`).
    """

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None, env_id: str | None = None):
        super().__init__()
        extras = dict(extras or {})
        env_id = env_id or _get(env_config, "env_id")
        if not env_id:
            raise ValueError("ArlSkyRLEnv needs env_id (in env_config, or make it through register_skyrl_envs)")
        kwargs = dict(_get(env_config, "env_kwargs", None) or {})
        kwargs.update(extras.get("env_kwargs") or {})
        self.env_id = env_id
        self.seed = extras.get("seed")
        self.task_id = extras.get("task_id")
        self.episode = TurnEpisode(env_id, kwargs, url=_get(env_config, "url"), token=_get(env_config, "token"))
        self.max_turns = int(getattr(self.episode.env.unwrapped, "max_turns", 1) or 1)

    def init(self, prompt: list[dict[str, str]] | None = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset; the chat prompt is the env's instructions (system) and task (user); metadata its reset info."""
        options = {"task_id": self.task_id} if self.task_id is not None else None
        _, info = self.episode.start(seed=self.seed, options=options)
        self.turns = 0
        messages = [{"role": "system", "content": info["instructions"]}, {"role": "user", "content": info["task"]}]
        return messages, {"env_id": self.env_id, **info}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One env step with the model's reply: the next observation as a user message (none once done)."""
        obs, reward = self.episode.step(action)
        self.turns += 1
        done = self.episode.done
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": obs}],
            reward=reward, done=done, metadata=dict(self.episode.info), postprocessed_action=None,
        )

    def get_metrics(self) -> dict[str, Any]:
        """Per-episode metrics: success, return, turns and the summed reward parts (``reward/<part>``)."""
        out = {"success": float(self.episode.success), "return": self.episode.total, "turns": self.episode.steps}
        out.update({f"reward/{k}": v for k, v in self.episode.parts.items()})
        return out

    def close(self) -> None:
        self.episode.close()


def register_skyrl_envs(env_ids: list[str] | None = None) -> list[str]:
    """Register ``env_ids`` (default: every arl id but ``arl/remote-v0``) in skyrl_gym's registry, under the same
    names; returns the ids registered now (already registered ones are left alone)."""
    import functools

    from skyrl_gym.envs.registration import register, registry

    from arl_envs.registration import env_ids as all_ids

    ids = env_ids or [i for i in all_ids() if i != "arl/remote-v0"]
    done = []
    for env_id in ids:
        if env_id in registry:
            continue
        register(id=env_id, entry_point=functools.partial(_make, env_id=env_id))
        done.append(env_id)
    return done


def _make(env_id: str, env_config: Any = None, extras: dict[str, Any] | None = None, **_: Any) -> ArlSkyRLEnv:
    return ArlSkyRLEnv(env_config=env_config, extras=extras, env_id=env_id)
