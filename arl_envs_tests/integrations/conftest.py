"""The server fixture of arl_envs_tests/server, for adapters that also play through a server."""

from arl_envs_tests.server.conftest import server  # noqa: F401
