"""image/layer.py: a layer is the same bytes for the same root, records what the tar
needs and nothing of the machine, and never follows a symlink of the root."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest
import zstandard

from gfxpack.image import ImageError
from gfxpack.image.layer import ZSTD_LEVEL, write_layer
from gfxpack.image.layout import blob_path, start

EPOCH = 1_700_000_000


def make_root(root: Path) -> Path:
    (root / "opt/rocm/lib").mkdir(parents=True)
    (root / "opt/rocm/lib/libx.so").write_bytes(b"\x7fELF" * 100)
    os.chmod(root / "opt/rocm/lib/libx.so", 0o755)
    os.symlink("lib/libx.so", root / "opt/rocm/libx")
    return root


def test_same_root_same_digest_mtimes_clamped_owners_numeric(tmp_path):
    layouts = []
    for n in range(2):
        root = make_root(tmp_path / f"root{n}")
        os.utime(root / "opt/rocm/lib/libx.so", (EPOCH + 10 + n, EPOCH + 10 + n))
        layout = tmp_path / f"layout{n}"
        start(layout)
        layouts.append((layout, write_layer(root, ["/opt/rocm/lib/libx.so", "/opt/rocm/libx"],
                                            EPOCH, layout, "host")))  # fmt: skip
    (first_layout, first), (_, second) = layouts
    assert first.descriptor.digest == second.descriptor.digest
    assert first.diff_id == second.diff_id and first.diff_id != first.descriptor.digest
    with tarfile.open(blob_path(first_layout, first.descriptor.digest), "r:gz") as tar:
        members = tar.getmembers()
    # Parents first, sorted; every mtime clamped to the epoch; no owner names.
    assert [m.name for m in members] == [
        "opt", "opt/rocm", "opt/rocm/lib", "opt/rocm/lib/libx.so", "opt/rocm/libx"
    ]  # fmt: skip
    assert {m.mtime for m in members} == {EPOCH}
    assert {(m.uname, m.gname) for m in members} == {("", "")}
    assert members[3].mode == 0o755 and members[4].linkname == "lib/libx.so"


def test_a_symlinked_directory_in_the_root_is_not_followed(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    os.symlink("/etc", root / "opt")
    layout = tmp_path / "layout"
    start(layout)
    with pytest.raises(ImageError, match="opt: is a symlink; gfxpack does not follow it"):
        write_layer(root, ["/opt/passwd"], EPOCH, layout, "host")
    assert [p.name for p in layout.iterdir() if p.name.startswith(".layer-")] == []


def test_a_fifo_is_one_error_naming_it(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    os.mkfifo(root / "pipe")
    layout = tmp_path / "layout"
    start(layout)
    with pytest.raises(ImageError, match=r"pipe: is a FIFO.*regular files and symlinks only"):
        write_layer(root, ["/pipe"], EPOCH, layout, "top")


def test_whiteouts_name_what_the_layer_deletes(tmp_path):
    root = make_root(tmp_path / "root")
    layout = tmp_path / "layout"
    start(layout)
    layer = write_layer(root, [], EPOCH, layout, "top", whiteouts=["/etc/motd"])
    with tarfile.open(blob_path(layout, layer.descriptor.digest), "r:gz") as tar:
        assert tar.getnames() == ["etc", "etc/.wh.motd"]


def test_a_zstd_layer_is_the_same_tar_reproducibly_for_any_worker_count(tmp_path):
    root = make_root(tmp_path / "root")
    (root / "opt/rocm/lib/big.bin").write_bytes(os.urandom(1 << 20) * 3)  # several zstd jobs
    paths = ["/opt/rocm/lib/libx.so", "/opt/rocm/lib/big.bin", "/opt/rocm/libx"]
    layers = []
    for n, compression in enumerate(["zstd", "zstd", "gzip"]):
        layout = tmp_path / f"layout{n}"
        start(layout)
        layers.append((layout, write_layer(root, paths, EPOCH, layout, "host", (), compression)))
    (layout, zstd), (_, again), (_, gzipped) = layers
    assert zstd.descriptor.media_type == "application/vnd.oci.image.layer.v1.tar+zstd"
    assert gzipped.descriptor.media_type == "application/vnd.oci.image.layer.v1.tar+gzip"
    assert zstd.descriptor.digest == again.descriptor.digest
    # The same tar inside whichever compression: diff_id does not depend on it.
    assert zstd.diff_id == gzipped.diff_id and zstd.descriptor.digest != gzipped.descriptor.digest
    blob = blob_path(layout, zstd.descriptor.digest).read_bytes()
    tar = zstandard.ZstdDecompressor().stream_reader(blob).read()
    assert "sha256:" + hashlib.sha256(tar).hexdigest() == zstd.diff_id
    # Another machine's core count gives the same bytes: 1 or 3 workers, any write size.
    for threads, chunk in ((1, 1 << 16), (3, 12345)):
        out = io.BytesIO()
        compressor = zstandard.ZstdCompressor(
            level=ZSTD_LEVEL, threads=threads, write_checksum=False, write_content_size=False
        )
        with compressor.stream_writer(out, closefd=False) as writer:
            for start_at in range(0, len(tar), chunk):
                writer.write(tar[start_at : start_at + chunk])
        assert out.getvalue() == blob, threads


def test_an_unknown_compression_is_one_error(tmp_path):
    root = make_root(tmp_path / "root")
    layout = tmp_path / "layout"
    start(layout)
    with pytest.raises(ImageError, match="compression 'xz': expected one of gzip, zstd"):
        write_layer(root, ["/opt/rocm/libx"], EPOCH, layout, "top", (), "xz")


def test_the_cli_offers_the_compressions_the_writer_knows():
    from gfxpack.cli.image_cmd import COMPRESSIONS as OFFERED
    from gfxpack.image.layer import COMPRESSIONS

    assert OFFERED == COMPRESSIONS
