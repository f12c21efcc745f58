"""Target owners in wheels (TheRock#8280): a fat wheel with gfx1250 and gfx1250-strict
code objects splits into one ``device-gfx1250`` wheel holding both targets' archives,
each under its own name, and joins back byte for byte. The fat library is built byte
by byte (hipcc knows no gfx1250-strict)."""

from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path

import msgpack
import pytest
from click.testing import CliRunner, Result
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile
from packaging.metadata import Metadata
from tests.fatbin.fat_elf import PAGE, fat_elf
from tests.fatbin.test_bundle import code_object, uncompressed
from tests.wheels.conftest import (
    DIST_INFO,
    METADATA,
    NAME,
    VERSION,
    WHEEL,
    WHEEL_NAME,
    make_wheel,
)

from gfxpack.cli import cli
from gfxpack.fatbin.libraries import check_library
from gfxpack.fatbin.reader import HIPF
from gfxpack.kpack import KpackReader
from gfxpack.wheels.archive import write_wheel
from gfxpack.wheels.installed import Distribution

pytestmark = pytest.mark.slow  # make check skips it: whole wheel split and join round trips

TARGETS = ("gfx942", "gfx1250", "gfx1250-strict")
FAT = WHEEL_NAME


def device_wheel(arch: str) -> str:
    return f"{NAME}_device_{arch}-{VERSION}-py3-none-linux_x86_64.whl"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


@pytest.fixture(scope="module")
def fat_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    entries = [(f"hipv4-amdgcn-amd-amdhsa--{t}", code_object(t)) for t in TARGETS]
    bundle = uncompressed(entries)
    library = fat_elf(bundle + bytes(-len(bundle) % PAGE + 2 * PAGE), [(HIPF, 0, 0)])[0]
    wheel = tmp_path_factory.mktemp("fat") / FAT
    return make_wheel(
        wheel,
        [
            (f"{NAME}/_native.so", 0o755, library),
            (f"{DIST_INFO}/METADATA", 0o644, METADATA.encode()),
            (f"{DIST_INFO}/WHEEL", 0o644, WHEEL.encode()),
        ],
    )


@pytest.fixture(scope="module")
def split_dir(fat_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split") / "out"
    result = run("split", str(fat_wheel), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_both_targets_go_into_one_device_gfx1250_wheel(split_dir, tmp_path):
    assert sorted(p.name for p in split_dir.iterdir()) == sorted(
        [FAT, device_wheel("gfx942"), device_wheel("gfx1250")]
    )
    info = f"{NAME}_device_gfx1250-{VERSION}.dist-info"
    device = members(split_dir / device_wheel("gfx1250"))
    archives = {
        target: f"{NAME}/.kpack/{NAME}_lib_{target}.kpack"
        for target in ("gfx1250", "gfx1250-strict")
    }
    assert sorted(device) == sorted(
        [*archives.values(), *(f"{info}/{f}" for f in ("METADATA", "WHEEL", "RECORD"))]
    )
    # Each archive holds its own target's code object, not the other's.
    for target, member in archives.items():
        path = tmp_path / f"{target}.kpack"
        path.write_bytes(device[member])
        with KpackReader.open(path) as reader:
            assert reader.arches == [target]
    host = members(split_dir / FAT)
    metadata = Metadata.from_email(host[f"{DIST_INFO}/METADATA"], validate=True)
    extras = set(metadata.provides_extra or [])
    assert extras == {"device-gfx942", "device-gfx1250", "device-all"}


def test_join_gives_back_the_fat_wheel(fat_wheel, split_dir, tmp_path):
    out = tmp_path / "joined"
    result = run("join", str(split_dir), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert members(out / FAT) == members(fat_wheel)


def test_each_target_finds_its_own_archive_once_host_and_owner_wheel_are_installed(
    split_dir, tmp_path
):
    """Installed by the reference installer (RECORD checked), a gfx1250 and a
    gfx1250-strict device each find their own code object; a gfx942 device, whose
    wheel is not installed, is told the owner's extra."""
    scheme = {k: str(tmp_path / k) for k in ("purelib", "platlib", "headers", "scripts", "data")}
    destination = SchemeDictionaryDestination(scheme, sys.executable, "posix")
    for wheel in (FAT, device_wheel("gfx1250")):
        with WheelFile.open(split_dir / wheel) as source:
            source.validate_record()
            install(source, destination, {})
    site = tmp_path / "platlib"
    library = site / NAME / "_native.so"
    for target in ("gfx1250", "gfx1250-strict"):
        report = check_library(library, target, relative_to=site)
        assert report is not None and report.found and report.split, report
        assert report.archives == (f"{NAME}/.kpack/{NAME}_lib_{target}.kpack",), report
    report = check_library(library, "gfx942", relative_to=site)
    assert report is not None and not report.found
    extras = ("device-gfx942", "device-gfx1250", "device-all")
    distribution = Distribution(NAME, VERSION, site, site / DIST_INFO, extras)
    assert distribution.device_extra("gfx1250-strict") == "device-gfx1250"


@pytest.mark.parametrize(
    "forged",
    [
        {"gfx1250": {"../../elsewhere": [f"{NAME}/.kpack/{NAME}_lib_gfx1250.kpack"]}},
        {"gfx1250": {"gfx942": [f"{NAME}/.kpack/{NAME}_lib_gfx1250.kpack"]}},
        {"gfx1250": ["gfx1250", "gfx1250-strict"]},
    ],
    ids=["path-as-target", "not-its-target", "not-a-map"],
)
def test_join_refuses_a_forged_owner_record(split_dir, tmp_path, forged):
    """A host wheel whose record (RECORD rewritten to match) gives an owner's files to
    a target it does not own: one error, nothing written."""
    forged_dir = tmp_path / "forged"
    forged_dir.mkdir()
    for wheel in split_dir.iterdir():
        shutil.copy(wheel, forged_dir)
    with zipfile.ZipFile(split_dir / FAT) as archive:
        host = {i.filename: (i.external_attr >> 16, archive.read(i)) for i in archive.infolist()}
    record = msgpack.unpackb(host[f"{DIST_INFO}/gfxpack-split.msgpack"][1])
    assert set(record["owned"]) == {"gfx1250"}  # what is forged is there to forge
    record["owned"] = forged
    host[f"{DIST_INFO}/gfxpack-split.msgpack"] = (0o100644, msgpack.packb(record))
    del host[f"{DIST_INFO}/RECORD"]
    (forged_dir / FAT).unlink()
    write_wheel(forged_dir / FAT, [(n, m & 0o777, d) for n, (m, d) in host.items()], DIST_INFO)
    out = tmp_path / "joined"
    result = run("join", str(forged_dir), "--out", str(out))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {forged_dir / FAT}: gfxpack-split.msgpack: 'owned': "
        "expected each owner's targets and their paths"
    ]
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forged"]
