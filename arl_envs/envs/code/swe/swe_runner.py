"""The in-sandbox grading runner of ``arl/code.swe-v0`` (standard library only; runs INSIDE the sandbox).

Sent as the only ``runner`` source of the code harness's :data:`~arl_envs.envs.code.protocol.BOOTSTRAP`
(``python3 -I -S -B``, made non-dumpable before it reads its payload from stdin; see :mod:`arl_envs.envs.code.grade`).
``main``:

1. copies the agent's work tree (``payload["repo"]``) into a private scratch directory made before any submitted
   code runs (links copied as links, never followed);
2. restores the tests there: every test path of the project and every ``conftest.py`` is removed, then the
   pristine test files from the payload (base64) are written (changes to tests never count; an agent's ``conftest.py``,
   ``pytest.ini`` or ``sitecustomize.py`` is either removed or ignored: pytest reads only our empty ini file, and
   the test process runs with ``-I -S``: no ``site``, no ``.pth``, no ``PYTHON*`` variables);
3. runs :mod:`.pytest_child` in a fresh process (own session, minimal environment) with a wall deadline, reading
   per-test outcomes from a pipe only it holds the other end of;
4. writes one record ``ARL-CODE-RESULT <nonce> <base64 json> <hmac>`` keyed by the payload's secret, which no
   child ever sees (children are fresh interpreters started after the payload was read).

The record: ``{"outcomes": {nodeid: outcome}, "messages": {nodeid: text}, "status": "ok" | "timeout" | "no_report"}``
or ``{"harness_error": text}`` when the set-up failed before any submitted code ran.
"""

import base64
import hashlib
import hmac
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

RESULT_MARKER = "ARL-CODE-RESULT"
#: Bytes of per-test outcome lines read from the test process at most.
MAX_REPORT_BYTES = 16 << 20


def _restore_tests(repo, test_paths, pristine):
    for rel in test_paths:
        path = os.path.join(repo, rel)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
    for root, dirs, files in os.walk(repo, followlinks=False):
        for name in files:
            if name == "conftest.py":
                try:
                    os.unlink(os.path.join(root, name))
                except OSError:
                    pass
    for rel, data in pristine.items():
        path = os.path.join(repo, rel)
        parent = os.path.dirname(path)
        if os.path.islink(parent):
            os.unlink(parent)
        os.makedirs(parent, exist_ok=True)
        if os.path.islink(path) or os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.unlink(path)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))


def _run_child(payload, repo, ini):
    r, w = os.pipe()
    config = {"path": [os.path.join(repo, payload["src"]), repo, payload["toolchain"]],
              "args": payload["pytest_args_head"] + [ini] + payload["pytest_args_tail"], "fd": w}
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-B", "-c", payload["child"], json.dumps(config)],
        cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        pass_fds=(w,), start_new_session=True,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": repo, "TMPDIR": "/tmp"},
    )
    os.close(w)
    buf = bytearray()
    status = "ok"
    deadline = time.monotonic() + float(payload["timeout_s"])
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                status = "timeout"
                break
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                if len(buf) + len(chunk) <= MAX_REPORT_BYTES:
                    buf += chunk
    finally:
        os.close(r)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if os.getpid() == 1:
            try:
                os.kill(-1, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        proc.wait()
    return status, bytes(buf)


def _parse(data, wanted):
    outcomes, messages, done = {}, {}, False
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "done" in obj:
            done = True
            continue
        nodeid = obj.get("id")
        if not isinstance(nodeid, str):
            continue
        outcome = str(obj.get("o"))
        if nodeid in wanted or not wanted:
            outcomes[nodeid] = outcome
            if outcome != "passed":
                messages[nodeid] = str(obj.get("m", ""))[:2000]
    return outcomes, messages, done


def main(payload):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    key = bytes.fromhex(payload.pop("key"))
    nonce = str(payload["nonce"])
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    scratch = None
    try:
        scratch = "/tmp/arl-swe-" + os.urandom(8).hex()
        os.mkdir(scratch, 0o700)
        repo = os.path.join(scratch, "repo")
        shutil.copytree(payload["repo"], repo, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        _restore_tests(repo, payload["test_paths"], payload["pristine"])
        ini = os.path.join(scratch, "arl.ini")
        with open(ini, "w") as fh:
            fh.write("[pytest]\n")
        record = {"harness_error": None}
        try:
            status, data = _run_child(payload, repo, ini)
        except (OSError, MemoryError) as exc:  # submitted code ran only inside the child: ours
            record = {"harness_error": f"could not run the tests: {type(exc).__name__}: {exc}"}
        else:
            outcomes, messages, done = _parse(data, set(payload["wanted"]))
            record = {"outcomes": outcomes, "messages": messages,
                      "status": status if status != "ok" or done else "no_report"}
    except BaseException as exc:  # noqa: BLE001 - set-up failed before any submitted code ran: the sandbox's
        record = {"harness_error": f"{type(exc).__name__}: {exc}"[:2000]}
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    body = base64.b64encode(json.dumps(record).encode()).decode()
    mac = hmac.new(key, f"{nonce} {body}".encode(), hashlib.sha256).hexdigest()
    data = f"\n{RESULT_MARKER} {nonce} {body} {mac}\n".encode()
    while data:
        data = data[os.write(1, data):]
