"""Hostile wheels given to ``gfxpack split`` and ``gfxpack join``: each is one error
line naming the wheel and the member, nothing is written outside OUT, and no OUT
(nor a partial one) is left. The wheels are made here; none needs hipcc."""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.conftest import tmpfs
from tests.fatbin.test_split_hostile import plant, untouched
from tests.wheels.conftest import (
    DIST_INFO,
    METADATA,
    NAME,
    WHEEL,
    WHEEL_NAME,
    central_entry,
    declare,
    make_wheel,
)

from gfxpack.cli import cli

# make check skips it: a sweep of hostile wheels, each split and joined.
pytestmark = pytest.mark.slow

GOOD = [
    (f"{NAME}/__init__.py", 0o644, b"ANSWER = 42\n"),
    (f"{DIST_INFO}/METADATA", 0o644, METADATA.encode()),
    (f"{DIST_INFO}/WHEEL", 0o644, WHEEL.encode()),
]


def split(source: Path, out: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["split", str(source), "--out", str(out), *args])


def assert_refused(result: Result, out: Path, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [f"error: {message}"]
    assert not os.path.lexists(out)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


def _with(tmp_path: Path, extra: tuple[str, int, bytes]) -> Path:
    (tmp_path / "in").mkdir()
    return make_wheel(tmp_path / "in" / WHEEL_NAME, [*GOOD, extra])


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        ("../escaped.py", "a path that is not inside the wheel ('..', '.' or an empty part)"),
        (
            f"{NAME}/../../escaped.py",
            "a path that is not inside the wheel ('..', '.' or an empty part)",
        ),
        ("/tmp/escaped.py", "an absolute path"),
    ],
)
def test_a_member_named_outside_the_wheel_is_refused(tmp_path, member, problem):
    planted = plant(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    wheel = _with(tmp_path, (member, 0o644, b"import os\n"))
    assert member in zipfile.ZipFile(wheel).namelist()  # the zip really holds that name
    out = tmp_path / "out"
    assert_refused(split(wheel, out), out, f"{wheel}: member {member!r}: {problem}")
    assert untouched(planted)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "in"])
    assert not Path("/tmp/escaped.py").exists()


def test_a_symlink_member_is_refused(tmp_path):
    planted = plant(tmp_path)
    wheel = _with(tmp_path, (f"{NAME}/key.pem", 0o777, b"../../elsewhere/private/key.pem"))
    # The member's mode in the central directory made a symlink's (unzip would create one).
    wheel.write_bytes(_set_mode(wheel.read_bytes(), f"{NAME}/key.pem", 0o120777))
    assert zipfile.ZipFile(wheel).getinfo(f"{NAME}/key.pem").external_attr >> 16 == 0o120777
    out = tmp_path / "out"
    assert_refused(
        split(wheel, out),
        out,
        f"{wheel}: member '{NAME}/key.pem': a symlink (mode 120777); "
        "a wheel holds regular files only",
    )
    assert untouched(planted)


def _set_mode(data: bytes, name: str, mode: int) -> bytes:
    """The zip ``data`` with the central directory entry of ``name`` given Unix ``mode``."""
    at = central_entry(data, name) + 38  # external attributes
    return data[:at] + struct.pack("<I", mode << 16) + data[at + 4 :]


def test_a_member_unlike_its_record_line_is_refused(tmp_path):
    wheel = _with(tmp_path, (f"{NAME}/core.py", 0o644, b"print('original')\n"))
    # Swap the member's bytes for others of the same length: RECORD now lies.
    data = wheel.read_bytes()
    with zipfile.ZipFile(wheel) as archive:
        entries = [(i, archive.read(i)) for i in archive.infolist()]
    with zipfile.ZipFile(wheel, "w") as archive:
        for info, content in entries:
            archive.writestr(
                info, b"print('evil!!!!')\n" if info.filename.endswith("core.py") else content
            )
    assert data != wheel.read_bytes()
    out = tmp_path / "out"
    result = split(wheel, out)
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"error: {wheel}: member '{NAME}/core.py': {DIST_INFO}/RECORD says sha256="
    )
    assert not os.path.lexists(out)


def test_a_record_line_without_a_hash_is_refused(tmp_path):
    (tmp_path / "in").mkdir()
    wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, GOOD)
    with zipfile.ZipFile(wheel) as archive:
        entries = [(i, archive.read(i)) for i in archive.infolist()]
    with zipfile.ZipFile(wheel, "w") as archive:
        for info, content in entries:
            if info.filename.endswith("RECORD"):  # the first line loses its hash and size
                first, rest = content.split(b"\n", 1)
                content = first.split(b",")[0] + b",,\n" + rest
            archive.writestr(info, content)
    out = tmp_path / "out"
    result = split(wheel, out)
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line == (
        f"error: {wheel}: member '{NAME}/__init__.py': {DIST_INFO}/RECORD gives no sha256 for it"
    )
    assert not os.path.lexists(out)


def test_a_member_missing_from_record_is_refused(tmp_path):
    wheel = _with(tmp_path, (f"{NAME}/core.py", 0o644, b"x = 1\n"))
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(f"{NAME}/smuggled.py", b"y = 2\n")
    out = tmp_path / "out"
    assert_refused(
        split(wheel, out),
        out,
        f"{wheel}: member '{NAME}/smuggled.py' is not in {DIST_INFO}/RECORD",
    )


def test_a_member_listed_twice_is_refused(tmp_path):
    wheel = _with(tmp_path, (f"{NAME}/core.py", 0o644, b"x = 1\n"))
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(f"{NAME}/core.py", b"x = 2\n")
    out = tmp_path / "out"
    assert_refused(split(wheel, out), out, f"{wheel}: member '{NAME}/core.py': listed twice")


