"""gfxpack split / join on wheels (gfxpack/wheels/split.py, join.py), checked by the
real clients: ``installer`` with RECORD validation, pip and uv from a directory of
wheels into fresh virtual environments, ``gfxpack kpack resolve`` on what they
installed, and the extension's own import."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
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
from packaging.utils import parse_wheel_filename
from tests.conftest import tmpfs
from tests.fatbin.test_split_hostile import plant, untouched
from tests.wheels.conftest import (
    ARCHES,
    DIST_INFO,
    NAME,
    PYTAG,
    VERSION,
    WHEEL,
    WHEEL_NAME,
    demo_members,
    make_wheel,
)

from gfxpack.cli import cli
from gfxpack.fatbin.reader import FatBinary
from gfxpack.wheels.archive import write_wheel

# make check skips it: split wheels installed by installer, pip and uv in fresh venvs.
pytestmark = pytest.mark.slow

RECORD_LINE = re.compile(r"^[^,]+,sha256=[A-Za-z0-9_-]{43},\d+$")
DEVICE = {arch: f"{NAME}_device_{arch}-{VERSION}-py3-none-linux_x86_64.whl" for arch in ARCHES}
ANSWERS = "(42, 7, 42)"  # what hipdemo/__init__.py computes through both libraries


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def split_dir(fat_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split") / "out"
    result = run("split", str(fat_wheel), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def members(wheel: Path) -> dict[str, tuple[int, bytes]]:
    with zipfile.ZipFile(wheel) as archive:
        return {i.filename: (i.external_attr >> 16, archive.read(i)) for i in archive.infolist()}


def test_split_gives_a_host_wheel_and_one_device_wheel_per_arch(fat_wheel, split_dir):
    assert sorted(p.name for p in split_dir.iterdir()) == sorted([WHEEL_NAME, *DEVICE.values()])
    host = members(split_dir / WHEEL_NAME)
    metadata = Metadata.from_email(host[f"{DIST_INFO}/METADATA"][1], validate=True)
    assert (metadata.name, str(metadata.version)) == (NAME, VERSION)
    assert set(metadata.provides_extra or []) == {f"device-{a}" for a in ARCHES} | {"device-all"}
    requires = {str(r) for r in metadata.requires_dist or []}
    for arch in ARCHES:
        assert f'{NAME}-device-{arch}=={VERSION}; extra == "device-{arch}"' in requires
        assert f'{NAME}-device-{arch}=={VERSION}; extra == "device-all"' in requires
    # Nothing else changed: the original METADATA is the head and tail of the new one.
    original = members(fat_wheel)[f"{DIST_INFO}/METADATA"][1]
    head, body = original.split(b"\n\n", 1)
    assert host[f"{DIST_INFO}/METADATA"][1].startswith(head + b"\n")
    assert host[f"{DIST_INFO}/METADATA"][1].endswith(b"\n\n" + body)
    # The fat libraries shrank and kept their mode.
    fat = members(fat_wheel)
    for library in (f"{NAME}/_native.so", f"{NAME}/lib/libone.so"):
        assert host[library][0] == fat[library][0] == 0o100755
        assert len(host[library][1]) < len(fat[library][1])
    for arch, name in DEVICE.items():
        device = members(split_dir / name)
        info = f"{NAME}_device_{arch}-{VERSION}.dist-info"
        assert sorted(device) == sorted(
            [
                f"{NAME}/.kpack/{NAME}_lib_{arch}.kpack",
                *(f"{info}/{f}" for f in ("METADATA", "WHEEL", "RECORD")),
            ]
        )
        meta = Metadata.from_email(device[f"{info}/METADATA"][1], validate=True)
        assert (meta.metadata_version, meta.name) == ("2.4", f"{NAME}-device-{arch}")
        assert [str(r) for r in meta.requires_dist or []] == [f"{NAME}=={VERSION}"]
        wheel = device[f"{info}/WHEEL"][1].decode()
        assert "Root-Is-Purelib: false\n" in wheel and "Tag: py3-none-linux_x86_64\n" in wheel
        assert {str(t) for t in parse_wheel_filename(name)[3]} == {"py3-none-linux_x86_64"}


@pytest.mark.parametrize("wheel", [WHEEL_NAME, *DEVICE.values()])
def test_every_wheel_is_conformant(split_dir, wheel):
    with zipfile.ZipFile(split_dir / wheel) as archive:
        names = archive.namelist()
        info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        record = archive.read(f"{info}/RECORD").decode().splitlines()
        times = {i.date_time for i in archive.infolist()}
    # The dist-info last, RECORD the last member of all.
    in_info = [n.startswith(f"{info}/") for n in names]
    assert in_info == sorted(in_info) and names[-1] == f"{info}/RECORD"
    assert record[-1] == f"{info}/RECORD,,"
    assert all(RECORD_LINE.match(line) for line in record[:-1]) and len(record) == len(names)
    assert times == {(1980, 1, 1, 0, 0, 0)}


def test_the_same_input_gives_the_same_bytes(fat_wheel, split_dir, tmp_path):
    result = run("split", str(fat_wheel), "--out", str(tmp_path / "again"))
    assert result.exit_code == 0, result.output
    for wheel in split_dir.iterdir():
        assert (tmp_path / "again" / wheel.name).read_bytes() == wheel.read_bytes()


def test_installer_installs_every_wheel_with_record_validation(split_dir, tmp_path):
    scheme = {k: str(tmp_path / k) for k in ("purelib", "platlib", "headers", "scripts", "data")}
    destination = SchemeDictionaryDestination(scheme, sys.executable, "posix")
    for wheel in sorted(split_dir.iterdir()):
        with WheelFile.open(wheel) as source:
            source.validate_record()
            install(source, destination, {})
    kpacks = sorted(p.name for p in (tmp_path / "platlib" / NAME / ".kpack").iterdir())
    assert kpacks == sorted(f"{NAME}_lib_{arch}.kpack" for arch in ARCHES)


def _code_objects(library: Path, processor: str) -> int:
    with FatBinary(library) as fat:
        return sum(
            1
            for device in fat.devices
            if device.first
            for obj in device.bundle.code_objects
            if obj.target.processor == processor
        )


def _venv(path: Path) -> Path:
    """A fresh virtual environment (uv makes one in a fraction of venv's time)."""
    uv = shutil.which("uv", path=os.path.dirname(sys.executable))
    assert uv is not None, "uv is a test dependency"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(path)], check=True)
    return path / "bin" / "python"


