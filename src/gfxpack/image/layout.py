"""The OCI image layout (image-spec ``image-layout.md``): a directory holding
``oci-layout``, ``index.json`` and every blob under ``blobs/sha256/<hex>``, named by
the digest of its bytes.

JSON documents are written canonically (sorted keys, no spaces), so the same image
always has the same manifest digest. A layout is written into a scratch directory
beside its final place and renamed there when complete: a reader never sees half of
one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack._io import write_atomically
from gfxpack.image import ImageError

LAYOUT_VERSION = {"imageLayoutVersion": "1.0.0"}
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"
LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
# Docker's own media types, which a docker-archive's or a registry's base may use.
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
# The annotation naming a manifest of a layout's index (a tag: skopeo's oci:DIR:TAG).
REF_NAME = "org.opencontainers.image.ref.name"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def canonical_json(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Descriptor:
    """A blob's media type, digest and size (image-spec ``descriptor.md``)."""

    media_type: str
    digest: str
    size: int
    annotations: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": self.size,
        }
        if self.annotations:
            document["annotations"] = dict(sorted(self.annotations.items()))
        return document


def blob_path(layout: Path, digest: str) -> Path:
    """Where ``digest``'s blob is in ``layout``; a digest that is not sha256 is refused
    (a path built from any other string could leave the layout)."""
    if not DIGEST.fullmatch(digest):
        raise ImageError(f"{layout}: {digest!r} is not a sha256 digest (sha256:<64 hex digits>)")
    return layout / "blobs" / "sha256" / digest.removeprefix("sha256:")


def start(layout: Path) -> None:
    """An empty layout at ``layout`` (a new directory)."""
    (layout / "blobs" / "sha256").mkdir(parents=True)
    write_atomically(layout / "oci-layout", canonical_json(LAYOUT_VERSION))


def put_bytes(layout: Path, media_type: str, data: bytes) -> Descriptor:
    """Write ``data`` as a blob of ``layout``; its descriptor."""
    digest = sha256_digest(data)
    path = blob_path(layout, digest)
    if not path.exists():
        write_atomically(path, data)
    return Descriptor(media_type, digest, len(data))


def put_json(layout: Path, media_type: str, document: Any) -> Descriptor:
    return put_bytes(layout, media_type, canonical_json(document))


def put_file(layout: Path, source: Path, digest: str, media_type: str) -> Descriptor:
    """Move the file ``source``, whose sha256 is ``digest``, into ``layout`` as a blob."""
    path = blob_path(layout, digest)
    size = source.stat().st_size
    if path.exists():
        source.unlink()
    else:
        os.replace(source, path)
    return Descriptor(media_type, digest, size)


def copy_blob(layout: Path, source: Path, descriptor: Descriptor) -> Descriptor:
    """Copy the blob ``source`` (already checked against ``descriptor``) into ``layout``."""
    path = blob_path(layout, descriptor.digest)
    if not path.exists():
        partial = path.with_name(f".{path.name}.partial")
        shutil.copyfile(source, partial)
        os.replace(partial, path)
    return descriptor


def write_index(layout: Path, manifests: list[Descriptor]) -> Descriptor:
    """``index.json``: the layout's image index, listing ``manifests`` in order."""
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX,
        "manifests": [m.as_json() for m in manifests],
    }
    data = canonical_json(index)
    write_atomically(layout / "index.json", data)
    return Descriptor(INDEX, sha256_digest(data), len(data))


def manifest(config: Descriptor, layers: list[Descriptor], annotations: dict[str, str]) -> Any:
    """An image manifest (image-spec ``manifest.md``)."""
    document: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": config.as_json(),
        "layers": [layer.as_json() for layer in layers],
    }
    if annotations:
        document["annotations"] = dict(sorted(annotations.items()))
    return document
