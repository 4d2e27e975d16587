"""Build the Docker image that :class:`~arl_envs.sandbox.docker.DockerSandbox` runs.

Two ways, chosen by ``method``:

* ``"dockerfile"``: ``docker build`` of the ``Dockerfile`` next to this module (``FROM debian:bookworm-slim``),
  when a registry is reachable.
* ``"debootstrap"``: offline-friendly. ``debootstrap --variant=minbase --include=python3 <suite> <dir> <mirror>``
  builds a Debian root fs from an apt mirror (the one in ``/etc/apt/sources.list*`` by default), we add the
  ``sandbox`` user (uid/gid 1000) and ``/work``, trim docs/locales, and ``docker import`` the tarball with the
  same ``USER``/``WORKDIR``/``CMD`` as the Dockerfile. Needs root and ``apt-get install debootstrap``.

``"auto"`` (default) keeps an existing image (the build is cached by tag), otherwise tries the Dockerfile when
the base image can be pulled and falls back to debootstrap.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from arl_envs.core.errors import SandboxUnavailable

#: Image tag DockerSandbox uses by default. Bump the suffix when the image contents change.
DEFAULT_IMAGE = "arl-envs-sandbox:bookworm-py3-v1"
#: Debian suite of the image; its python3 (3.11) matches Debian bookworm hosts.
DEFAULT_SUITE = "bookworm"
#: Mirror used when none can be read from the apt sources of this machine.
FALLBACK_MIRROR = "http://deb.debian.org/debian"
#: uid/gid of the unprivileged ``sandbox`` user inside the image.
SANDBOX_UID = 1000
#: Label set on images we build, so a foreign image with the same tag is noticed.
IMAGE_LABEL = "org.arl-envs.sandbox-image"
#: Base image of the Dockerfile route.
DOCKERFILE_BASE = "debian:bookworm-slim"
#: Seconds allowed for the registry probe (a pull of the base image) in ``method="auto"``.
REGISTRY_PROBE_TIMEOUT_S = 60
#: Paths removed from the debootstrap root fs to shrink the image (docs, manuals, locales, apt caches).
TRIM_PATHS = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt/archives",
    "var/lib/apt/lists",
)
#: ``docker import --change`` instructions giving the imported image the Dockerfile's metadata.
IMPORT_CHANGES = (
    f"USER {SANDBOX_UID}:{SANDBOX_UID}",
    "WORKDIR /work",
    'CMD ["sleep", "infinity"]',
    f'LABEL {IMAGE_LABEL}="1"',
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8",
)

DOCKER_INSTALL_HINT = (
    "Docker is not reachable. Install and start it: `apt-get install -y docker.io` then "
    "`dockerd > /tmp/dockerd.log 2>&1 &` (or `systemctl start docker`), and `pip install docker`."
)
DEBOOTSTRAP_INSTALL_HINT = "debootstrap is missing: `apt-get install -y debootstrap` (needs root)."


def docker_client(timeout_s: float = 120.0):  # noqa: ANN201 - docker is an optional import
    """Return a connected ``docker.DockerClient``.

    Args:
        timeout_s: HTTP timeout of API calls, seconds.

    Raises:
        SandboxUnavailable: the ``docker`` package is missing or the daemon does not answer.
    """
    try:
        import docker  # noqa: PLC0415 - optional dependency, imported lazily
    except ImportError as exc:  # pragma: no cover - docker SDK is installed in our envs
        raise SandboxUnavailable("The docker SDK is missing: `pip install docker`. " + DOCKER_INSTALL_HINT) from exc
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except Exception as exc:  # docker raises DockerException, requests errors, FileNotFoundError...
        raise SandboxUnavailable(f"{DOCKER_INSTALL_HINT} ({type(exc).__name__}: {exc})") from exc
    return client


def apt_mirror(default: str = FALLBACK_MIRROR, files: list[Path] | None = None) -> str:
    """Find the Debian mirror this machine's apt uses.

    Reads ``/etc/apt/sources.list`` and ``/etc/apt/sources.list.d/*`` (one-line and deb822 formats) and returns
    the first URI that serves the main Debian archive (not ``-security``, not a third-party repo).

    Args:
        default: Returned when no mirror is found.
        files: Source files to read instead of the system's.

    Returns:
        A mirror URL such as ``http://deb.debian.org/debian``; ``default`` when none is found.
    """
    if files is None:
        files = [Path("/etc/apt/sources.list")]
        sources_d = Path("/etc/apt/sources.list.d")
        if sources_d.is_dir():
            files += sorted(sources_d.iterdir())
    pattern = re.compile(r"(?:^deb\s+(?:\[[^\]]*\]\s+)?|^URIs:\s*)(\S+)", re.MULTILINE)
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for uri in pattern.findall(text):
            uri = uri.rstrip("/")
            if uri.endswith("/debian") and "security" not in uri:
                return uri
    return default


def image_exists(tag: str = DEFAULT_IMAGE) -> bool:
    """Whether the docker daemon has an image ``tag`` built by us (carrying :data:`IMAGE_LABEL`).

    Raises:
        SandboxUnavailable: docker is not reachable.
    """
    import docker.errors  # noqa: PLC0415

    client = docker_client()
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return (image.labels or {}).get(IMAGE_LABEL) == "1"


def _registry_reachable(client, log: Callable[[str], None]) -> bool:  # noqa: ANN001
    try:
        client.images.get(DOCKERFILE_BASE)
        return True
    except Exception:  # noqa: BLE001 - not present locally: try to pull it
        pass
    try:
        client.api.timeout = REGISTRY_PROBE_TIMEOUT_S
        client.images.pull(DOCKERFILE_BASE)
        return True
    except Exception as exc:  # noqa: BLE001 - any failure means "no registry": fall back to debootstrap
        log(f"registry not reachable ({type(exc).__name__}); using debootstrap")
        return False


def _build_dockerfile(client, tag: str, log: Callable[[str], None]) -> None:  # noqa: ANN001
    log(f"docker build -t {tag} (Dockerfile, base {DOCKERFILE_BASE})")
    client.images.build(path=str(Path(__file__).parent), dockerfile="Dockerfile", tag=tag, rm=True)


def _prepare_rootfs(root: Path) -> None:
    """Add the sandbox user and ``/work`` to a debootstrap root fs and trim it."""
    for rel in TRIM_PATHS:
        shutil.rmtree(root / rel, ignore_errors=True)
    (root / "var/lib/apt/lists").mkdir(parents=True, exist_ok=True)
    with open(root / "etc/passwd", "a") as fh:
        fh.write(f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:arl-envs sandbox:/work:/bin/sh\n")
    with open(root / "etc/group", "a") as fh:
        fh.write(f"sandbox:x:{SANDBOX_UID}:\n")
    work = root / "work"
    work.mkdir(exist_ok=True)
    os.chown(work, SANDBOX_UID, SANDBOX_UID)


def _build_debootstrap(client, tag: str, suite: str, mirror: str, log: Callable[[str], None]) -> None:  # noqa: ANN001
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise SandboxUnavailable(DEBOOTSTRAP_INSTALL_HINT)
    if os.geteuid() != 0:
        raise SandboxUnavailable("debootstrap needs root: run `arl-envs sandbox build-image` as root.")
    with tempfile.TemporaryDirectory(prefix="arl-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        cmd = [debootstrap, "--variant=minbase", "--include=python3", suite, str(root), mirror]
        log("$ " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr)[-2000:]
            raise SandboxUnavailable(f"debootstrap failed (exit {proc.returncode}); mirror {mirror}:\n{tail}")
        _prepare_rootfs(root)
        tar_path = Path(tmp) / "rootfs.tar"
        log(f"packing {root} -> {tar_path}")
        with tarfile.open(tar_path, "w") as tar:
            for entry in sorted(root.iterdir()):
                tar.add(entry, arcname=entry.name)
        repository, _, image_tag = tag.rpartition(":")
        log(f"docker import -> {tag}")
        client.api.import_image(
            src=str(tar_path), repository=repository or tag, tag=image_tag or None, changes=list(IMPORT_CHANGES)
        )


def build_image(
    tag: str = DEFAULT_IMAGE,
    *,
    method: str = "auto",
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> str:
    """Build (or reuse) the sandbox image.

    Args:
        tag: image tag to create, ``repository:tag``.
        method: ``"auto"``, ``"dockerfile"`` or ``"debootstrap"`` (see the module docstring).
        suite: Debian suite for debootstrap.
        mirror: apt mirror URL for debootstrap; default: the one this machine's apt uses (:func:`apt_mirror`).
        force: rebuild even when ``tag`` exists.
        log: progress callback (one line per step).

    Returns:
        The tag of the image.

    Raises:
        SandboxUnavailable: docker is unreachable, debootstrap is missing/not root, or a build step failed.
        ValueError: unknown ``method``.
    """
    if method not in ("auto", "dockerfile", "debootstrap"):
        raise ValueError(f"method must be 'auto', 'dockerfile' or 'debootstrap', got {method!r}")
    client = docker_client(timeout_s=600)
    if not force and image_exists(tag):
        log(f"image {tag} exists (cached); use force=True / --force to rebuild")
        return tag
    start = time.monotonic()
    if method == "dockerfile" or (method == "auto" and _registry_reachable(client, log)):
        _build_dockerfile(client, tag, log)
    else:
        _build_debootstrap(client, tag, suite, mirror or apt_mirror(), log)
    if not image_exists(tag):
        raise SandboxUnavailable(f"image build finished but {tag} is not present in docker")
    log(f"built {tag} in {time.monotonic() - start:.0f} s")
    return tag


def main(argv: list[str] | None = None) -> int:
    """``python -m arl_envs.sandbox.image [--force] [--method M] [--tag T] [--mirror URL]`` (same as the CLI)."""
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser(description="Build the arl-envs Docker sandbox image (cached by tag).")
    parser.add_argument("--tag", default=DEFAULT_IMAGE)
    parser.add_argument("--method", default="auto", choices=("auto", "dockerfile", "debootstrap"))
    parser.add_argument("--suite", default=DEFAULT_SUITE)
    parser.add_argument("--mirror", default=None)
    parser.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    args = parser.parse_args(argv)
    try:
        build_image(args.tag, method=args.method, suite=args.suite, mirror=args.mirror, force=args.force)
    except SandboxUnavailable as exc:
        print(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