def _site_packages(python: Path) -> Path:
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(out.stdout.strip())


def _clean_environment(tmp_path: Path) -> dict[str, str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("ROCM_KPACK", "PIP_", "UV_"))
    }
    return {**environment, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "PIP_NO_CACHE_DIR": "1"}


@pytest.mark.parametrize("client", ["pip", "uv"])
def test_a_client_installs_the_host_and_one_arch_that_resolves_and_imports(
    fat_wheel, split_dir, tmp_path, client
):
    arch = "gfx90a" if client == "pip" else "gfx1030"
    python = _venv(tmp_path / "venv")
    environment = _clean_environment(tmp_path)
    bin_dir = os.path.dirname(sys.executable)
    wanted = f"{NAME}[device-{arch}]"
    offline = ["--no-index", "--find-links", str(split_dir), wanted]
    command = {
        "pip": [f"{bin_dir}/pip", "--python", str(python), "install", "-q",
                "--disable-pip-version-check", *offline],
        "uv": [f"{bin_dir}/uv", "pip", "install", "-q", "--python", str(python), "--offline",
               *offline],
    }[client]  # fmt: skip
    subprocess.run(command, check=True, env=environment)
    site = _site_packages(python)
    installed = sorted(p.name for p in site.glob("*.dist-info") if p.name.startswith(NAME))
    assert installed == [f"{DIST_INFO}", f"{NAME}_device_{arch}-{VERSION}.dist-info"]
    assert sorted(p.name for p in (site / NAME / ".kpack").iterdir()) == [
        f"{NAME}_lib_{arch}.kpack"
    ]
    # The installed library finds all its code objects of that arch with no variable set.
    for library, original in (
        (f"{NAME}/_native.so", "libtwo.so"),
        (f"{NAME}/lib/libone.so", "libone.so"),
    ):
        resolved = subprocess.run(
            [f"{bin_dir}/gfxpack", "kpack", "resolve", str(site / library),
             "--arch", arch, "--json"],
            capture_output=True, text=True, env=environment,
        )  # fmt: skip
        assert resolved.returncode == 0, resolved.stdout + resolved.stderr
        found = json.loads(resolved.stdout)["code_objects"]
        unsplit = _code_objects(_original_library(fat_wheel, library, tmp_path / original), arch)
        assert len(found) == unsplit >= 1
    # The extension still loads (ctypes.CDLL of both libraries) as before the split.
    imported = subprocess.run(
        [python, "-c", f"import {NAME}; print({NAME}.ANSWERS)"],
        capture_output=True, text=True, env=environment, cwd=tmp_path,
    )  # fmt: skip
    assert imported.stdout.strip() == ANSWERS, imported.stderr


