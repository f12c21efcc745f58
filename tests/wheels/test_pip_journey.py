"""The pip journey (issue 31), with hipcc-built fat wheels and the real clients as referees.

Real wheels that strict validation rejects split as they are, join back, and install
with pip, uv and ``installer``; a host requiring another split distribution passes
its device extras on, so one ``pip install 'A[device-<arch>]'`` brings both hosts
and both device wheels, nothing else; split and join report what each costs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile
from packaging.metadata import Metadata
from tests.fatbin.conftest import build_once
from tests.fatbin.test_split_trees import _compress_bundles
from tests.wheels.conftest import (
    DIST_INFO,
    METADATA,
    NAME,
    PYTAG,
    VERSION,
    WHEEL,
    WHEEL_NAME,
    demo_members,
    make_wheel,
)
from tests.wheels.test_index import CLIENT_ENV, Server, fresh_venv
from tests.wheels.test_split import _clean_environment, _venv, members, run

from gfxpack.fatbin.reader import FatBinary
from gfxpack.wheels.split import split_wheels

# make check skips it: wheels built with hipcc, installed by pip and uv.
pytestmark = pytest.mark.slow

ARCH = "gfx90a"
APP = "hipapp"
APP_WHEEL = f"{APP}-2.0-{PYTAG}-{PYTAG}-linux_x86_64.whl"

# Each a defect pip, uv and installer install all the same: (the METADATA and WHEEL of
# the fat wheel, what the split's note says).
LAX = {
    "a 2.4 field in 2.1": (
        METADATA.replace("Requires-Python", "License-Expression: MIT\nRequires-Python"),
        WHEEL,
        "license-expression",
    ),
    "a WHEEL tag unlike the file name's": (
        METADATA,
        WHEEL.replace(f"Tag: {PYTAG}-{PYTAG}-linux_x86_64", "Tag: py3-none-any"),
        "WHEEL: its Tag lines (py3-none-any) are not the file name's",
    ),
    "Metadata-Version 1.2": (
        METADATA.replace("Metadata-Version: 2.1", "Metadata-Version: 1.2"),
        WHEEL,
        "Metadata-Version raised from 1.2 to 2.1: the Provides-Extra lines added need it",
    ),
}


def lax_wheel(directory: Path, metadata: str, wheel: str, tmp: pytest.TempPathFactory) -> Path:
    build = build_once(tmp)
    found = demo_members(build.two_files.read_bytes(), build.one_file.read_bytes())
    replaced = {f"{DIST_INFO}/METADATA": metadata.encode(), f"{DIST_INFO}/WHEEL": wheel.encode()}
    directory.mkdir()
    return make_wheel(directory / WHEEL_NAME, [(n, m, replaced.get(n, d)) for n, m, d in found])


def install_command(client: str, python: Path, wheels: list[str]) -> list[str]:
    bin_dir = os.path.dirname(sys.executable)
    return {
        "pip": [f"{bin_dir}/pip", "--python", str(python), "install", "-q",
                "--disable-pip-version-check", *wheels],
        "uv": [f"{bin_dir}/uv", "pip", "install", "-q", "--python", str(python), "--offline",
               *wheels],
    }[client]  # fmt: skip


def dists(python: Path) -> list[str]:
    site = next((python.parent.parent / "lib").glob("python*/site-packages"))
    return sorted(p.name for p in site.glob("*.dist-info"))  # a fresh venv holds no other


@pytest.mark.parametrize("case", LAX)
def test_a_wheel_strict_validation_rejects_splits_joins_and_installs(
    case: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    metadata, wheel_file, said = LAX[case]
    fat = lax_wheel(tmp_path / "in", metadata, wheel_file, tmp_path_factory)
    out = tmp_path / "split"
    result = run("split", str(fat), "--out", str(out))
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert any(said in note for note in notes), notes
    host = members(out / WHEEL_NAME)[f"{DIST_INFO}/METADATA"][1]
    # The input's METADATA byte for byte (its version raised only when it had to be),
    # and the added lines at the end of its header.
    original = metadata.replace("Metadata-Version: 1.2", "Metadata-Version: 2.1").encode()
    head, body = original.split(b"\n\n", 1)
    assert host.startswith(head + b"\nProvides-Extra: device-gfx906\n")
    assert host.endswith(b"\n\n" + body)
    added = host[len(head) + 1 : -len(body) - 2].decode().splitlines()
    assert all(line.startswith(("Provides-Extra: ", "Requires-Dist: ")) for line in added)
    # Device wheels are fully valid 2.4.
    device = f"{NAME}_device_{ARCH}-{VERSION}"
    info = members(out / f"{device}-py3-none-linux_x86_64.whl")[f"{device}.dist-info/METADATA"]
    assert Metadata.from_email(info[1], validate=True).metadata_version == "2.4"
    # Joined back: every member of the input, byte for byte.
    joined = run("join", str(out), "--out", str(tmp_path / "joined"))
    assert joined.exit_code == 0, joined.output
    assert members(tmp_path / "joined" / WHEEL_NAME) == members(fat)
    # installer (RECORD validated), pip and uv install the host and one arch.
    schemes = ("purelib", "platlib", "headers", "scripts", "data")
    scheme = {k: str(tmp_path / "prefix" / k) for k in schemes}
    destination = SchemeDictionaryDestination(scheme, sys.executable, "posix")
    for written in sorted(out.iterdir()):
        with WheelFile.open(written) as source:
            source.validate_record()
            install(source, destination, {})
    for client in ("pip", "uv"):
        python = _venv(tmp_path / f"venv-{client}")
        wanted = ["--no-index", "--find-links", str(out), f"{NAME}[device-{ARCH}]"]
        subprocess.run(
            install_command(client, python, wanted), check=True, env=_clean_environment(tmp_path)
        )
        assert dists(python) == [f"{DIST_INFO}", f"{device}.dist-info"]


def test_compressed_bundles_split_join_and_install_as_uncompressed_ones_do(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The fixture's own bundles are clang 15's, uncompressed (the other tests split
    them); here _native.so's are CCOB v2 (zstd) and v3 (zlib), as newer compilers make."""
    build = build_once(tmp_path_factory)
    _compress_bundles(build.two_files, tmp_path / "libtwo.so")
    with FatBinary(tmp_path / "libtwo.so") as fat:
        assert [d.bundle.compression for d in fat.devices] == ["zstd", "zlib"]
    (tmp_path / "in").mkdir()
    members_in = demo_members((tmp_path / "libtwo.so").read_bytes(), build.one_file.read_bytes())
    fat_wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, members_in)
    out = tmp_path / "split"
    result = run("split", str(fat_wheel), "--out", str(out))
    assert result.exit_code == 0, result.output
    joined = run("join", str(out), "--out", str(tmp_path / "joined"))
    assert joined.exit_code == 0, joined.output
    assert members(tmp_path / "joined" / WHEEL_NAME) == members(fat_wheel)
    python = _venv(tmp_path / "venv")
    wanted = ["--no-index", "--find-links", str(out), f"{NAME}[device-{ARCH}]"]
    subprocess.run(
        install_command("pip", python, wanted), check=True, env=_clean_environment(tmp_path)
    )
    assert dists(python) == [DIST_INFO, f"{NAME}_device_{ARCH}-{VERSION}.dist-info"]


