"""Every payload byte is read once per package: the file digests a format records (DEB
md5sums, RPM file digests) come from the same pass that feeds the compressor.

Python's audit hook sees every ``open`` of the process, whichever module makes it, so
a second pass over a source file (a digest computed by re-reading it, say) shows up
here as a second open.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gfxpack._io import HashingWriter
from gfxpack.formats import DEB, RPM, PackageFormat, PackageInfo
from gfxpack.formats.payload import Entry, EntryKind

MTIME = 1_704_067_200
_opened: Counter[str] | None = None


def _count_opens(event: str, args: tuple[object, ...]) -> None:
    if _opened is not None and event == "open" and isinstance(args[0], str):
        _opened[args[0]] += 1


sys.addaudithook(_count_opens)  # cannot be removed; does nothing outside opens_during


def opens_during(write: PackageFormat, info: PackageInfo, out: Path) -> Counter[str]:
    global _opened
    _opened = Counter()
    try:
        with open(out, "wb") as file:
            write.write(info, HashingWriter(file, "sha256"))
        return _opened
    finally:
        _opened = None


@pytest.fixture
def package(tmp_path: Path) -> tuple[PackageInfo, dict[str, bytes]]:
    # Three files, one larger than the 1 MiB the writers read at a time.
    contents = {
        "/opt/rocm/lib/libbig.so": bytes(range(256)) * (3 * 4096 + 17),
        "/opt/rocm/lib/libsmall.so": b"\x7fELF small",
        "/opt/rocm/share/empty": b"",
    }
    entries = []
    for path, data in contents.items():
        source = tmp_path / "src" / Path(path).name
        source.parent.mkdir(exist_ok=True)
        source.write_bytes(data)
        entries.append(Entry(path, EntryKind.FILE, 0o644, len(data), str(source), mtime=MTIME))
    info = PackageInfo(
        name="read-once",
        version="1.0",
        release="1",
        arch="amd64",
        summary="read once",
        entries=tuple(entries),
        prefix="/opt/rocm",
        mtime=MTIME,
    )
    return info, contents


def test_deb_reads_each_source_once_and_records_its_md5(package, tmp_path):
    info, contents = package
    out = tmp_path / "p.deb"
    opened = opens_during(DEB, info, out)
    sources = {entry.source for entry in info.entries}
    assert {path: opened[path] for path in sources} == dict.fromkeys(sources, 1)
    md5sums = subprocess.run(
        ["dpkg-deb", "--info", str(out), "md5sums"], capture_output=True, text=True, check=True
    ).stdout
    expected = {
        f"{hashlib.md5(data).hexdigest()}  {path.lstrip('/')}" for path, data in contents.items()
    }
    assert set(md5sums.splitlines()) == expected


def test_rpm_reads_each_source_once_and_records_its_sha256(package, tmp_path):
    info, contents = package
    out = tmp_path / "p.rpm"
    opened = opens_during(RPM, info, out)
    sources = {entry.source for entry in info.entries}
    assert {path: opened[path] for path in sources} == dict.fromkeys(sources, 1)
    listed = subprocess.run(
        ["rpm", "-qp", "--qf", "[%{FILENAMES} %{FILEDIGESTS}\\n]", str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    digests = dict(line.split() for line in listed.splitlines() if len(line.split()) == 2)
    assert digests == {path: hashlib.sha256(data).hexdigest() for path, data in contents.items()}
    checked = subprocess.run(["rpmkeys", "-Kv", str(out)], capture_output=True, text=True)
    assert "NOT OK" not in checked.stdout and "digest: OK" in checked.stdout
