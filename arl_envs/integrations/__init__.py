"""Adapters of arl-envs ids to other ecosystems, each behind an extra: ``verifiers_env`` (``arl-envs[verifiers]``)
and ``skyrl_gym_env`` (``arl-envs[skyrl]``). Any id works, in-process or on an ``arl-envs serve`` server (``url=``).
"""
