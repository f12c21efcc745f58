"""Payload archives (DEB tar, RPM cpio) and package entries, read back by real tar and cpio."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess

from gfxpack.formats.payload import (
    Entry,
    EntryKind,
    installed_size,
    with_parents,
    write_cpio,
    write_tar,
)

MTIME = 1_704_067_200


def entries(tmp_path) -> tuple[Entry, ...]:
    source = tmp_path / "libx.so.1"
    source.write_bytes(b"\x7fELF library")
    return with_parents(
        [
            Entry("/opt/rocm/lib/libx.so.1", EntryKind.FILE, 0o755, 12, str(source), mtime=MTIME),
            Entry(
                "/opt/rocm/lib/libx.so", EntryKind.SYMLINK, 0o777, target="libx.so.1", mtime=MTIME
            ),
            Entry("/opt/rocm/share/doc", EntryKind.FILE, 0o644, 4, data=b"docs", mtime=MTIME),
        ],
        MTIME,
        stop="/opt",
    )


def listing(tool: list[str], archive: bytes) -> list[str]:
    """(mode, name, link) of each member as the tool lists it."""
    done = subprocess.run(tool, input=archive, capture_output=True, check=True)
    return done.stdout.decode().splitlines()


def test_with_parents_adds_every_missing_directory_below_stop(tmp_path):
    paths = [(e.path, e.kind) for e in entries(tmp_path)]
    assert paths == [
        ("/opt/rocm", EntryKind.DIR),
        ("/opt/rocm/lib", EntryKind.DIR),
        ("/opt/rocm/lib/libx.so", EntryKind.SYMLINK),
        ("/opt/rocm/lib/libx.so.1", EntryKind.FILE),
        ("/opt/rocm/share", EntryKind.DIR),
        ("/opt/rocm/share/doc", EntryKind.FILE),
    ]
    assert installed_size(entries(tmp_path)) == 12 + 0 + 4  # directories count nothing


def test_tar_lists_as_gnu_tar_reads_it(tmp_path):
    out = io.BytesIO()
    digests = write_tar(out, entries(tmp_path), MTIME)
    assert digests == {
        "/opt/rocm/lib/libx.so.1": hashlib.md5(b"\x7fELF library").hexdigest(),
        "/opt/rocm/share/doc": hashlib.md5(b"docs").hexdigest(),
    }
    lines = listing(["tar", "-tvf", "-", "--numeric-owner"], out.getvalue())
    assert [line.split()[0] for line in lines] == [
        "drwxr-xr-x",
        "drwxr-xr-x",
        "drwxr-xr-x",
        "lrwxrwxrwx",
        "-rwxr-xr-x",
        "drwxr-xr-x",
        "-rw-r--r--",
    ]
    assert [line.split()[-1] for line in lines][:3] == ["./", "./opt/rocm/", "./opt/rocm/lib/"]
    assert lines[3].endswith("./opt/rocm/lib/libx.so -> libx.so.1")
    extracted = tmp_path / "x"
    extracted.mkdir()
    subprocess.run(["tar", "-xf", "-", "-C", str(extracted)], input=out.getvalue(), check=True)
    assert (extracted / "opt/rocm/share/doc").read_bytes() == b"docs"
    assert os.readlink(extracted / "opt/rocm/lib/libx.so") == "libx.so.1"


def test_cpio_lists_as_cpio_reads_it(tmp_path):
    out = io.BytesIO()
    digests = write_cpio(out, entries(tmp_path))
    assert digests["/opt/rocm/share/doc"] == hashlib.sha256(b"docs").hexdigest()
    lines = listing(["cpio", "-itv", "--quiet"], out.getvalue())
    assert len(lines) == len(entries(tmp_path))
    assert lines[2].startswith("lrwxrwxrwx") and lines[2].endswith("libx.so -> libx.so.1")
    assert lines[5].startswith("-rw-r--r--") and lines[5].endswith("./opt/rocm/share/doc")
    extracted = tmp_path / "x"
    extracted.mkdir()
    subprocess.run(["cpio", "-idm", "--quiet"], input=out.getvalue(), cwd=extracted, check=True)
    assert (extracted / "opt/rocm/lib/libx.so.1").read_bytes() == b"\x7fELF library"
