"""Bubblewrap-specific behaviour: identity, binds, cgroups, work directory safety, fallbacks."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox import Limits
from arl_envs_tests.sandbox.conftest import bwrap_skip_reason, cgroup_skip_reason, rlimits_host_uid

pytestmark = pytest.mark.skipif(bwrap_skip_reason() is not None, reason=str(bwrap_skip_reason()))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (tmpfs mounts, dropping to another uid)")


@pytest.fixture
def bwrap_sandbox():
    from arl_envs.sandbox.bwrap import BwrapSandbox

    sb = BwrapSandbox(limits=Limits(wall_time_s=10))
    yield sb
    sb.close()


def test_identity_and_read_only_system(bwrap_sandbox) -> None:
    result = bwrap_sandbox.run(
        "id -u; id -un; hostname; (touch /usr/x || echo ro-usr) 2>/dev/null; (touch /etc/x || echo ro-etc) 2>/dev/null;"
        " cut -d: -f1 /etc/passwd | tr '\\n' ' '"
    )
    assert result.stdout == "1000\nsandbox\nsandbox\nro-usr\nro-etc\nroot sandbox nobody "


def test_no_nested_user_namespaces(bwrap_sandbox) -> None:
    result = bwrap_sandbox.run("unshare --user true && echo nested-ok || echo denied")
    assert result.stdout.strip().endswith("denied")


def _host_uids(marker: bytes) -> set[int]:
    uids = set()
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and marker in (d / "cmdline").read_bytes():
                status = (d / "status").read_text()
                uids.add(int(next(x for x in status.splitlines() if x.startswith("Uid:")).split()[1]))
        except OSError:
            continue
    return uids


@needs_root
def test_runs_as_unprivileged_host_uid(bwrap_sandbox) -> None:
    assert bwrap_sandbox.host_uid != 0
    with bwrap_sandbox.open_session() as py:
        py.run("1")
        assert _host_uids(b"CPU_PER_CALL_S") == {bwrap_sandbox.host_uid}
    seen: set[int] = set()

    def probe() -> None:
        time.sleep(0.5)
        seen.update(_host_uids(b"sleep 3.14159"))

    thread = threading.Thread(target=probe)
    thread.start()
    bwrap_sandbox.run("sleep 3.14159", limits=Limits(wall_time_s=1))
    thread.join()
    assert seen == {bwrap_sandbox.host_uid}


@pytest.fixture
def public_dir():
    """A directory the sandbox's host uid can read (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="arl-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_site_packages_bound_read_only(public_dir: Path, tmp_path: Path) -> None:
    from arl_envs.sandbox.bwrap import BwrapSandbox

    site = public_dir / "site"
    site.mkdir()
    (site / "arl_probe_mod.py").write_text("VALUE = 41 + 1\n")
    with BwrapSandbox(site_packages=[str(site)]) as sb:
        result = sb.run(
            code="import arl_probe_mod, os; print(arl_probe_mod.VALUE, os.access(arl_probe_mod.__file__, os.W_OK))"
        )
        assert result.stdout == "42 False\n", result
    with pytest.raises(ValueError, match="not a directory"):
        BwrapSandbox(site_packages=[str(public_dir / "missing")])
    if os.geteuid() == 0:
        private = tmp_path / "private-site"
        private.mkdir()
        tmp_path.chmod(0o700)
        with pytest.raises(ValueError, match="cannot read it"):
            BwrapSandbox(site_packages=[str(private)])


def test_non_system_python_prefix_is_bound() -> None:
    from arl_envs.sandbox.bwrap import BwrapSandbox, _readable_by

    if os.path.realpath(sys.executable).startswith("/usr/"):
        pytest.skip("this interpreter is the system one; nothing extra to bind")
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    if not _readable_by(sys.executable, uid, uid):
        with pytest.raises(ValueError, match="cannot read it"):  # e.g. pyenv under a private /root
            BwrapSandbox(python=sys.executable)
        return
    with BwrapSandbox(python=sys.executable) as sb:
        result = sb.run(code="import sys; print(sys.version)")
        assert result.ok and result.stdout.strip() == sys.version


