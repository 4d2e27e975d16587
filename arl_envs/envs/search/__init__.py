"""Search environments (``arl/search.multihop-v1``, ``arl/search.qa-v1``): retrieval and answering, Search-R1 style.

Modules: :mod:`~arl_envs.envs.search.world` (fictional encyclopedia + multi-hop questions, cached; built by
:mod:`~arl_envs.envs.search.encyclopedia` and :mod:`~arl_envs.envs.search.questions`),
:mod:`~arl_envs.envs.search.corpus` (wiki-18 / QA JSONL I/O, cache location),
:mod:`~arl_envs.envs.search.retrievers` (BM25, dense, remote), :mod:`~arl_envs.envs.search.server` (Search-R1
compatible HTTP server), :mod:`~arl_envs.envs.search.scoring` (EM/F1), :mod:`~arl_envs.envs.search.env` (the envs).
Nothing heavy is imported here.
"""
