"""Security cases of arl/math.formal-v0 (issue 13): Coq proofs that reach for the shell or host files fail.

Two layers, both for real: the env refuses the commands before Coq runs (task 0), and the sandbox alone
(``CoqChecker.run_raw``, no pre-check) contains coqc: host files are invisible and nothing lands on the host.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.envs.math.coq import CoqChecker
from arl_envs_tests.sandbox.conftest import bwrap_skip_reason

pytestmark = [
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed (apt-get install -y coq)"),
    pytest.mark.skipif(bwrap_skip_reason() is not None, reason=str(bwrap_skip_reason())),
]

HOSTILE = {
    "redirect": 'Redirect "/tmp/arl_coq_pwn" Print nat.',
    "load_passwd": 'Load "/etc/passwd".',
    "declare_ml": 'Declare ML Module "coq-core.plugins.ltac".',
    "drop": "Drop.",
    "cd": 'Cd "/".',
    "add_loadpath": 'Add LoadPath "/" as Root.',
    "extraction": 'Extraction "/tmp/arl_coq_pwn" nat.',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_env_refuses_shell_and_file_commands(name: str) -> None:
    env = gym.make("arl/math.formal-v0", max_attempts=1)
    try:
        env.reset(options={"task_id": "add_comm"})
        lemma = env.unwrapped.lemma
        src = HOSTILE[name] + "\n" + lemma.skeleton(lemma.proof)
        _, reward, term, _, info = env.step("```coq\n" + src + "```")
        assert term and not info["success"] and reward == 0.0 and info["coq_stage"] == "precheck"
    finally:
        env.close()


@pytest.fixture(scope="module")
def checker() -> CoqChecker:
    c = CoqChecker(timeout_s=20)
    yield c
    c.close()


def test_sandbox_hides_host_files_from_load(checker: CoqChecker, tmp_path: Path) -> None:
    secret = tmp_path / f"secret_{uuid.uuid4().hex}.v"
    secret.write_text("Definition leaked := 42.\n")
    res = checker.run_raw({"A.v": f'Load "{secret.with_suffix("")}".\nPrint leaked.\n'}, "A.v")
    assert not res.ok and "42" not in res.stdout
    res = checker.run_raw({"B.v": 'Load "/etc/shadow".\n'}, "B.v")
    assert not res.ok


def test_sandbox_redirect_writes_nothing_on_host(checker: CoqChecker) -> None:
    target = Path(f"/tmp/arl_coq_pwn_{uuid.uuid4().hex}")
    res = checker.run_raw({"A.v": f'Redirect "{target}" Print nat.\n'}, "A.v")
    assert res.sandbox_error is None
    assert not target.exists() and not target.with_suffix(".out").exists()
