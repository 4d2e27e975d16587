"""Importing arl-envs changes nothing process-wide; library code flips no process-wide switch."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Every env module outside the sandbox package (whose host changes are lazy and documented there).
_PROBE = r"""
import atexit, importlib, json, pkgutil, sys, threading
calls = []
real = atexit.register
def spy(fn, *a, **k):
    calls.append(f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', None)}")
    return real(fn, *a, **k)
atexit.register = spy
stdout, stdin, path_len, meta_len = sys.stdout, sys.stdin, len(sys.path), len(sys.meta_path)
import arl_envs, arl_envs.envs
names = [m.name for m in pkgutil.walk_packages(arl_envs.envs.__path__, "arl_envs.envs.")]
names += ["arl_envs.cli", "arl_envs.testing", "arl_envs.wrappers", "arl_envs.agents"]
failed = []
for name in names:
    try:
        importlib.import_module(name)
    except ImportError as exc:  # an optional dependency missing here
        failed.append(name)
print(json.dumps({"atexit": [c for c in calls if c.startswith("arl_")], "threads": threading.active_count(),
                  "same_streams": sys.stdout is stdout and sys.stdin is stdin,
                  "sys_path_grew": len(sys.path) - path_len, "meta_path_grew": len(sys.meta_path) - meta_len,
                  "imported": len(names) - len(failed)}))
"""


def test_importing_every_env_module_registers_no_atexit_and_starts_nothing() -> None:
    import json

    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["imported"] >= 20
    assert report["atexit"] == [], report
    assert report["threads"] == 1 and report["same_streams"] and report["meta_path_grew"] == 0, report


def test_library_code_flips_no_process_wide_switch() -> None:
    """``matplotlib.use``, Hugging Face progress-bar/verbosity toggles, ``torch.set_num_threads``, stream swaps and
    ``sys.path``/``sys.modules`` edits are not in the library (the sandbox child and grader worker are separate
    processes, so their files are exempt)."""
    pattern = re.compile(
        r"matplotlib\.use\(|disable_progress_bar|enable_progress_bar|set_verbosity|torch\.set_num_threads\(|"
        r"redirect_stdout|redirect_stderr|sys\.(stdin|stdout|stderr)\s*=(?!=)|sys\.path\.(insert|append)|"
        r"sys\.modules\.pop|del sys\.modules|sys\.meta_path\.insert"
    )
    exempt = {"arl_envs/envs/code/child.py", "arl_envs/envs/math/grading.py"}  # run in their own processes
    hits = []
    for base in (ROOT / "arl_envs", ROOT / "baselines" / "arl_baselines"):
        for path in base.rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel in exempt or rel.startswith("arl_envs/sandbox/"):
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#")[0]
                if pattern.search(code) and "``" not in code:  # ``...`` is docstring text
                    hits.append(f"{rel}:{n}: {line.strip()}")
    # `arl-envs train` is a program, not a library call: it applies the user's explicit GRPOConfig.num_threads.
    hits = [h for h in hits if "set_num_threads(cfg.num_threads)" not in h]
    assert not hits, "\n".join(hits)