def test_a_member_declaring_a_huge_size_is_refused_before_any_read(tmp_path):
    wheel = _with(tmp_path, (f"{NAME}/core.py", 0o644, b"x = 1\n"))
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(f"{NAME}/huge.bin", b"\0" * 1000)
        archive.filelist[-1].file_size = 1 << 40  # what the central directory will declare
    out = tmp_path / "out"
    assert_refused(
        split(wheel, out, "--max-unpacked-size", "1G"),
        out,
        f"{wheel}: member '{NAME}/huge.bin': declares 1,099,511,627,776 bytes; "
        "the wheel may unpack to 1,073,741,824",
    )


def test_a_zip_bomb_declaring_little_is_read_no_further(tmp_path):
    """16 MiB of zeros (16 KiB compressed), listed in RECORD, behind a central
    directory that declares 10 bytes: zipfile stops at the declared size and the
    CRC check refuses it."""
    wheel = _with(tmp_path, (f"{NAME}/bomb.bin", 0o644, b"\0" * (16 << 20)))
    wheel.write_bytes(declare(wheel.read_bytes(), f"{NAME}/bomb.bin", 10))
    assert zipfile.ZipFile(wheel).getinfo(f"{NAME}/bomb.bin").file_size == 10
    out = tmp_path / "out"
    result = split(wheel, out)
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {wheel}: member '{NAME}/bomb.bin': unreadable: ")
    assert not os.path.lexists(out)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_not_a_zip_is_one_error(tmp_path):
    (tmp_path / "in").mkdir()
    wheel = tmp_path / "in" / WHEEL_NAME
    wheel.write_bytes(b"not a zip at all")
    out = tmp_path / "out"
    result = split(wheel, out)
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {wheel}: not a wheel (a zip archive): ")
    assert not os.path.lexists(out)


def test_force_replaces_no_directory_that_holds_more_than_wheels(tmp_path):
    (tmp_path / "in").mkdir()
    wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, GOOD)
    out = tmp_path / "home"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    result = split(wheel, out, "--force")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {out}: holds more than wheels; --force will not replace it"
    ]
    assert (out / "notes.txt").read_text() == "mine\n"
    # An earlier output (wheels only) is replaced.
    (out / "notes.txt").unlink()
    (out / "old.whl").write_bytes(b"")
    assert split(wheel, out, "--force").exit_code == 0
    assert [p.name for p in out.iterdir()] == [WHEEL_NAME]


def test_a_dist_info_file_declaring_more_than_fits_in_memory_is_refused(tmp_path):
    (tmp_path / "in").mkdir()
    wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, GOOD)
    wheel.write_bytes(declare(wheel.read_bytes(), f"{DIST_INFO}/RECORD", 3 << 30))
    out = tmp_path / "out"
    assert_refused(
        split(wheel, out),
        out,
        f"{wheel}: member '{DIST_INFO}/RECORD': declares 3,221,225,472 bytes; "
        "a .dist-info file may hold 67,108,864",
    )


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ("Name: other\nVersion: 1.2.0", "other 1.2.0"),
        ("Name: hipdemo\nVersion: 1.3", "hipdemo 1.3"),
    ],
)
def test_a_metadata_naming_another_distribution_or_version_is_refused(tmp_path, fields, says):
    """Extras built from either name would require device wheels split never wrote."""
    (tmp_path / "in").mkdir()
    metadata = f"Metadata-Version: 2.1\n{fields}\nSummary: s\n".encode()
    members = [(n, m, metadata if n.endswith("/METADATA") else d) for n, m, d in GOOD]
    wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, members)
    out = tmp_path / "out"
    assert_refused(
        split(wheel, out),
        out,
        f"{wheel}: METADATA says {says}, the file name hipdemo 1.2.0; they must agree",
    )


def test_a_member_declaring_a_huge_ratio_is_refused_before_any_read(tmp_path):
    wheel = _with(tmp_path, (f"{NAME}/zeros.bin", 0o644, bytes(100_000)))
    compressed = zipfile.ZipFile(wheel).getinfo(f"{NAME}/zeros.bin").compress_size
    wheel.write_bytes(declare(wheel.read_bytes(), f"{NAME}/zeros.bin", 1 << 31))
    out = tmp_path / "out"
    assert_refused(
        split(wheel, out),
        out,
        f"{wheel}: member '{NAME}/zeros.bin': declares 2,147,483,648 bytes from "
        f"{compressed:,} compressed, more than 1100 times as many; no real member expands so much",
    )


# --- a full or read-only OUT -----------------------------------------------------------------


def test_a_full_out_is_one_line_naming_it_and_leaves_nothing(tmp_path):
    wheel = _with(tmp_path, (f"{NAME}/noise.bin", 0o644, os.urandom(256 << 10)))
    with tmpfs(tmp_path / "full", "size=64k") as full:
        out = full / "out"
        assert_refused(split(wheel, out), out, f"{out}: cannot write: No space left on device")
        assert list(full.iterdir()) == []


def test_a_read_only_out_is_one_line_naming_it(tmp_path):
    wheel = _with(tmp_path, (f"{NAME}/core.py", 0o644, b"x = 1\n"))
    with tmpfs(tmp_path / "ro", "ro,size=64k") as read_only:
        out = read_only / "out"
        assert_refused(
            split(wheel, out), out, f"{out}: cannot write in {read_only}: Read-only file system"
        )
