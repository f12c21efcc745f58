"""An image's labels, tag and config: the arch, the ROCm version and the repository
it was built from, and times that are SOURCE_DATE_EPOCH, never the run's."""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gfxpack._io import hasher
from gfxpack.formats import DEB, RPM, PackageFormat
from gfxpack.image import ImageError
from gfxpack.image.layer import Layer
from gfxpack.image.layout import REF_NAME
from gfxpack.image.report import BuiltImage
from gfxpack.verify.universe import locate

# The labels (and index annotations) an image carries.
LABEL_ARCH = "io.gfxpack.gpu-arch"
LABEL_ROCM = "io.gfxpack.rocm-version"
LABEL_REPOSITORY = "io.gfxpack.repository"
LABEL_PACKAGES = "io.gfxpack.packages"
LABEL_VERSION = "org.opencontainers.image.version"
LABEL_SOURCE = "org.opencontainers.image.source"


def upstream_version(version: str) -> str:
    """A package version without its epoch and Debian revision or RPM release.

    >>> upstream_version("1:8.2.0-1"), upstream_version("8.2.0")
    ('8.2.0', '8.2.0')
    """
    version = version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def tag_of(version: str, arch: str) -> str:
    """``<version>-<arch>``, with what a tag cannot hold made '_'.

    >>> tag_of("8.2.0~rc1+b2", "gfx942")
    '8.2.0_rc1_b2-gfx942'
    """
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{version}-{arch}")[:128]


def image_config(
    base: dict[str, Any], layers: Sequence[Layer], labels: dict[str, str], epoch: int
) -> dict[str, Any]:
    """The base's config with the new layers' diff_ids, history and labels; its times
    are the epoch."""
    config = copy.deepcopy(base)
    created = datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    config["created"] = created
    config.setdefault("architecture", "amd64")
    config.setdefault("os", "linux")
    rootfs = config.setdefault("rootfs", {"type": "layers", "diff_ids": []})
    rootfs["diff_ids"] = [*rootfs.get("diff_ids", []), *(x.diff_id for x in layers)]
    history = config.get("history")
    if isinstance(history, list):
        history += [
            {"created": created, "created_by": f"gfxpack image: {x.what} layer"} for x in layers
        ]
    runtime = config.setdefault("config", {})
    runtime["Labels"] = {**(runtime.get("Labels") or {}), **labels}
    for volatile in ("container", "container_config", "docker_version", "hostname"):
        config.pop(volatile, None)
    return config


def index_annotations(image: BuiltImage) -> dict[str, str]:
    return {
        REF_NAME: image.tag,
        LABEL_ARCH: image.arch,
        LABEL_ROCM: image.version,
        LABEL_VERSION: image.version,
    }


def repository_digest(repository: Path, fmt: PackageFormat, suite: str) -> str:
    """The sha256 of the repository's top index (Release or repomd.xml): names the
    build the packages came from without naming this machine's paths."""
    if fmt is DEB:
        index = repository / "dists" / suite / "Release"
    else:
        located = locate(repository, RPM) or repository
        index = located / "repodata" / "repomd.xml"
    sink = hasher("sha256")
    try:
        sink.write(index.read_bytes())
    except OSError as e:
        raise ImageError(f"{index}: cannot read: {e.strerror}") from None
    return "sha256:" + sink.hexdigest()