def _original_library(fat_wheel: Path, member: str, where: Path) -> Path:
    where.write_bytes(members(fat_wheel)[member][1])
    return where


def test_the_fat_wheel_imports_too(fat_wheel, tmp_path):
    """The reference for the import check above: the unsplit extension loads alike."""
    python = _venv(tmp_path / "venv")
    bin_dir = os.path.dirname(sys.executable)
    subprocess.run(
        [f"{bin_dir}/uv", "pip", "install", "-q", "--python", str(python), "--offline",
         str(fat_wheel)],
        check=True, env=_clean_environment(tmp_path),
    )  # fmt: skip
    imported = subprocess.run(
        [python, "-c", f"import {NAME}; print({NAME}.ANSWERS)"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert imported.stdout.strip() == ANSWERS, imported.stderr


def test_join_gives_back_every_file_byte_for_byte(fat_wheel, split_dir, tmp_path):
    out = tmp_path / "joined"
    result = run("join", str(split_dir), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert [p.name for p in out.iterdir()] == [WHEEL_NAME]
    # Every member (RECORD included) and its mode; the zip container itself may differ.
    assert members(out / WHEEL_NAME) == members(fat_wheel)


def test_join_without_a_device_wheel_is_one_error(split_dir, tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    for wheel in split_dir.iterdir():
        if wheel.name != DEVICE["gfx906"]:
            shutil.copy(wheel, partial)
    result = run("join", str(partial), "--out", str(tmp_path / "joined"))
    assert result.exit_code == 1
    missing = DEVICE["gfx906"]
    assert result.stderr.splitlines() == [
        f"error: {partial / WHEEL_NAME}: its gfx906 device wheel {missing} is not beside it"
    ]
    assert not (tmp_path / "joined").exists()


def test_a_directory_of_wheels_splits_the_fat_one_and_copies_the_others(fat_wheel, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    shutil.copy(fat_wheel, wheels)
    pure_name = "plain-0.1-py3-none-any.whl"
    make_wheel(
        wheels / pure_name,
        [
            ("plain/__init__.py", 0o644, b"X = 1\n"),
            (
                "plain-0.1.dist-info/METADATA",
                0o644,
                b"Metadata-Version: 2.1\nName: plain\nVersion: 0.1\n",
            ),
            ("plain-0.1.dist-info/WHEEL", 0o644, WHEEL.replace(PYTAG, "py3").encode()),
        ],
        "plain-0.1.dist-info",
    )
    result = run("split", str(wheels), "--out", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert [(w["host"], sorted(w["devices"])) for w in summary["wheels"]] == [
        (WHEEL_NAME, sorted(ARCHES)),
        (pure_name, []),
    ]
    assert (tmp_path / "out" / pure_name).read_bytes() == (wheels / pure_name).read_bytes()
    result = run("join", str(tmp_path / "out"), "--out", str(tmp_path / "joined"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "joined").iterdir()) == sorted(
        [WHEEL_NAME, pure_name]
    )
    assert members(tmp_path / "joined" / WHEEL_NAME) == members(fat_wheel)


def test_a_corrupt_fat_library_is_one_error_naming_the_member(fat_wheel, tmp_path):
    library = bytearray(members(fat_wheel)[f"{NAME}/lib/libone.so"][1])
    magic = library.find(b"__CLANG_OFFLOAD_BUNDLE__")
    assert magic > 0
    library[magic + 24 : magic + 32] = (1 << 40).to_bytes(8, "little")  # the entry count
    (tmp_path / "in").mkdir()
    native = members(fat_wheel)[f"{NAME}/_native.so"][1]
    wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, demo_members(native, bytes(library)))
    out = tmp_path / "out"
    result = run("split", str(wheel), "--out", str(out))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {wheel}: member {NAME}/lib/libone.so: bundle 0: ")
    assert not os.path.lexists(out)
    assert [p.name for p in tmp_path.iterdir()] == ["in"]  # no partial OUT, no scratch


@pytest.mark.parametrize(
    ("key", "forged", "problem"),
    [
        ("group", "../../elsewhere", f"'group' is not '{NAME}_lib'"),
        ("devices", {"../../x": "y.whl"}, "'devices': '../../x' is not a GPU arch"),
    ],
)
def test_join_refuses_a_forged_split_record(split_dir, tmp_path, key, forged, problem):
    """A host wheel whose record (RECORD rewritten to match) names paths out of the
    scratch directory: one error, nothing written outside OUT."""
    planted = plant(tmp_path)
    forged_dir = tmp_path / "forged"
    forged_dir.mkdir()
    for wheel in split_dir.iterdir():
        shutil.copy(wheel, forged_dir)
    host = members(split_dir / WHEEL_NAME)
    record = msgpack.unpackb(host[f"{DIST_INFO}/gfxpack-split.msgpack"][1])
    record[key] = forged
    host[f"{DIST_INFO}/gfxpack-split.msgpack"] = (0o100644, msgpack.packb(record))
    del host[f"{DIST_INFO}/RECORD"]
    (forged_dir / WHEEL_NAME).unlink()
    write_wheel(
        forged_dir / WHEEL_NAME, [(n, m & 0o777, d) for n, (m, d) in host.items()], DIST_INFO
    )
    out = tmp_path / "joined"
    result = run("join", str(forged_dir), "--out", str(out))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {forged_dir / WHEEL_NAME}: gfxpack-split.msgpack: {problem}")
    assert not os.path.lexists(out)
    assert untouched(planted)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "forged"]


# --- a full or read-only OUT: one line naming OUT, nothing left ----------------------------


def _assert_out_refused(result: Result, out: Path, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [f"error: {message}"]
    assert list(out.parent.iterdir()) == []


# From too small to unpack the wheel, through the tree split (or join) in the scratch
# directory, to writing the wheels, to enough: the demo wheel needs about 250 KiB.
SIZES = range(8, 320, 24)


@pytest.mark.parametrize("command", ["split", "join"])
def test_a_full_out_at_every_stage_is_one_line_naming_it(fat_wheel, split_dir, tmp_path, command):
    """Wherever the room runs out, the one error names OUT (never the scratch
    directory the write happened in) and nothing is left; with room, it is written."""
    source = fat_wheel if command == "split" else split_dir
    outcomes = []
    for size in SIZES:
        with tmpfs(tmp_path / f"full-{size}", f"size={size}k") as full:
            out = full / "out"
            result = run(command, str(source), "--out", str(out))
            outcomes.append(result.exit_code)
            if result.exit_code == 0:
                assert len(list(out.iterdir())) == (4 if command == "split" else 1)
            else:
                _assert_out_refused(result, out, f"{out}: cannot write: No space left on device")
    assert 0 in outcomes and 1 in outcomes and outcomes == sorted(outcomes, reverse=True)


def test_split_and_join_into_a_read_only_out_are_one_line_naming_it(fat_wheel, split_dir, tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=64k") as read_only:
        out = read_only / "out"
        refused = f"{out}: cannot write in {read_only}: Read-only file system"
        _assert_out_refused(run("split", str(fat_wheel), "--out", str(out)), out, refused)
        _assert_out_refused(run("join", str(split_dir), "--out", str(out)), out, refused)
