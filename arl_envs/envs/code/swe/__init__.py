"""SWE-smith-style bug-fixing tasks on real PyPI projects (``arl/code.swe-v0``), built offline.

:func:`list_instances` returns the shipped, validated instances with SWE-bench's field names; :func:`export_jsonl`
writes them as SWE-bench-format JSONL. ``arl-envs swe build`` (:mod:`.build`) makes them.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from arl_envs.core.errors import TaskLoadError

#: The shipped metadata: ``instances.jsonl`` (one instance a line) and ``baselines.json`` (stable tests per file).
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "swe"
SPLITS = ("train", "test", "all")


@functools.cache
def _load(data_dir: str = str(DATA_DIR)) -> tuple[tuple[dict[str, Any], ...], dict[str, Any]]:
    inst_path, base_path = Path(data_dir) / "instances.jsonl", Path(data_dir) / "baselines.json"
    if not inst_path.exists():
        return (), {}
    records = tuple(json.loads(line) for line in inst_path.read_text(encoding="utf-8").splitlines() if line.strip())
    bases = json.loads(base_path.read_text(encoding="utf-8")) if base_path.exists() else {}
    return records, bases


def _with_p2p(record: dict[str, Any], bases: dict[str, Any]) -> dict[str, Any]:
    stable = bases.get(record["project"], {})
    f2p = set(record["FAIL_TO_PASS"])
    p2p = [t for f in record["test_files"] for t in stable.get(f, []) if t not in f2p]
    return {
        "instance_id": record["instance_id"],
        "repo": record["repo"],
        "version": record["version"],
        "base_commit": f"pypi:{record['project']}=={record['version']}",
        "patch": record["patch"],
        "test_patch": "",
        "problem_statement": record["problem_statement"],
        "FAIL_TO_PASS": list(record["FAIL_TO_PASS"]),
        "PASS_TO_PASS": p2p,
        "project": record["project"],
        "split": record["split"],
        "family": record["family"],
        "mutation_patch": record["mutation_patch"],
        "test_files": list(record["test_files"]),
    }


def list_instances(split: str = "all", project: str | None = None) -> list[dict[str, Any]]:
    """Validated instances (SWE-bench fields ``instance_id``, ``repo``, ``version``, ``base_commit``, ``patch``
    (the fix), ``test_patch`` (empty), ``problem_statement``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``; plus
    ``project``, ``split``, ``family``, ``mutation_patch`` (the injected bug) and ``test_files``), sorted by id.

    Raises:
        ValueError: Unknown ``split``.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    records, bases = _load()
    return [_with_p2p(r, bases) for r in records
            if (split == "all" or r["split"] == split) and (project is None or r["project"] == project)]


def get_instance(instance_id: str) -> dict[str, Any]:
    """One instance by id.

    Raises:
        TaskLoadError: Unknown id.
    """
    for r in list_instances("all"):
        if r["instance_id"] == instance_id:
            return r
    raise TaskLoadError(f"unknown swe instance {instance_id!r}")


def export_jsonl(path: str | Path, split: str = "all") -> int:
    """Write the instances of ``split`` as SWE-bench-format JSONL; returns how many."""
    fields = ("instance_id", "repo", "version", "base_commit", "patch", "test_patch", "problem_statement",
              "FAIL_TO_PASS", "PASS_TO_PASS")
    rows = list_instances(split)
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps({k: r[k] for k in fields}) + "\n")
    return len(rows)
