"""A base's layers in each compression an image may use (none, gzip, zstd) unpack to
the same root; a zstd layer that is corrupt, or that asks for more memory than the
decoder's limit, is one error naming the layer."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest
import zstandard

from gfxpack.image import ImageError
from gfxpack.image.base import Base, BaseLayer
from gfxpack.image.layout import LAYER, LAYER_GZIP, LAYER_ZSTD, Descriptor
from gfxpack.image.unpack import unpack


def plain_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("etc/os-release", b"ID=debian\n"), ("usr/bin/tool", b"#!/bin/sh\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def base_of(blob: bytes, media_type: str, where: Path) -> Base:
    path = where / "layer"
    path.write_bytes(blob)
    return Base("test", {}, (BaseLayer(Descriptor(media_type, "sha256:00", len(blob)), path),))


@pytest.mark.parametrize(
    ("media_type", "compress"),
    [
        (LAYER, lambda data: data),
        (LAYER_GZIP, gzip.compress),
        (LAYER_ZSTD, lambda data: zstandard.ZstdCompressor(level=3).compress(data)),
    ],
    ids=["tar", "gzip", "zstd"],
)
def test_each_compression_unpacks_to_the_same_root(media_type, compress, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    unpack(base_of(compress(plain_tar()), media_type, tmp_path), root)
    assert (root / "etc/os-release").read_bytes() == b"ID=debian\n"
    assert (root / "usr/bin/tool").stat().st_mode & 0o777 == 0o755


def huge_window_frame() -> bytes:
    """A valid zstd frame whose header asks for a 2 GiB window."""
    params = zstandard.ZstdCompressionParameters(
        window_log=31, compression_level=3, write_content_size=False
    )
    buffer = io.BytesIO()
    with zstandard.ZstdCompressor(compression_params=params).stream_writer(
        buffer, closefd=False
    ) as writer:
        writer.write(plain_tar())
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("blob", "said"),
    [
        (b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 64, "cannot be unpacked: "),
        (huge_window_frame(), "too much memory"),
    ],
    ids=["corrupt", "window-beyond-the-limit"],
)
def test_a_hostile_zstd_layer_is_one_error_naming_it(blob, said, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(ImageError) as raised:
        unpack(base_of(blob, LAYER_ZSTD, tmp_path), root)
    message = str(raised.value)
    assert message.startswith("base test: layer 1 (sha256:00): cannot be unpacked: ")
    assert said in message and "\n" not in message
    assert list(root.iterdir()) == []
