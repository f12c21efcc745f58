"""The wheel split's destination: the split of an unpacked wheel kept as wheel members.

What it writes is only what the split makes (host binaries, archives, the record's
byte runs): a file the split leaves as it is goes into the wheel from where the
wheel was unpacked. A member where the split puts its own is one error naming the
wheel, as in a tree. The bytes of the wheels themselves against the tree-walking
split of before: ``bench/split_identity.py``.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from click.testing import CliRunner
from tests.wheels.conftest import NAME, WHEEL_NAME, demo_members, make_wheel

from gfxpack.artifact_layout import GENERIC
from gfxpack.cli import cli
from gfxpack.fatbin.record import LITERALS
from gfxpack.fatbin.source import read_source
from gfxpack.fatbin.split import split
from gfxpack.wheels.archive import read_wheel
from gfxpack.wheels.destination import WheelDestination

GROUP = f"{NAME}_lib"


def _split(fat_wheel: Path, tmp_path: Path) -> tuple[WheelDestination, Path]:
    unpacked = read_wheel(fat_wheel, tmp_path / "tree")
    (tmp_path / "spool").mkdir()
    destination = WheelDestination(tmp_path / "spool", GROUP, str(fat_wheel))
    read = read_source(unpacked.root, GROUP, f"{NAME}/.kpack")
    report = split(read, destination, 1)
    assert report.binaries == 2
    return destination, unpacked.root


def test_only_what_the_split_makes_is_written(fat_wheel: Path, tmp_path: Path) -> None:
    destination, root = _split(fat_wheel, tmp_path)
    written = sorted(
        str(Path(d, name).relative_to(tmp_path / "spool"))
        for d, _, names in os.walk(tmp_path / "spool")
        for name in names
    )
    hosts = [f"{GROUP}_{GENERIC}/stage/{NAME}/{p}" for p in ("_native.so", "lib/libone.so")]
    archives = [
        f"{GROUP}_{arch}/stage/{NAME}/.kpack/{GROUP}_{arch}.kpack"
        for arch in ("gfx1030", "gfx906", "gfx90a")
    ]
    assert written == sorted([LITERALS, *hosts, *archives])
    host = {path: file for path, _mode, file in destination.files(GENERIC)}
    # Left as it is: the unpacked file itself, neither linked nor copied.
    assert host[f"{NAME}/__init__.py"] == root / NAME / "__init__.py"
    assert host[f"{NAME}/_native.so"] == tmp_path / "spool" / hosts[0]
    assert destination.index is not None  # the split record, kept for the host wheel
    assert destination.targets() == sorted([GENERIC, "gfx1030", "gfx906", "gfx90a"])


def test_a_member_where_the_split_puts_an_archive_is_one_error(
    fat_wheel: Path, tmp_path: Path
) -> None:
    """The wheel holds, where the gfx90a archive goes, a file of its own: refused, as a
    tree refuses it, naming the wheel, not the scratch directory."""
    with zipfile.ZipFile(fat_wheel) as archive:
        native, one = (archive.read(f"{NAME}/{p}") for p in ("_native.so", "lib/libone.so"))
    members = demo_members(native, one)
    members.append((f"{NAME}/.kpack/{GROUP}_gfx90a.kpack", 0o644, b"planted"))
    (tmp_path / "in").mkdir()
    wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, members)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["split", str(wheel), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [
        f"error: {wheel}: {GROUP}_gfx90a/stage/{NAME}/.kpack/{GROUP}_gfx90a.kpack: written "
        "twice; the input holds a file where split puts one of its own"
    ]
    assert not os.path.lexists(out)
