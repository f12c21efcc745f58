"""Payload archives (DEB tar, RPM cpio) and package entries, read back by real tar and cpio."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

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


def awkward_entries(tmp_path) -> list[Entry]:
    """Names past tar's 100-byte field, a long link target, sizes off the 512-byte
    grid, an empty file and a name outside ASCII."""
    deep = "/opt/rocm/" + "/".join(["directory-with-a-long-name"] * 6)
    contents = {f"{deep}/libkernels.so": os.urandom(70_001), f"{deep}/empty": b"", "/opt/é": b"x"}
    found = []
    for number, (path, data) in enumerate(contents.items()):
        source = tmp_path / f"source-{number}"
        source.write_bytes(data)
        found.append(Entry(path, EntryKind.FILE, 0o644, len(data), str(source), mtime=MTIME))
    found.append(Entry(f"{deep}/link", EntryKind.SYMLINK, 0o777, target="../" * 40, mtime=MTIME))
    return list(with_parents(found, MTIME, stop="/opt"))


def test_tar_is_what_tarfile_writes(tmp_path):
    """The tar stream bypasses tarfile's buffering, not its format: the same bytes as a
    tarfile stream of the same members, and GNU tar extracts every name and byte."""
    members = awkward_entries(tmp_path)
    ours = io.BytesIO()
    write_tar(ours, members, MTIME)
    reference = io.BytesIO()
    with tarfile.open(fileobj=reference, mode="w|", format=tarfile.GNU_FORMAT) as tar:
        for entry in [Entry("", EntryKind.DIR, 0o755, mtime=MTIME), *members]:
            info = tarfile.TarInfo("." + entry.path + ("/" if entry.kind == EntryKind.DIR else ""))
            info.mode, info.mtime, info.uname, info.gname = entry.mode, MTIME, "root", "root"
            info.type = {EntryKind.DIR: tarfile.DIRTYPE, EntryKind.SYMLINK: tarfile.SYMTYPE}.get(
                entry.kind, tarfile.REGTYPE
            )
            info.linkname, info.size = entry.target or "", entry.size
            with open(entry.source or os.devnull, "rb") as source:
                tar.addfile(info, source if entry.is_file else None)
    assert ours.getvalue() == reference.getvalue()
    extracted = tmp_path / "x"
    extracted.mkdir()
    subprocess.run(["tar", "-xf", "-", "-C", str(extracted)], input=ours.getvalue(), check=True)
    for entry in members:
        if entry.is_file:
            assert (extracted / entry.path[1:]).read_bytes() == Path(entry.source).read_bytes()
    (link,) = [entry for entry in members if entry.kind == EntryKind.SYMLINK]
    assert os.readlink(extracted / link.path[1:]) == "../" * 40


@pytest.mark.parametrize("writer", [write_tar, write_cpio])
@pytest.mark.parametrize("change", [b"", b"x" * 100])
def test_a_file_that_changes_size_after_the_scan_is_an_error(tmp_path, writer, change):
    source = tmp_path / "lib.so"
    source.write_bytes(b"y" * 50)
    entry = Entry("/opt/lib.so", EntryKind.FILE, 0o644, 50, str(source), mtime=MTIME)
    source.write_bytes(change)  # shrunk to nothing, or grown
    with pytest.raises(OSError, match=rf"{source} changed while it was packaged"):
        writer(io.BytesIO(), [entry], MTIME) if writer is write_tar else writer(
            io.BytesIO(), [entry]
        )


@pytest.mark.parametrize("writer", [write_tar, write_cpio])
def test_a_directory_swapped_for_a_symlink_after_the_walk_packages_nothing(tmp_path, writer):
    """O_NOFOLLOW guards the last part of a path only: a directory on the way swapped
    for a symlink after the walk would lead the writer to another file of the same
    size. The walk records each file's identity and the writer refuses another one."""
    from gfxpack.artifact_files import walk

    tree = tmp_path / "stage"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "libx.so").write_bytes(b"x" * 64)
    secret = tmp_path / "host" / "libx.so"
    secret.parent.mkdir()
    secret.write_bytes(b"S" * 64)  # the same size, so only its identity tells
    problems: list[str] = []
    entries = [e for e in walk(str(tree), "/opt/x", MTIME, False, problems) if e.is_file]
    assert problems == [] and [e.path for e in entries] == ["/opt/x/lib/libx.so"]
    (tree / "lib").rename(tmp_path / "moved")
    (tree / "lib").symlink_to(secret.parent)
    out = io.BytesIO()
    with pytest.raises(OSError, match="changed since the artifacts were read"):
        writer(out, entries, MTIME) if writer is write_tar else writer(out, entries)
    assert b"S" * 64 not in out.getvalue()
