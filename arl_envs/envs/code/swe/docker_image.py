"""The Docker image of ``arl/code.swe-v0``: the sandbox image plus the pinned pytest tool chain.

The sandbox image (:data:`arl_envs.sandbox.image.DEFAULT_IMAGE`, ``arl-envs sandbox build-image``) has Python but
no pytest, and the Docker backend binds nothing from the host. This module derives an image from it, built locally
(no registry: ``FROM`` the local base image, ``pull=False``): a build context with a ``Dockerfile`` and the tool
chain of :func:`~arl_envs.envs.code.swe.projects.toolchain_dir`, copied to
:data:`~arl_envs.envs.code.swe.grade.TOOLCHAIN_MOUNT` (owned by root, world-readable). Containers run with a
read-only root file system, so the tool chain is as read-only there as bwrap's bind. The tag names the pytest
version; the base image's id is kept in a label and a changed base image triggers a rebuild.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.envs.code.swe.grade import TOOLCHAIN_MOUNT
from arl_envs.envs.code.swe.projects import PYTEST_VERSION, toolchain_dir

#: Tag of the derived image.
SWE_IMAGE = f"arl-envs-swe:pytest-{PYTEST_VERSION}"
#: Label holding the id of the base image the derived image was built from.
BASE_LABEL = "org.arl-envs.swe-base-id"


def _context(base: str) -> io.BytesIO:
    """A gzip-free tar build context: ``Dockerfile`` + ``toolchain/`` (root-owned, 0644 files / 0755 dirs)."""
    src = toolchain_dir()
    dockerfile = (f"FROM {base}\nCOPY toolchain {TOOLCHAIN_MOUNT}\n").encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src)
            if "__pycache__" in rel.parts or rel.parts[0] == "bin" or path.is_symlink():
                continue
            ti = tar.gettarinfo(str(path), arcname=f"toolchain/{rel.as_posix()}")
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = "root"
            ti.mode = 0o755 if path.is_dir() else 0o644
            if path.is_dir():
                tar.addfile(ti)
            else:
                with path.open("rb") as f:
                    tar.addfile(ti, f)
    buf.seek(0)
    return buf


def swe_image(tag: str = SWE_IMAGE, base: str | None = None, log: Callable[[str], None] | None = None) -> str:
    """The tag of the ``arl/code.swe-v0`` image, built first when it is missing or its base image changed.

    Args:
        tag: Tag of the derived image.
        base: The sandbox image to derive from (default :data:`arl_envs.sandbox.image.DEFAULT_IMAGE`).
        log: Called with a line when a build starts.

    Raises:
        SandboxUnavailable: Docker is unreachable, the base image is missing (with the command that builds it), the
            tool chain cannot be installed, or the build failed.
    """
    from arl_envs.sandbox.image import DEFAULT_IMAGE, docker_client  # noqa: PLC0415

    import docker.errors  # noqa: PLC0415 - optional dependency

    base = base or DEFAULT_IMAGE
    client = docker_client()
    try:
        base_id = client.images.get(base).id
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailable(f"docker image {base!r} is missing: build it with `arl-envs sandbox build-image`"
                                 ) from exc
    try:
        if (client.images.get(tag).labels or {}).get(BASE_LABEL) == base_id:
            return tag
    except docker.errors.ImageNotFound:
        pass
    if log is not None:
        log(f"building {tag} from {base} (pytest {PYTEST_VERSION})")
    try:
        client.images.build(fileobj=_context(base), custom_context=True, tag=tag, pull=False, rm=True,
                            labels={BASE_LABEL: base_id})
    except (docker.errors.BuildError, docker.errors.APIError) as exc:
        raise SandboxUnavailable(f"building the swe docker image {tag!r} failed: {exc}") from exc
    return tag
