"""The shared retriever of ``make_vec(..., mode="ray", shared_retriever=True)``: one Search-R1 HTTP server per node.

:class:`RetrieverService` is a Ray actor holding the suite's retrieval server (:mod:`arl_envs.envs.search.server`)
on its node's loopback; :func:`start_node_services` starts one per alive node, pinned there with
``NodeAffinitySchedulingStrategy``; an env actor finds its node's service with :func:`node_retriever_url` and builds
its search envs with ``retriever="remote"`` pointing at it, so the index is built once per node instead of once per
env. :func:`shared_retriever_config` says what the service must serve for a given search id and kwargs. The vector
env that uses them is :class:`arl_envs.ray_vector.RayVectorEnv`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym

#: CPUs reserved per node for the shared retriever actor (its HTTP threads mostly wait on sockets).
DEFAULT_RETRIEVER_CPUS = 0.0
#: Entry points of the search envs a shared retriever can serve.
_SEARCH_ENTRY_POINTS = {
    "arl_envs.envs.search.env:SearchMultihopEnv": "multihop",
    "arl_envs.envs.search.env:SearchQAEnv": "qa",
}


class RetrieverService:
    """One Search-R1 retrieval server (:class:`~arl_envs.envs.search.server.RetrievalServer`) per node, as a Ray actor.

    Args:
        config: Keyword arguments of :func:`~arl_envs.envs.search.server.build_server_retriever`
            (``corpus_path`` or ``n_articles``/``world_seed``, and ``retriever``).
        host: Interface to bind; the default (loopback) serves the envs of this node only.
    """

    def __init__(self, config: dict[str, Any], host: str = "127.0.0.1"):
        from arl_envs.envs.search.server import RetrievalServer, build_server_retriever

        self.server = RetrievalServer(build_server_retriever(**config), host=host, port=0).start()

    def url(self) -> str:
        """The server's base URL, e.g. ``http://127.0.0.1:40123``."""
        return self.server.url

    def health(self) -> dict[str, Any]:
        """The server's ``/health`` body (documents served, corpus hash)."""
        return self.server.health()

    def close(self) -> None:
        """Stop serving."""
        self.server.stop()


def service_name(family: str, node_id: str) -> str:
    return f"{family}:{node_id}"


def node_retriever_url(family: str) -> str | None:
    """The URL of this node's :class:`RetrieverService` of ``family``, or None if the node has none."""
    import ray  # this runs inside an env actor, where Ray is installed

    node_id = ray.get_runtime_context().get_node_id()
    try:
        service = ray.get_actor(service_name(family, node_id))
    except ValueError:
        return None
    return ray.get(service.url.remote())


def shared_retriever_config(env_id: str, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """What a node's shared retriever must serve so a search env sees the same documents as its own index.

    Args:
        env_id: A search id (``arl/search.multihop-v1`` or ``arl/search.qa-v1``).
        env_kwargs: The envs' constructor kwargs (merged over the registered defaults here).

    Returns:
        Keyword arguments of :func:`~arl_envs.envs.search.server.build_server_retriever`.

    Raises:
        ValueError: Not a search id, or the envs already use ``retriever="remote"``.
    """
    spec = gym.spec(env_id)
    kind = _SEARCH_ENTRY_POINTS.get(str(spec.entry_point))
    if kind is None:
        raise ValueError(f"shared_retriever=True needs a search id ({sorted(_SEARCH_ENTRY_POINTS.values())}), "
                         f"got {env_id!r}")
    kwargs = {**spec.kwargs, **env_kwargs}
    retriever = kwargs.get("retriever", "bm25")
    if retriever == "remote":
        raise ValueError("the envs already use retriever='remote' (their own server); drop shared_retriever")
    if kind == "multihop":
        from arl_envs.envs.search.world import DEFAULT_N_ARTICLES

        return {"retriever": retriever, "n_articles": int(kwargs.get("n_articles", DEFAULT_N_ARTICLES)),
                "world_seed": int(kwargs.get("world_seed", 0))}
    corpus_path = kwargs.get("corpus_path")
    if corpus_path is None and kwargs.get("qa_path") is None:
        from arl_envs.envs.search.env import SAMPLE_CORPUS_PATH

        corpus_path = str(SAMPLE_CORPUS_PATH)
    if corpus_path is None:
        raise ValueError("shared_retriever=True with qa_path needs corpus_path (a path present on every node)")
    return {"retriever": retriever, "corpus_path": str(corpus_path)}


def start_node_services(
    ray: Any, family: str, config: dict[str, Any], options: dict[str, Any] | None, started: set[str]
) -> list[Any]:
    """Start a :class:`RetrieverService` of ``family`` on every alive node with CPUs not in ``started``.

    Waits until each new service listens (built before any env asks) and adds the node ids to ``started``.

    Args:
        ray: The imported ``ray`` module.
        family: The services' name prefix (one family per served config).
        config: Keyword arguments of :func:`~arl_envs.envs.search.server.build_server_retriever`.
        options: Ray actor options over ``num_cpus=DEFAULT_RETRIEVER_CPUS``.
        started: Node ids that already have one (updated in place).

    Returns:
        The new actor handles.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    service = ray.remote(RetrieverService)
    opts = {"num_cpus": DEFAULT_RETRIEVER_CPUS, **(options or {})}
    new = []
    nodes: Iterable[dict[str, Any]] = ray.nodes()
    for node in nodes:
        if not node.get("Alive") or node.get("Resources", {}).get("CPU", 0) <= 0 or node["NodeID"] in started:
            continue
        new.append(service.options(
            name=service_name(family, node["NodeID"]), get_if_exists=True,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False), **opts,
        ).remote(config))
        started.add(node["NodeID"])
    ray.get([r.url.remote() for r in new])
    return new
