"""Reading a base image: an OCI image layout, a docker-archive tar (``docker save``)
or a reference in a registry, each spelled as skopeo spells it.

- ``oci:DIR[:TAG]``, or a directory: an OCI layout; TAG picks the manifest whose
  ``org.opencontainers.image.ref.name`` it is (without one the layout must hold one
  image);
- ``docker-archive:FILE``, or a regular file: the tar ``docker save`` writes;
- ``docker://HOST[:PORT]/NAME[:TAG|@DIGEST]``: a registry (:mod:`.registry`).

Every blob is checked against the digest and size that name it before it is used,
and every JSON document is read with a size limit: a missing layer, a bad digest or
a document that is not what the spec says is one :class:`ImageError` naming the
base and the blob. An index listing several platforms gives its linux/amd64 image.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import stat
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import zstandard

from gfxpack._io import HashingWriter
from gfxpack.image import ImageError
from gfxpack.image.layout import (
    DOCKER_LIST,
    INDEX,
    LAYER,
    LAYER_GZIP,
    LAYER_ZSTD,
    REF_NAME,
    Descriptor,
    blob_path,
)
from gfxpack.regular_files import UnreadableFile, read_small_file

# A manifest, index or config is small; anything larger is not one.
MAX_DOCUMENT = 4 << 20
CHUNK = 1 << 20
PLATFORM = {"os": "linux", "architecture": "amd64"}
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True, slots=True)
class BaseLayer:
    descriptor: Descriptor
    path: Path  # the blob's bytes, checked against the descriptor


@dataclass(frozen=True, slots=True)
class Base:
    """A base image: its config (as JSON), its layers in order, and what it was."""

    name: str
    config: dict[str, Any]
    layers: tuple[BaseLayer, ...]


def read_base(source: str, scratch: Path, pull: Callable[[str, Path], Path] | None = None) -> Base:
    """The base ``source`` names; blobs that need copying (a docker-archive's, a
    registry's) go to ``scratch``. ``pull`` fetches a registry reference into an OCI
    layout in the directory given and returns it (:func:`gfxpack.image.registry.pull`)."""
    if source.startswith("docker://"):
        if pull is None:
            raise ImageError(f"{source}: no registry client given")
        layout = pull(source.removeprefix("docker://"), scratch / "pulled")
        return read_layout(layout, None, source)
    if source.startswith("docker-archive:"):
        return read_docker_archive(Path(source.removeprefix("docker-archive:")), scratch)
    if source.startswith("oci:"):
        directory, _, tag = source.removeprefix("oci:").partition(":")
        return read_layout(Path(directory), tag or None, source)
    path = Path(source)
    if path.is_dir():
        return read_layout(path, None, source)
    if path.is_file():
        return read_docker_archive(path, scratch)
    raise ImageError(
        f"base {source!r}: no such directory or file (give an OCI layout directory, "
        "oci:DIR:TAG, docker-archive:FILE or docker://HOST/NAME:TAG)"
    )


# --- OCI layouts --------------------------------------------------------------------------


def read_layout(layout: Path, tag: str | None, shown: str) -> Base:
    if not (layout / "oci-layout").is_file():
        raise ImageError(f"base {shown}: {layout} is not an OCI image layout (no oci-layout file)")
    index = _document(layout / "index.json", f"base {shown}: index.json")
    entries = _entries(index, f"base {shown}: index.json")
    if tag is not None:
        entries = [e for e in entries if e.get("annotations", {}).get(REF_NAME) == tag]
        if not entries:
            raise ImageError(f"base {shown}: index.json names no image {tag!r}")
    if len(entries) != 1:
        raise ImageError(
            f"base {shown}: index.json lists {len(entries)} images; name one as oci:DIR:TAG"
        )
    entry = entries[0]

    def blob(descriptor: Descriptor) -> Path:
        return _checked(blob_path(layout, descriptor.digest), descriptor, f"base {shown}")

    return from_manifest(entry, blob, f"base {shown}")


def from_manifest(entry: Any, blob: Callable[[Descriptor], Path], shown: str) -> Base:
    """The image an index entry names (an index of platforms gives its linux/amd64 one),
    its blobs found by ``blob`` (which checks them)."""
    descriptor = as_descriptor(entry, shown)
    for _ in range(2):  # an index, then the manifest it lists
        document = _document(blob(descriptor), f"{shown}: {descriptor.digest}")
        if document.get("mediaType") not in (INDEX, DOCKER_LIST) and "manifests" not in document:
            break
        chosen = [
            e
            for e in _entries(document, f"{shown}: {descriptor.digest}")
            if all(e.get("platform", {}).get(k) == v for k, v in PLATFORM.items())
        ]
        if not chosen:
            raise ImageError(f"{shown}: {descriptor.digest} lists no linux/amd64 image")
        descriptor = as_descriptor(chosen[0], shown)
    else:
        raise ImageError(f"{shown}: an index inside an index inside an index")
    config_descriptor = as_descriptor(document.get("config"), f"{shown}: manifest config")
    config = _document(blob(config_descriptor), f"{shown}: config {config_descriptor.digest}")
    layers = document.get("layers")
    if not isinstance(layers, list):
        raise ImageError(f"{shown}: manifest {descriptor.digest}: expected a list of layers")
    found = tuple(
        BaseLayer(d, blob(d)) for d in (as_descriptor(x, f"{shown}: layer") for x in layers)
    )
    for layer in found:
        _layer_kind(layer, shown)
    _check_diff_ids(config, len(found), shown)
    return Base(shown.removeprefix("base "), config, found)


def _entries(index: Any, shown: str) -> list[Any]:
    entries = index.get("manifests")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ImageError(f"{shown}: expected a list of manifests")
    return entries


def as_descriptor(value: Any, shown: str) -> Descriptor:
    """A descriptor from JSON, each field checked."""
    if not isinstance(value, dict):
        raise ImageError(f"{shown}: expected a descriptor (mediaType, digest, size)")
    media_type, digest, size = value.get("mediaType"), value.get("digest"), value.get("size")
    if not isinstance(digest, str) or not isinstance(size, int) or size < 0:
        raise ImageError(f"{shown}: expected a digest and a size, got {digest!r}, {size!r}")
    if not isinstance(media_type, str):
        media_type = ""
    annotations = value.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise ImageError(f"{shown}: annotations: expected an object")
    return Descriptor(media_type, digest, size, {str(k): str(v) for k, v in annotations.items()})


def _check_diff_ids(config: Any, layers: int, shown: str) -> None:
    diff_ids = (config.get("rootfs") or {}).get("diff_ids")
    if not isinstance(diff_ids, list) or len(diff_ids) != layers:
        raise ImageError(
            f"{shown}: config rootfs.diff_ids: expected one per layer ({layers}), "
            f"got {diff_ids!r:.80}"
        )


def _layer_kind(layer: BaseLayer, shown: str) -> None:
    with open(layer.path, "rb") as file:
        magic = file.read(4)
    if not magic.startswith(GZIP_MAGIC) and magic != ZSTD_MAGIC and not _is_tar(layer.path):
        raise ImageError(
            f"{shown}: layer {layer.descriptor.digest}: neither a tar nor a gzip- or "
            "zstd-compressed tar"
        )


# What reading a compressed layer may raise besides OSError and EOFError.
DECOMPRESSION_ERRORS = (zstandard.ZstdError,)


@contextlib.contextmanager
def decompressed(path: Path) -> Iterator[BinaryIO]:
    """The tar in a layer blob, read as a stream whatever its compression: gzip, zstd
    (as ``gfxpack image --compression zstd`` writes it), or none. zstd's decoder keeps
    to its default window limit (128 MiB), whatever a frame's header asks for."""
    with open(path, "rb") as file:
        magic = file.read(len(ZSTD_MAGIC))
        file.seek(0)
        if magic.startswith(GZIP_MAGIC):
            with gzip.GzipFile(fileobj=file, mode="rb") as unzipped:
                yield cast(BinaryIO, unzipped)
        elif magic == ZSTD_MAGIC:
            reader = zstandard.ZstdDecompressor().stream_reader(file, closefd=False)
            with reader:
                yield cast(BinaryIO, reader)
        else:
            yield file


def _is_tar(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def _checked(path: Path, descriptor: Descriptor, shown: str) -> Path:
    """``path`` when it is a regular file of ``descriptor``'s size and digest."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise ImageError(f"{shown}: blob {descriptor.digest} is missing") from None
    if not stat.S_ISREG(info.st_mode):
        raise ImageError(f"{shown}: blob {descriptor.digest} is not a regular file")
    if info.st_size != descriptor.size:
        raise ImageError(
            f"{shown}: blob {descriptor.digest} has {info.st_size} bytes, "
            f"its descriptor says {descriptor.size}"
        )
    digest = hashed(path)
    if digest != descriptor.digest:
        raise ImageError(f"{shown}: blob {descriptor.digest} has the digest {digest}")
    return path


def hashed(path: Path) -> str:
    sink = HashingWriter(_Null(), "sha256")
    with open(path, "rb") as file:
        while chunk := file.read(CHUNK):
            sink.write(chunk)
    return "sha256:" + sink.hexdigest()


class _Null:
    def write(self, data: bytes, /) -> int:
        return len(data)


def _document(path: Path, shown: str) -> Any:
    try:
        # A FIFO is refused, never opened: reading one would wait for a writer forever.
        data = read_small_file(path, MAX_DOCUMENT, "image document")
    except UnreadableFile as e:
        raise ImageError(f"{shown}: {e.problem}") from None
    return parse_document(data, shown)


def parse_document(data: bytes, shown: str) -> Any:
    if len(data) > MAX_DOCUMENT:
        raise ImageError(f"{shown}: larger than {MAX_DOCUMENT} bytes; not an image document")
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ImageError(f"{shown}: not JSON: {e}") from None
    if not isinstance(document, dict):
        raise ImageError(f"{shown}: expected a JSON object")
    return document


# --- docker-archive -------------------------------------------------------------------------


def read_docker_archive(archive: Path, scratch: Path) -> Base:
    """The image of a ``docker save`` tar: manifest.json names the config and the layer
    tars; each is copied out (hashed as it goes) into ``scratch``."""
    shown = f"base {archive}"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        tar = tarfile.open(archive, "r:")  # noqa: SIM115
    except (OSError, tarfile.TarError) as e:
        raise ImageError(f"{shown}: not a docker-archive tar: {e}") from None
    with tar:
        manifest = _json_member(tar, "manifest.json", shown)
        if (
            not isinstance(manifest, list)
            or len(manifest) != 1
            or not isinstance(manifest[0], dict)
        ):
            raise ImageError(f"{shown}: manifest.json: expected a list of one image")
        image = manifest[0]
        config_name, layer_names = image.get("Config"), image.get("Layers")
        if not isinstance(config_name, str) or not isinstance(layer_names, list):
            raise ImageError(f"{shown}: manifest.json: expected Config and Layers")
        config = _json_member(tar, config_name, shown)
        layers = []
        for name in layer_names:
            if not isinstance(name, str):
                raise ImageError(f"{shown}: manifest.json: Layers: expected member names")
            path, digest, size = _copy_member(tar, name, scratch, shown)
            media_type = (
                LAYER_GZIP
                if _starts_with(path, GZIP_MAGIC)
                else LAYER_ZSTD
                if _starts_with(path, ZSTD_MAGIC)
                else LAYER
            )
            layers.append(BaseLayer(Descriptor(media_type, digest, size), path))
    found = tuple(layers)
    for layer in found:
        _layer_kind(layer, shown)
    _check_diff_ids(config, len(found), shown)
    return Base(str(archive), config, found)


def _member(tar: tarfile.TarFile, name: str, shown: str) -> BinaryIO:
    try:
        member = tar.getmember(name)
    except KeyError:
        raise ImageError(f"{shown}: {name} is missing from the archive") from None
    if not member.isfile():
        raise ImageError(f"{shown}: {name} is not a regular file in the archive")
    opened = tar.extractfile(member)
    if opened is None:
        raise ImageError(f"{shown}: {name} cannot be read")
    return opened  # type: ignore[return-value]


def _json_member(tar: tarfile.TarFile, name: str, shown: str) -> Any:
    data = _member(tar, name, shown).read(MAX_DOCUMENT + 1)
    if len(data) > MAX_DOCUMENT:
        raise ImageError(f"{shown}: {name}: larger than {MAX_DOCUMENT} bytes")
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ImageError(f"{shown}: {name}: not JSON: {e}") from None


def _copy_member(
    tar: tarfile.TarFile, name: str, scratch: Path, shown: str
) -> tuple[Path, str, int]:
    source = _member(tar, name, shown)
    partial = scratch / f".layer-{len(os.listdir(scratch))}"
    with open(partial, "wb") as out:
        sink = HashingWriter(out, "sha256")
        while chunk := source.read(CHUNK):
            sink.write(chunk)
    digest = "sha256:" + sink.hexdigest()
    path = scratch / digest.removeprefix("sha256:")
    os.replace(partial, path)
    return path, digest, sink.size


def _starts_with(path: Path, magic: bytes) -> bool:
    with open(path, "rb") as file:
        return file.read(len(magic)) == magic
