"""Debug-symbol packages from a real ELF: a library built with ``gcc -g``, split with
``objcopy --only-keep-debug`` / ``--strip-debug --add-gnu-debuglink`` into the stripped
library (the ``lib`` component) and ``.build-id/xx/yyyy.debug`` (the ``dbg``
component), as TheRock lays them out. gfxpack builds ``X-dbgsym`` (read back with
dpkg-deb) and ``X-debuginfo`` (rpm -qp); dpkg installs X and X-dbgsym into a throwaway
root, and gdb, pointed at that root, finds the function's source line in the stripped
library only when the dbgsym package is installed. Device packages never get one."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import dpkg_root, run
from tests.small_tree import build

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("gcc", "objcopy", "readelf", "gdb", "dpkg", "rpm")),
    reason="needs gcc, binutils, gdb, dpkg and rpm (make system-tools)",
)

STAGE = "tools/hello/stage"
PREFIX = "/opt/rocm/core-8.2"
FUNCTION = "gfxpack_debug_probe"
SOURCE = f"int {FUNCTION}(int x)\n{{\n  return x * 3 + 1;\n}}\n"


def compile_split(work: Path) -> tuple[Path, Path, str]:
    """(stripped library, its .debug file, its build ID), made by gcc and objcopy."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "hello.c").write_text(SOURCE)
    full = work / "libhello.so.1"
    run("gcc", "-g", "-O0", "-shared", "-fPIC", "-Wl,--build-id=sha1", "-o", str(full),
        str(work / "hello.c"))  # fmt: skip
    notes = run("readelf", "-n", str(full)).stdout
    build_id = next(line.split()[-1] for line in notes.splitlines() if "Build ID" in line)
    debug = work / "libhello.so.1.debug"
    run("objcopy", "--only-keep-debug", str(full), str(debug))
    stripped = work / "stripped" / "libhello.so.1"
    stripped.parent.mkdir()
    run("objcopy", "--strip-debug", f"--add-gnu-debuglink={debug}", str(full), str(stripped))
    return stripped, debug, build_id


def artifact(root: Path, name: str, files: dict[str, Path]) -> None:
    """One artifact directory: its manifest naming STAGE and ``files`` under it."""
    (root / name).mkdir(parents=True)
    (root / name / "artifact_manifest.txt").write_text(STAGE + "\n" if files else "")
    for relative, source in files.items():
        target = root / name / STAGE / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def config(path: Path, gfxarch: bool = False, **extra: str) -> Path:
    path.write_text(
        json.dumps(
            [
                {
                    "Package": "amdrocm-hello",
                    "Gfxarch": str(gfxarch),
                    "Artifactory": [
                        {
                            "Artifact": "hello",
                            "Artifact_Subdir": [{"Name": "hello", "Components": ["lib", "dbg"]}],
                        }
                    ],
                    **extra,
                }
            ]
        )
    )
    return path


@pytest.fixture(scope="module")
def elf(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    return compile_split(tmp_path_factory.mktemp("elf"))


def debug_tree(root: Path, elf: tuple[Path, Path, str], device: bool = False) -> Path:
    """hello_lib_generic (the stripped library), hello_dbg_generic (its .debug file) and
    a gfx942 directory: empty, or (``device``) a device file and per-arch symbols."""
    stripped, debug, build_id = elf
    artifact(root, "hello_lib_generic", {"lib/libhello.so.1": stripped})
    by_id = f".build-id/{build_id[:2]}/{build_id[2:]}.debug"
    artifact(root, "hello_dbg_generic", {by_id: debug})
    if device:
        artifact(root, "hello_lib_gfx942", {".kpack/hello_lib_gfx942.kpack": debug})
        artifact(root, "hello_dbg_gfx942", {".build-id/00/1122334455.debug": debug})
    else:
        artifact(root, "hello_lib_gfx942", {})
    return root


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory, elf) -> Path:
    tmp_path = tmp_path_factory.mktemp("debug")
    artifacts = debug_tree(tmp_path / "artifacts", elf)
    result = build(tmp_path, artifacts, config=config(tmp_path / "package.json"))
    assert result.exit_code == 0, result.output
    return tmp_path / "out"


def one(out: Path, pattern: str) -> Path:
    (found,) = out.glob(pattern)
    return found


def test_the_dbgsym_deb_has_debians_fields(packages, elf):
    _, _, build_id = elf
    deb = one(packages, "amdrocm-hello8.2-dbgsym_*.deb")
    field = {
        name: run("dpkg-deb", "-f", str(deb), name).stdout.strip()
        for name in ("Package", "Depends", "Section", "Auto-Built-Package", "Build-Ids")
    }
    assert field == {
        "Package": "amdrocm-hello8.2-dbgsym",
        "Depends": "amdrocm-hello8.2 (= 8.2.0-1)",
        "Section": "debug",
        "Auto-Built-Package": "debug-symbols",
        "Build-Ids": build_id,
    }
    listed = run("dpkg-deb", "-c", str(deb)).stdout
    assert f"./usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug" in listed
    assert PREFIX not in listed


def test_the_library_package_no_longer_carries_the_symbols(packages):
    listed = run("dpkg-deb", "-c", str(one(packages, "amdrocm-hello8.2_*.deb"))).stdout
    assert f".{PREFIX}/lib/libhello.so.1" in listed
    assert ".build-id" not in listed and "debug" not in listed