def test_setup_failure_is_a_sandbox_error() -> None:
    from arl_envs.sandbox.bwrap import BwrapSandbox

    with BwrapSandbox() as sb:
        sb._static_args = [*sb._static_args, "--ro-bind", "/nonexistent-src", "/x"]  # noqa: SLF001
        result = sb.run("true")
        assert result.sandbox_error is not None and "nonexistent-src" in result.sandbox_error
    with BwrapSandbox() as sb:
        forged = sb.run("echo 'bwrap: fake' >&2; exit 1")  # a program cannot forge one
        assert forged.sandbox_error is None and forged.exit_code == 1


def test_rlimit_only_mode_and_argument_checks() -> None:
    from arl_envs.sandbox.bwrap import BwrapSandbox

    with BwrapSandbox(use_cgroups=False, host_uid=rlimits_host_uid()) as sb:
        result = sb.run(code="print(1)")
        assert result.ok and result.cpu_time_s is None
    with pytest.raises(ValueError):
        BwrapSandbox(use_cgroups="yes")
    with pytest.raises(ValueError):
        BwrapSandbox(workdir_mb=0)
    with pytest.raises(ValueError):
        BwrapSandbox(python="/nonexistent/python3")


def test_required_cgroups_missing_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from arl_envs.sandbox import bwrap

    class Unavailable:
        available = False
        reason = "no cgroup here (test)"

    monkeypatch.setattr(bwrap, "cgroup_manager", lambda: Unavailable())
    with pytest.raises(SandboxUnavailable, match="no cgroup here"):
        bwrap.BwrapSandbox(use_cgroups=True)


@pytest.mark.skipif(cgroup_skip_reason() is not None, reason=str(cgroup_skip_reason()))
def test_cgroups_measure_cpu_and_are_removed(bwrap_sandbox) -> None:
    from arl_envs.sandbox._bwrap_spawner import spawner_pool
    from arl_envs.sandbox.cgroups import CGROUP_PREFIX, cgroup_manager

    result = bwrap_sandbox.run(code="sum(i * i for i in range(3_000_000))")
    assert result.ok and result.cpu_time_s is not None and result.cpu_time_s > 0.05
    spawner = bwrap_sandbox._spawner  # noqa: SLF001 - the sandbox's cgroup holds only its spawner between runs
    assert spawner is not None and spawner.cgroup.pids() == {spawner.pid}
    bwrap_sandbox.close()
    parents = set(cgroup_manager()._parents.values())  # noqa: SLF001
    prefix = f"{CGROUP_PREFIX}-{os.getpid()}-"
    deadline = time.monotonic() + 5
    while True:  # the spawners the pool keeps ready for the next sandboxes have cgroups of their own
        pooled = {d for sp in spawner_pool.ready() if sp.cgroup is not None for d in sp.cgroup.dirs.values()}
        left = [d for p in parents for d in p.iterdir() if d.name.startswith(prefix) and d not in pooled]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == []
    assert spawner.cgroup.dirs and not any(d in pooled for d in spawner.cgroup.dirs.values())


@needs_root
def test_work_dir_is_a_size_limited_tmpfs() -> None:
    from arl_envs.sandbox.bwrap import BwrapSandbox

    with BwrapSandbox(workdir_mb=8) as sb:
        code = "chunk = b'0' * (1 << 20)\nfor i in range(16):\n    open(f'f{i}', 'wb').write(chunk)\n"
        result = sb.run(code=code)
        assert result.exit_code == 1 and "No space left" in result.stderr
        work = sb.workdir
        assert os.path.ismount(work)
    assert not work.exists()  # unmounted and removed on close


def test_planted_symlinks_are_never_followed(bwrap_sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret")
    os.chmod(tmp_path, 0o755)
    plant = f"ln -s {outside} leak; ln -s {tmp_path} dir; ln -s {tmp_path}/new.txt target"
    assert bwrap_sandbox.run(plant).ok
    assert bwrap_sandbox.read_file("leak") is None
    assert bwrap_sandbox.read_file("dir/outside.txt") is None
    result = bwrap_sandbox.run("true", files={"dir/evil.txt": "x"})
    assert result.exit_code == 126 and "cannot write" in result.stderr
    with pytest.raises(OSError):
        bwrap_sandbox.write_files({"dir/evil.txt": "x"})
    bwrap_sandbox.write_files({"target": "replaced"})  # the link is replaced by a regular file
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "new.txt").exists()
    assert outside.read_text() == "host secret"
    assert bwrap_sandbox.run("cat target; test -L target || echo regular").stdout == "replacedregular\n"


