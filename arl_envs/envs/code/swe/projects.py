"""The real PyPI projects of ``arl/code.swe-v0`` and their offline, cached source trees.

Each :class:`Project` is a pure-Python, permissively licensed package whose source distribution on PyPI ships its
test suite. Its sdist is fetched once with ``pip download --no-deps --no-binary :all: NAME==VERSION`` (the package
registry, never a hub) into ``<cache>/sdists`` and unpacked into ``<cache>/trees/<name>-<version>`` (the project
"installed once": pure Python, importable from the tree with its source directory on ``sys.path``). Episodes copy
that tree; nothing is fetched at run time. The test tool chain (pytest and its dependencies, pinned) is installed
once with ``pip install --target <cache>/toolchain`` and bound read-only into the sandbox.

``<cache>`` is ``$ARL_ENVS_SWE_CACHE`` or ``~/.cache/arl-envs/swe``.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from arl_envs.core.errors import SandboxUnavailable, TaskLoadError

#: pytest version of the tool chain (the build validates with it; the sandbox grades with it).
PYTEST_VERSION = "9.0.3"
#: Seconds a ``pip`` call may take.
PIP_TIMEOUT_S = 600


@dataclass(frozen=True)
class Project:
    """One source project.

    Attributes:
        name: PyPI name.
        version: Pinned version.
        license: SPDX identifier of its license (from the sdist's LICENSE file).
        split: ``"train"`` or ``"test"`` (split by project: no test-split project in train).
        src: Directory of the tree put on ``sys.path`` (``"."`` or ``"src"``).
        modules: Source files that mutations may change (relative to the tree root).
        tests: Test files or directories run by the test command (relative to the tree root).
        test_command: How the project's tests run (what the agent is told).
        repo: The upstream repository, for SWE-bench's ``repo`` field (metadata only, never fetched).
    """

    name: str
    version: str
    license: str
    split: str
    src: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]
    test_command: str
    repo: str

    @property
    def key(self) -> str:
        """``<name>-<version>`` (the tree's directory name)."""
        return f"{self.name}-{self.version}"


def _p(name: str, version: str, license: str, split: str, src: str, modules: str, tests: str, repo: str,
       opts: str = "") -> Project:
    return Project(name, version, license, split, src, tuple(modules.split()), tuple(tests.split()),
                   f"python3 -m pytest -q {opts + ' ' if opts else ''}{tests}", repo)


#: The projects (8): licenses read from each sdist's LICENSE file; suites run offline in seconds on one core.
PROJECTS: dict[str, Project] = {p.name: p for p in (
    _p("inflection", "0.5.1", "MIT", "train", ".", "inflection/__init__.py", "test_inflection.py",
       "jpvanhal/inflection"),
    _p("parse", "1.20.2", "MIT", "train", ".", "parse.py", "tests", "r1chardj0n3s/parse"),
    _p("cachetools", "5.5.0", "MIT", "train", "src", "src/cachetools/__init__.py src/cachetools/func.py "
       "src/cachetools/keys.py", "tests", "tkem/cachetools"),
    _p("toolz", "0.12.1", "BSD-3-Clause", "train", ".", "toolz/itertoolz.py toolz/functoolz.py toolz/dicttoolz.py "
       "toolz/recipes.py", "toolz/tests", "pytoolz/toolz"),
    _p("more-itertools", "10.5.0", "MIT", "train", ".", "more_itertools/more.py more_itertools/recipes.py", "tests",
       "more-itertools/more-itertools"),
    _p("six", "1.16.0", "MIT", "train", ".", "six.py", "test_six.py", "benjaminp/six"),
    _p("semver", "3.0.2", "BSD-3-Clause", "test", "src", "src/semver/version.py src/semver/_deprecated.py", "tests",
       "python-semver/python-semver", "-o addopts=''"),  # its setup.cfg's addopts need pytest-cov
    _p("jmespath", "1.0.1", "MIT", "test", ".", "jmespath/parser.py jmespath/lexer.py jmespath/visitor.py "
       "jmespath/functions.py", "tests", "jmespath/jmespath.py"),
)}


def cache_dir() -> Path:
    """``$ARL_ENVS_SWE_CACHE`` or ``~/.cache/arl-envs/swe``."""
    return Path(os.environ.get("ARL_ENVS_SWE_CACHE") or Path.home() / ".cache" / "arl-envs" / "swe")


def get_project(name: str) -> Project:
    """The project called ``name``.

    Raises:
        TaskLoadError: Unknown name.
    """
    if name not in PROJECTS:
        raise TaskLoadError(f"unknown swe project {name!r}; known: {', '.join(sorted(PROJECTS))}")
    return PROJECTS[name]


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)  # noqa: S603
    if res.returncode != 0:
        raise SandboxUnavailable(f"`{' '.join(cmd[2:])}` failed (network to PyPI needed once):\n{res.stderr[-1500:]}")


def project_tree(project: Project, fetch: bool = True) -> Path:
    """The unpacked sdist of ``project`` (fetched and unpacked on first use when ``fetch``).

    Raises:
        SandboxUnavailable: Not cached and ``fetch`` is False, or ``pip download`` failed.
    """
    tree = cache_dir() / "trees" / project.key
    if (tree / ".arl-complete").exists():
        return tree
    if not fetch:
        raise SandboxUnavailable(f"{project.key} is not cached: run `arl-envs swe build --projects {project.name}`")
    sdists = cache_dir() / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    found = [p for p in sdists.glob("*.tar.gz") if _sdist_matches(p.name, project)]
    if not found:
        _pip("download", "--no-deps", "--no-binary", ":all:", f"{project.name}=={project.version}", "-d", str(sdists))
        found = [p for p in sdists.glob("*.tar.gz") if _sdist_matches(p.name, project)]
    if not found:
        raise SandboxUnavailable(f"pip downloaded no sdist for {project.key}")
    tmp = tree.with_name(tree.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(found[0]) as tar:
        tar.extractall(tmp, filter="data")
    (top,) = list(tmp.iterdir())
    shutil.rmtree(tree, ignore_errors=True)
    top.rename(tree)
    shutil.rmtree(tmp, ignore_errors=True)
    (tree / ".arl-complete").write_text(project.key + "\n")
    return tree


def _sdist_matches(filename: str, project: Project) -> bool:
    stem = filename[: -len(".tar.gz")].lower().replace("_", "-")
    return stem == project.key.lower().replace("_", "-")


def toolchain_dir(fetch: bool = True) -> Path:
    """A directory holding pytest (pinned to :data:`PYTEST_VERSION`) and its dependencies, installed once.

    Raises:
        SandboxUnavailable: Not installed and ``fetch`` is False, or ``pip install`` failed.
    """
    path = cache_dir() / f"toolchain-pytest-{PYTEST_VERSION}"
    if (path / ".arl-complete").exists():
        return path
    if not fetch:
        raise SandboxUnavailable("the swe test tool chain is not installed: run `arl-envs swe build`")
    tmp = path.with_name(path.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    _pip("install", "--no-compile", "--target", str(tmp), f"pytest=={PYTEST_VERSION}")
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    (path / ".arl-complete").write_text(PYTEST_VERSION + "\n")
    return path


def shared_toolchain_dir() -> Path:
    """A world-readable copy of :func:`toolchain_dir` (``<tmp>/arl-envs-swe-toolchain-<version>-<uid>``, made once):
    the sandbox's user must be able to read what is bound into it, and ``~/.cache`` may be private (``/root``).

    Raises:
        TaskLoadError: That path exists but is a link, or a directory of another user or writable by others.
    """
    import tempfile  # noqa: PLC0415

    dest = Path(tempfile.gettempdir()) / f"arl-envs-swe-toolchain-{PYTEST_VERSION}-{os.getuid()}"
    if os.path.lexists(dest):
        st = os.lstat(dest)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise TaskLoadError(f"{dest} is not a directory of this user that only it can write (a link, or made by "
                                "someone else): its pytest would grade every run; remove it")
        if (dest / ".arl-complete").exists():
            return dest
    src = toolchain_dir()
    tmp = dest.with_name(dest.name + f".partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("__pycache__", "bin"))
    for root, dirs, files in os.walk(tmp):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    try:
        tmp.rename(dest)
    except OSError:  # another process made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def tree_files(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (relative POSIX path -> bytes), without build leftovers
    (``*.egg-info``, ``__pycache__``, ``.arl-complete``)."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or path.is_symlink() or rel == ".arl-complete":
            continue
        if "__pycache__" in path.parts or any(part.endswith(".egg-info") for part in path.parts):
            continue
        out[rel] = path.read_bytes()
    return out


def is_test_path(project: Project, rel: str) -> bool:
    """Whether ``rel`` is part of the project's tests (its test files/directories, any ``conftest.py``)."""
    if rel.rsplit("/", 1)[-1] == "conftest.py":
        return True
    return any(rel == t or rel.startswith(t.rstrip("/") + "/") for t in project.tests)