def test_the_debuginfo_rpm_requires_exactly_its_package(packages, elf):
    _, _, build_id = elf
    rpm = str(one(packages, "amdrocm-hello8.2-debuginfo-*.rpm"))
    query = run("rpm", "-qp", "--qf", "%{NAME} %{GROUP}\\n", rpm).stdout
    assert query == "amdrocm-hello8.2-debuginfo Development/Debug\n"
    assert "amdrocm-hello8.2 = 8.2.0-1" in run("rpm", "-qp", "--requires", rpm).stdout
    # What dnf debuginfo-install looks a build ID up by (rpm's own debuginfo.attr).
    assert f"debuginfo(build-id) = {build_id}" in run("rpm", "-qp", "--provides", rpm).stdout
    files = run("rpm", "-qlp", rpm).stdout.split()
    assert f"/usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug" in files
    assert not any(path.startswith(PREFIX) for path in files)


def gdb_line(root: Path) -> str:
    """What gdb, reading the installed root, says of the function's line."""
    # -iex: before gdb loads the library and looks for its symbols.
    return run(
        "gdb", "-nx", "-batch",
        "-iex", "set debuginfod enabled off",
        "-iex", f"set sysroot {root}",
        "-iex", f"set debug-file-directory {root}/usr/lib/debug",
        "-ex", f"info line {FUNCTION}",
        str(root / PREFIX.lstrip("/") / "lib/libhello.so.1"),
    ).stdout  # fmt: skip


def test_gdb_finds_the_symbols_once_the_dbgsym_package_is_installed(packages, tmp_path):
    root = dpkg_root(tmp_path / "root")
    dpkg = ["dpkg", "--root", str(root), "--force-script-chrootless", "--log", "/dev/null"]
    run(*dpkg, "-i", str(one(packages, "amdrocm-hello8.2_*.deb")))
    without = gdb_line(root)
    assert "hello.c" not in without, without
    assert "No line number information" in without, without
    run(*dpkg, "-i", str(one(packages, "amdrocm-hello8.2-dbgsym_*.deb")))
    with_symbols = gdb_line(root)
    # The line of the function's body, in the source the library was compiled from.
    assert re.search(r'^Line 2 of ".*/hello\.c" starts at address .*<' + FUNCTION, with_symbols)


def test_dpkg_refuses_the_dbgsym_package_without_its_package(packages, tmp_path):
    root = dpkg_root(tmp_path / "root")
    dpkg = ["dpkg", "--root", str(root), "--force-script-chrootless", "--log", "/dev/null"]
    result = subprocess.run(
        [*dpkg, "-i", str(one(packages, "amdrocm-hello8.2-dbgsym_*.deb"))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "amdrocm-hello8.2" in result.stderr


def test_device_packages_never_get_a_debug_package(tmp_path, elf):
    artifacts = debug_tree(tmp_path / "artifacts", elf, device=True)
    package_json = config(tmp_path / "package.json", gfxarch=True)
    result = build(tmp_path, artifacts, "--mode", "kpack", config=package_json)
    assert result.exit_code == 0, result.output
    names = sorted(path.name.split("_")[0] for path in (tmp_path / "out").glob("*.deb"))
    assert names == [
        "amdrocm-hello",
        "amdrocm-hello-host8.2",
        "amdrocm-hello-host8.2-dbgsym",
        "amdrocm-hello8.2",
        "amdrocm-hello8.2-gfx942",
    ]
    device = run("dpkg-deb", "-c", str(one(tmp_path / "out", "amdrocm-hello8.2-gfx942_*.deb")))
    assert ".build-id" not in device.stdout
    dbgsym = one(tmp_path / "out", "amdrocm-hello-host8.2-dbgsym_*.deb")
    assert "1122334455" not in run("dpkg-deb", "-c", str(dbgsym)).stdout


def test_disable_debug_package_builds_none(tmp_path, elf):
    artifacts = debug_tree(tmp_path / "artifacts", elf)
    package_json = config(tmp_path / "package.json", Disable_Debug_Package="True")
    result = build(tmp_path, artifacts, config=package_json)
    assert result.exit_code == 0, result.output
    names = sorted(path.name.split("_")[0] for path in (tmp_path / "out").glob("*.deb"))
    assert names == ["amdrocm-hello", "amdrocm-hello8.2"]


@pytest.mark.parametrize(
    "relative",
    ["lib/libhello.so.1.debug", ".build-id/EF/AB12CD34.debug", ".build-id/ef/ab12cd34"],
    ids=["path-layout", "uppercase-hex", "no-debug-suffix"],
)
def test_anything_but_build_id_debug_files_is_one_error_naming_it(tmp_path, elf, relative):
    artifacts = debug_tree(tmp_path / "artifacts", elf)
    odd = artifacts / "hello_dbg_generic" / STAGE / relative
    odd.parent.mkdir(parents=True, exist_ok=True)
    odd.write_bytes(b"not debug info")
    result = build(tmp_path, artifacts, config=config(tmp_path / "package.json"))
    assert result.exit_code != 0
    assert f"hello_dbg_generic/{STAGE}/{relative}: expected only .build-id/xx/yyyy.debug" in (
        result.output
    )
    assert "Traceback" not in result.output
    assert not list((tmp_path / "out").glob("*.deb"))


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("/etc", "symlink to '/etc' leaves the install prefix /usr/lib/debug"),
        ("..", "expected only .build-id/xx/yyyy.debug files"),
    ],
    ids=["outside", "inside"],
)
def test_a_symlink_in_the_dbg_component_is_refused_not_followed(tmp_path, elf, target, said):
    artifacts = debug_tree(tmp_path / "artifacts", elf)
    link = artifacts / "hello_dbg_generic" / STAGE / ".build-id" / "aa"
    link.symlink_to(target)
    result = build(tmp_path, artifacts, config=config(tmp_path / "package.json"))
    assert result.exit_code != 0
    assert f"hello_dbg_generic/{STAGE}/.build-id/aa: {said}" in result.output
    assert not list((tmp_path / "out").glob("*.deb"))