def test_stale_state_of_dead_owner_is_swept(tmp_path: Path) -> None:
    from arl_envs.sandbox.bwrap import _state_root, sweep_stale_state

    stale = _state_root() / "999999999-deadbeef"
    (stale / "work").mkdir(parents=True)
    (stale / "lock").write_text("")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert sweep_stale_state() >= 1
    assert not stale.exists()


def test_state_tree_removal_survives_deep_and_locked_trees(tmp_path) -> None:
    """Without root the work dir is a plain directory holding the sandbox's tree: its removal (reset, close,
    orphan sweep) must cope with more nesting than the recursion limit (``shutil.rmtree`` raised
    ``RecursionError`` even with ``ignore_errors``) and ``chmod 000`` directories, and never follow a symlink out
    (issue 9, attack run 2)."""
    from arl_envs.sandbox.bwrap import _remove_tree

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    state = tmp_path / "state"
    d = state / "work"
    d.mkdir(parents=True)
    for _ in range(1200):
        d = d / "d"
        d.mkdir()
    (state / "work" / "link").symlink_to(outside)
    (state / "work" / "locked").mkdir()
    (state / "work" / "locked" / "f").write_text("x")
    (state / "work" / "locked").chmod(0)
    _remove_tree(state)
    assert not state.exists() and (outside / "keep.txt").read_text() == "keep"
    _remove_tree(state)  # gone already: nothing happens


def test_seccomp_probe_tells_the_filter_apart() -> None:
    """The battery's seccomp probe fails without the filter (so its EPERM checks can fail), passes with it."""
    from arl_envs.sandbox.bwrap import BwrapSandbox
    from arl_envs_tests.sandbox.test_security import check_seccomp_probe, seccomp_probe_code

    code = seccomp_probe_code()
    with BwrapSandbox(seccomp=False) as sb:
        result = sb.run(code=code)
        assert result.ok and "seccomp=0" in result.stdout and "unshare(0x0)=0" in result.stdout, result
        with pytest.raises(AssertionError):
            check_seccomp_probe(result, "bwrap")
    with BwrapSandbox() as sb:
        check_seccomp_probe(sb.run(code=code), "bwrap")


def test_installed_package_is_hidden_wherever_a_bind_shows_it(public_dir: Path) -> None:
    """A sandboxed program must not read the package's task data (gold answers, tests) through any bind."""
    from arl_envs.sandbox.bwrap import PACKAGE_DIR, SITE_PACKAGES_MOUNT, BwrapSandbox

    parent = PACKAGE_DIR.parent  # e.g. site-packages of a regular install, or the checkout
    try:
        sb = BwrapSandbox(site_packages=[str(parent)], ro_binds={str(parent): "/opt/arl-extra"})
    except ValueError as exc:
        pytest.skip(f"the package's parent cannot be bound here: {exc}")
    with sb:
        data = "arl_envs/envs/math/data/gsm8k_test.jsonl"
        result = sb.run(
            f"for d in {SITE_PACKAGES_MOUNT}0 /opt/arl-extra; do ls $d/arl_envs | wc -l; test -e $d/{data} && echo leak;"
            f" touch $d/arl_envs/x 2>/dev/null && echo writable; ls $d | grep -c .; done"
        )
        lines = result.stdout.split()
        assert result.ok and "leak" not in lines and "writable" not in lines, result
        assert lines[0] == lines[2] == "0"  # the package directory is empty inside ...
        assert int(lines[1]) > 0 and int(lines[3]) > 0  # ... its siblings are still there
    assert (parent / data).is_file()  # the data exists on the host: the check above is meaningful


def test_package_under_usr_is_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common deployment: ``pip install`` into ``/usr/local`` (or Debian's dist-packages), inside the ``/usr`` bind.
    Stand-in: a real directory under ``/usr`` plays the package's place."""
    from arl_envs.sandbox import bwrap

    stand_in = next((p for p in sorted(Path("/usr/share").iterdir()) if p.is_dir() and any(p.iterdir())), None)
    if stand_in is None:
        pytest.skip("no non-empty directory under /usr/share")
    monkeypatch.setattr(bwrap, "PACKAGE_DIR", stand_in)
    with bwrap.BwrapSandbox() as sb:
        result = sb.run(f"ls -A {stand_in} | wc -l; ls /usr/share | grep -c .")
        assert result.ok and result.stdout.split()[0] == "0" and int(result.stdout.split()[1]) > 1, result
