"""What each file of a package holds, as diff compares it: read_deb(digests=True) and
rpmfile.read_files, checked against dpkg-deb and rpm, and refusing broken inputs."""

from __future__ import annotations

import hashlib
import io
import struct
import tarfile
from pathlib import Path

import pytest

from gfxpack.repo.debfile import InvalidDeb, read_deb
from gfxpack.repo.rpmfile import DIRINDEXES, FILEDIGESTALGO, InvalidRpm, read_files
from tests.conftest import run

BLAS_HOST = "amdrocm-blas-host8.2"


def test_deb_digests_are_the_sha256_of_what_dpkg_deb_extracts(example_release, tmp_path):
    deb = example_release.files("deb")[BLAS_HOST]
    run("dpkg-deb", "--extract", str(deb), str(tmp_path))
    expected = {}
    for path in sorted(tmp_path.rglob("*")):
        name = str(path.relative_to(tmp_path))
        if path.is_symlink():
            expected[name] = f"symlink:{path.readlink()}"
        elif path.is_file():
            expected[name] = f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}"
    package = read_deb(str(deb), digests=True)
    assert package.digests == expected
    assert any(c.startswith("symlink:") for c in expected.values())
    assert read_deb(str(deb)).digests is None  # only when asked: apt does not hash


def test_rpm_files_are_what_rpm_dumps(example_release):
    rpm = example_release.files("rpm")[BLAS_HOST]
    expected = {}
    for line in run("rpm", "-qp", "--dump", str(rpm)).stdout.splitlines():
        # path size mtime digest mode owner group isconfig isdoc rdev symlink
        path, _, _, digest, mode, *_, link = line.split(" ")
        if mode.startswith("04"):
            continue  # a directory
        expected[path] = f"symlink:{link}" if mode.startswith("012") else f"sha256:{digest}"
    assert read_files(str(rpm)) == expected
    assert any(c.startswith("symlink:") for c in expected.values())


def _tar(entries: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in entries:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _ar_member(name: str, data: bytes) -> bytes:
    header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
    return header + data + b"\n" * (len(data) % 2)


def _entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def write_deb(path: Path, data: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    """A .deb of the package ``tool`` whose data.tar holds ``data``."""
    control = b"Package: tool\nVersion: 1.0-1\nArchitecture: all\n"
    path.write_bytes(
        b"!<arch>\n"
        + _ar_member("debian-binary", b"2.0\n")
        + _ar_member("control.tar", _tar([(_entry("./control"), control)]))
        + _ar_member("data.tar", _tar(data))
    )
    return path


def test_a_hard_link_holds_what_its_target_holds(tmp_path):
    deb = write_deb(
        tmp_path / "tool.deb",
        [
            (_entry("./opt/tool/a"), b"contents"),
            (_entry("./opt/tool/b", tarfile.LNKTYPE, "./opt/tool/a"), b""),
            (_entry("./opt/tool/c", tarfile.FIFOTYPE), b""),
        ],
    )
    digest = f"sha256:{hashlib.sha256(b'contents').hexdigest()}"
    assert read_deb(str(deb), digests=True).digests == {
        "opt/tool/a": digest,
        "opt/tool/b": digest,
        "opt/tool/c": "fifo",
    }


def test_a_hard_link_to_nothing_before_it_is_refused(tmp_path):
    deb = write_deb(
        tmp_path / "tool.deb",
        [(_entry("./opt/tool/b", tarfile.LNKTYPE, "./opt/tool/a"), b"")],
    )
    with pytest.raises(InvalidDeb) as caught:
        read_deb(str(deb), digests=True)
    assert str(caught.value) == (
        f"{deb}: data.tar: hard link './opt/tool/b' to './opt/tool/a', which is not an "
        "earlier file of the archive"
    )


def test_a_symlink_to_a_name_with_a_newline_is_refused(tmp_path):
    deb = write_deb(tmp_path / "tool.deb", [(_entry("./opt/tool/l", tarfile.SYMTYPE, "a\nb"), b"")])
    with pytest.raises(InvalidDeb) as caught:
        read_deb(str(deb), digests=True)
    assert str(caught.value) == (
        f"{deb}: data.tar: symlink './opt/tool/l' points at a name with a control character"
    )


def patch_rpm_tag(rpm: Path, out: Path, tag: int, value: int) -> Path:
    """A copy of ``rpm`` with the first INT32 of main header ``tag`` set to ``value``."""
    data = bytearray(rpm.read_bytes())
    offset = 96  # the lead
    for which in ("signature", "main"):
        count, size = struct.unpack_from(">ii", data, offset + 8)
        index, store = offset + 16, offset + 16 + count * 16
        if which == "main":
            for entry in range(count):
                found, _, at, _ = struct.unpack_from(">iiii", data, index + entry * 16)
                if found == tag:
                    struct.pack_into(">i", data, store + at, value)
                    out.write_bytes(bytes(data))
                    return out
            raise AssertionError(f"{rpm}: no tag {tag} in the main header")
        offset = store + size + (-size % 8)
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("tag", "value", "message"),
    [
        (FILEDIGESTALGO, 99, "file digest algorithm [99] is not one rpm knows"),
        (DIRINDEXES, 1 << 20, "the header's directory indexes do not match its names"),
    ],
)
def test_a_broken_rpm_file_list_is_refused(example_release, tmp_path, tag, value, message):
    rpm = example_release.files("rpm")[BLAS_HOST]
    broken = patch_rpm_tag(rpm, tmp_path / rpm.name, tag, value)
    with pytest.raises(InvalidRpm) as caught:
        read_files(str(broken))
    assert str(caught.value) == f"{broken}: {message}"
