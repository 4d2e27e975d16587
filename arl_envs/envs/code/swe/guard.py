"""The submission screen of ``arl/code.swe-v0``: what a submitted work tree may add before it is graded.

The tests run in the same process as the code under test (as in SWE-bench), so a submission could neuter pytest
from the package it imports (replace ``Function.runtest``, rewrite reports, exit early, write to the result pipe).
Before grading, :func:`screen` lists the work tree from inside the sandbox (``python3 -I -S``: no site or user
code runs), compares it with the pristine project tree and refuses the submission (task 0, the reason said) when

* a file that is not a test file is new or changed and is a compiled or import-hook file (``.so``, ``.pyd``,
  ``.pyc``, ``.pth``, ``.egg-link``), or
* a line added to a source file (a line of the new text found nowhere in the pristine file; every line of a new
  file) matches :data:`DENIED`: the test runner's modules, a new import of ``sys`` (or ``os`` under another name),
  the interpreter's frames, module table, arguments and exits (also through an alias: any ``.modules``,
  ``.argv``, ``._getframe``), dynamic code (``exec``, ``eval``, ``compile``, ``__import__``), raw file
  descriptors and processes.

A line restored to its pristine text is never refused, so a fix that puts original code back passes (the expert's
reverse patch, say). The screen raises the bar; it is not a proof: the grading process still runs the submitted
code. Test files are restored by grading itself (:mod:`.grade`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

#: Modules a fix of the shipped projects never needs and a submission could use to reach into the test process.
_MODULES = ("pytest", "_pytest", "unittest", "gc", "inspect", "signal", "builtins", "ctypes", "atexit", "marshal",
            "pickle", "base64", "codecs", "importlib", "subprocess", "faulthandler", "threading", "multiprocessing")
_MOD = "|".join(_MODULES)
#: What an added source line must not hold (matched on the raw line, strings and comments included).
DENIED = re.compile(
    r"_pytest|\bpytest\b"
    rf"|\b(?:{_MOD})\s*\.|\bimport\s+(?:{_MOD})\b|\bfrom\s+(?:{_MOD})\b"
    r"|\bimport\s+sys\b|\bfrom\s+sys\s+import|\bimport\s+os\s+as\b|\bfrom\s+os\s+import"
    r"|\bsys\s*\.\s*(?:exit|__dict__)|\.\s*(?:modules|argv|_getframe|settrace|setprofile|_exit)\b"
    r"|__import__|__code__|__globals__|__subclasses__|__builtins__"
    r"|\bos\s*\.\s*(?:_exit|write|dup2?|fdopen|kill|killpg|open|system|exec\w*|spawn\w*|fork\w*|popen)"
    r"|(?<![.\w])(?:exec|eval|compile)\s*\("
    r"|\b(?:getattr|vars|setattr)\s*\(\s*(?:sys|os)\b"
    r"|/proc/|/dev/fd"
)
#: New or changed files of these suffixes are refused (compiled modules, bytecode, import hooks).
DENIED_SUFFIXES = (".so", ".pyd", ".pyc", ".pth", ".egg-link")
#: Largest source file screened, in bytes (a larger new or changed one is refused).
MAX_SCREENED_BYTES = 1 << 20

#: Run inside the sandbox (cwd = the work tree): ``{relative path: sha256 hex or "link"}`` of every file.
LISTING_CODE = r"""
import hashlib, json, os
out = {}
for root, dirs, files in os.walk(".", followlinks=False):
    dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git", ".pytest_cache")]
    for name in files:
        path = os.path.join(root, name)
        rel = os.path.relpath(path, ".")
        if os.path.islink(path):
            out[rel] = "link"
        elif os.path.isfile(path):
            with open(path, "rb") as fh:
                out[rel] = hashlib.sha256(fh.read()).hexdigest()
print(json.dumps(out))
"""


def screen(sb: Any, pristine: Mapping[str, bytes], is_test: Callable[[str], bool]) -> tuple[str | None, str | None]:
    """Screen the sandbox's work tree against the pristine project files.

    Args:
        sb: The episode's sandbox (work directory = the project tree).
        pristine: ``{relative path: bytes}`` of the pristine tree.
        is_test: Whether a relative path is one of the project's test files (left to grading).

    Returns:
        ``(refusal, env_error)``: a refusal reason (the submission is not graded and scores 0), or an infrastructure
        error (the listing failed: not scored); both None when the tree passes.
    """
    res = sb.run(command=[sb.python, "-I", "-S", "-c", LISTING_CODE])
    if res.sandbox_error is not None:
        return None, f"the work tree could not be listed: {res.sandbox_error}"
    try:
        listing = json.loads(res.stdout)
    except (ValueError, TypeError):
        return None, f"the work tree listing was unreadable (exit {res.exit_code}): {str(res.stderr)[:200]}"
    for rel in sorted(listing):
        if is_test(rel):
            continue
        old = pristine.get(rel)
        if old is not None and listing[rel] == hashlib.sha256(old).hexdigest():
            continue
        if rel.endswith(DENIED_SUFFIXES):
            return f"{rel} is a compiled or import-hook file, which a fix never adds", None
        if not rel.endswith(".py"):
            continue
        if listing[rel] == "link":
            return f"{rel} is a symbolic link, which a fix never adds", None
        data = sb.read_file(rel, MAX_SCREENED_BYTES + 1)
        if data is None:
            continue
        if len(data) > MAX_SCREENED_BYTES:
            return f"{rel} is larger than {MAX_SCREENED_BYTES} bytes", None
        text = data.decode("utf-8", errors="replace")
        known = set(old.decode("utf-8", errors="replace").splitlines()) if old is not None else set()
        for lineno, line in enumerate(text.splitlines(), 1):
            if line in known:
                continue
            hit = DENIED.search(line)
            if hit:
                return (f"line {lineno} of {rel} adds {hit.group(0).strip()!r}, which reaches into the test process "
                        "or the interpreter; a fix changes the project's behaviour, not pytest's"), None
    return None, None