# --- extras passed on to another split distribution -----------------------------------------

APP_METADATA = f"""Metadata-Version: 2.1
Name: {APP}
Version: 2.0
Requires-Dist: {NAME}=={VERSION}
Requires-Dist: pytest; extra == "test"

An application on the hipdemo library.
"""


@pytest.fixture(scope="module")
def chained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hipapp 2.0 (a fat library of its own) requiring hipdemo 1.2.0, both split in one
    run, given in the order that would split the dependent first."""
    build = build_once(tmp_path_factory)
    wheels = tmp_path_factory.mktemp("chained") / "in"
    wheels.mkdir()
    make_wheel(
        wheels / WHEEL_NAME,
        demo_members(build.two_files.read_bytes(), build.one_file.read_bytes()),
    )
    info = f"{APP}-2.0.dist-info"
    make_wheel(
        wheels / APP_WHEEL,
        [
            (f"{APP}/__init__.py", 0o644, b""),
            (f"{APP}/libapp.so", 0o755, build.one_file.read_bytes()),
            (f"{info}/METADATA", 0o644, APP_METADATA.encode()),
            (f"{info}/WHEEL", 0o644, WHEEL.encode()),
        ],
        dist_info=info,
    )
    out = wheels.parent / "split"
    result = run("split", str(wheels), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_a_split_dependency_gets_the_extra_passed_on(chained: Path) -> None:
    metadata = members(chained / APP_WHEEL)[f"{APP}-2.0.dist-info/METADATA"][1]
    requires = {str(r) for r in Metadata.from_email(metadata).requires_dist or []}
    for extra in ("device-gfx1030", "device-gfx906", "device-gfx90a", "device-all"):
        assert f'{NAME}[{extra}]=={VERSION}; extra == "{extra}"' in requires
    # The dependency's own METADATA passes nothing on: it requires no split distribution.
    own = members(chained / WHEEL_NAME)[f"{DIST_INFO}/METADATA"][1]
    assert b"[device-" not in own


def test_a_dependency_found_in_the_index_gets_the_extra_passed_on(
    chained: Path, tmp_path: Path
) -> None:
    demo = tmp_path / "demo"
    demo.mkdir()
    for wheel in chained.glob(f"{NAME}*.whl"):
        (demo / wheel.name).write_bytes(wheel.read_bytes())
    site = tmp_path / "site"
    assert run("index", "--wheels", str(demo), "--out", str(site)).exit_code == 0
    app = chained.parent / "in" / APP_WHEEL
    alone = run("split", str(app), "--out", str(tmp_path / "alone"))
    assert alone.exit_code == 0, alone.output
    # Split without the index, the app's extras leave demo without device code: the
    # index it is added to refuses it, and stays as it was.
    before = sorted(p.name for p in (site / "files").iterdir())
    refused = run("index", "--wheels", str(tmp_path / "alone"), "--out", str(site))
    assert refused.exit_code == 1
    assert f"installing {APP}[device-all,device-gfx1030,device-gfx906,device-gfx90a]" in (
        refused.stderr
    )
    assert sorted(p.name for p in (site / "files").iterdir()) == before
    # Split with --index, they pass on to what the index has.
    result = run("split", str(app), "--out", str(tmp_path / "app"), "--index", str(site))
    assert result.exit_code == 0, result.output
    metadata = members(tmp_path / "app" / APP_WHEEL)[f"{APP}-2.0.dist-info/METADATA"][1]
    assert f'{NAME}[device-{ARCH}]=={VERSION}; extra == "device-{ARCH}"'.encode() in metadata
    added = run("index", "--wheels", str(tmp_path / "app"), "--out", str(site))
    assert added.exit_code == 0, added.output


@pytest.fixture(scope="module")
def served(chained: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    site = tmp_path_factory.mktemp("site") / "site"
    result = run("index", "--wheels", str(chained), "--out", str(site))
    assert result.exit_code == 0, result.output
    # Each split distribution's install line, with its extra.
    assert f"'{APP}[device-<arch>]'  (arch: gfx906, gfx90a, gfx1030, or all)" in result.stdout
    assert f"'{NAME}[device-<arch>]'" in result.stdout
    # The pytest requirement of hipapp's test extra is no install's: no warning.
    assert "warning" not in result.stderr
    server = Server(site, negotiate=True)
    threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


CHAIN = sorted(
    [
        f"{APP}-2.0.dist-info",
        f"{APP}_device_{ARCH}-2.0.dist-info",
        f"{DIST_INFO}",
        f"{NAME}_device_{ARCH}-{VERSION}.dist-info",
    ]
)


@pytest.mark.parametrize("client", ["pip", "uv"])
def test_one_install_brings_both_hosts_and_both_device_wheels(
    served: Server, tmp_path: Path, client: str
) -> None:
    python = fresh_venv(tmp_path / "venv")
    bin_dir = os.path.dirname(sys.executable)
    wanted = f"{APP}[device-{ARCH}]"
    command = {
        "pip": [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-cache-dir",
                "--disable-pip-version-check", "--index-url", served.url, wanted],
        "uv": [f"{bin_dir}/uv", "pip", "install", "--no-cache", "--python", str(python),
               "--index-url", served.url, wanted],
    }[client]  # fmt: skip
    subprocess.run(command, check=True, env=CLIENT_ENV, capture_output=True)
    assert dists(python) == CHAIN


def test_an_index_missing_the_dependencys_device_wheel_is_refused(
    chained: Path, tmp_path: Path
) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    for wheel in chained.iterdir():
        if (
            wheel.suffix == ".whl"
            and wheel.name != f"{NAME}_device_{ARCH}-{VERSION}-py3-none-linux_x86_64.whl"
        ):
            (partial / wheel.name).write_bytes(wheel.read_bytes())
    result = run("index", "--wheels", str(partial), "--out", str(tmp_path / "site"))
    assert result.exit_code == 1
    missing = f"requires {NAME}-device-{ARCH}=={VERSION}: no such wheel in {partial}"
    assert result.stderr.splitlines() == [
        f"error: {WHEEL_NAME}: extra device-all {missing}",
        f"error: {WHEEL_NAME}: extra device-{ARCH} {missing}",
    ]
    assert not (tmp_path / "site").exists()


# --- sizes and progress -----------------------------------------------------------------------


def test_split_and_join_report_download_and_installed_sizes(chained: Path, tmp_path: Path) -> None:
    source = tmp_path / "in"
    joined = run("join", str(chained), "--out", str(source), "--json")
    assert joined.exit_code == 0, joined.output
    report = json.loads(joined.stdout)
    [app] = [w for w in report["wheels"] if w["source"] == APP_WHEEL]
    assert app["sizes"]["fat"]["download"] == (source / APP_WHEEL).stat().st_size
    out = f"{tmp_path}/split/"  # a trailing slash: no "//" in what is printed
    result = run("split", str(source), "--out", out, "--json")
    assert result.exit_code == 0, result.output
    [app] = [w for w in json.loads(result.stdout)["wheels"] if w["source"] == APP_WHEEL]
    sizes = app["sizes"]
    with zipfile.ZipFile(source / APP_WHEEL) as fat:
        installed = sum(i.file_size for i in fat.infolist())
    assert sizes["fat"] == {"download": (source / APP_WHEEL).stat().st_size, "installed": installed}
    for arch, name in app["devices"].items():
        assert sizes["devices"][arch]["download"] == (tmp_path / "split" / name).stat().st_size
    one = sizes["host_and_one_arch"]
    largest = max(sizes["devices"].values(), key=lambda s: s["download"])
    assert one["download"] == sizes["host"]["download"] + largest["download"]
    assert one["installed"] == sizes["host"]["installed"] + largest["installed"]
    text = run("split", str(source), "--out", out, "--force")
    assert text.exit_code == 0, text.output
    line = next(x for x in text.stdout.splitlines() if APP_WHEEL in x)
    assert line.startswith(f"{tmp_path}/split/{APP_WHEEL}: host wheel, 3 device wheels; download ")
    assert "//" not in text.stdout and f"host + {one['arch']}; installed " in line


def test_split_tells_its_progress_and_splits_a_dependency_first(
    chained: Path, tmp_path: Path
) -> None:
    """What a terminal's progress line shows; hipapp comes first in the input (file
    name order) but is split after hipdemo, which it requires."""
    steps: list[tuple[str, int, int]] = []
    split_wheels(chained.parent / "in", tmp_path / "out", on_step=lambda *step: steps.append(step))
    done = [what.split(":")[0] for what, at, total in steps if at == total]
    assert done == [WHEEL_NAME, APP_WHEEL]
    assert (f"{APP_WHEEL}: writing the {ARCH} device wheel", 4, 6) in steps
