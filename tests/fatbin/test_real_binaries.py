"""Split, resolve and join binaries made by a real HIP compiler, checked by real tools:
clang-offload-bundler for the code objects, readelf for the ELF files, the
dynamic loader for the libraries, the kernel for the executable."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.fatbin.join import join_tree
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.resolve import ArchiveNotFound, ArchNotFound, resolve
from gfxpack.fatbin.split import read_split_index, split_tree
from tests.fatbin.conftest import BUNDLER, TARGETS, HipBuild

PAGE = 4096
LAYOUT = {
    "two": "usr/lib/libtwo.so.1",
    "one": "usr/lib/libone.so.1",
    "fill": "usr/bin/fill",
    "fill-no-pie": "usr/bin/fill-no-pie",
}


@pytest.fixture(scope="module")
def split_out(hip_build: HipBuild, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("split")
    tree = root / "tree"
    for key, source in (
        ("two", hip_build.two_files),
        ("one", hip_build.one_file),
        ("fill", hip_build.program),
        ("fill-no-pie", hip_build.fixed_program),
    ):
        (tree / LAYOUT[key]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, tree / LAYOUT[key])
    (tree / "usr/lib/libtwo.so").symlink_to("libtwo.so.1")
    out = root / "out"
    split_tree(tree, out, name="demo_lib", jobs=2)
    installed = root / "installed"
    for artifact in sorted(out.iterdir()):
        if artifact.is_dir():
            shutil.copytree(artifact / "stage", installed, symlinks=True, dirs_exist_ok=True)
    return {"tree": tree, "out": out, "installed": installed, "root": root}


def _host(split_out: dict[str, Path], key: str) -> Path:
    return split_out["out"] / "demo_lib_generic" / "stage" / LAYOUT[key]


def _bundles(path: Path, workdir: Path) -> list[tuple[int, Path]]:
    """(wrapper index, file holding that bundle's bytes), cut from the section objcopy dumps."""
    section = workdir / f"{path.name}.hip_fatbin"
    subprocess.run(
        ["objcopy", "--dump-section", f".hip_fatbin={section}", str(path), str(workdir / "x")],
        check=True,
    )
    data = section.read_bytes()
    with FatBinary(path) as fat:
        starts = sorted({d.bundle.offset for d in fat.devices})
        found = []
        for device in fat.devices:
            start = device.bundle.offset
            later = [s for s in starts if s > start]
            piece = workdir / f"{path.name}.{device.wrapper.index}.bundle"
            piece.write_bytes(data[start : later[0] if later else len(data)])
            found.append((device.wrapper.index, piece))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(LAYOUT))
@pytest.mark.parametrize("target", TARGETS)
def test_resolve_gives_what_the_bundler_extracts(split_out, tmp_path, key, target):
    original = split_out["tree"] / LAYOUT[key]
    found = resolve(split_out["installed"] / LAYOUT[key], target, environ={})
    bundles = _bundles(original, tmp_path)
    assert len(found) == len(bundles) == (2 if key == "two" else 1)
    by_index = {item.index: item for item in found}
    for index, bundle in bundles:
        listed = subprocess.run(
            [BUNDLER, "--list", "--type=o", f"--input={bundle}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        assert f"hipv4-amdgcn-amd-amdhsa--{target}" in listed
        extracted = tmp_path / f"{index}.{target}.co"
        subprocess.run(
            [BUNDLER, "--unbundle", "--type=o", f"--input={bundle}", f"--output={extracted}",
             f"--targets=hipv4-amdgcn-amd-amdhsa--{target}"],
            check=True,
        )  # fmt: skip
        assert by_index[index].code == extracted.read_bytes()
        assert by_index[index].arch == target
        assert by_index[index].archive.name == f"demo_lib_{target.split(':')[0]}.kpack"


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(LAYOUT))
def test_readelf_reads_the_host_part_without_warnings(split_out, key):
    result = subprocess.run(
        ["readelf", "-lSW", str(_host(split_out, key))], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "warning" not in (result.stdout + result.stderr).lower()
    assert ".rocm_kpack_ref" in result.stdout
    loads = re.findall(r"^\s+LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)", result.stdout, re.M)
    assert len(loads) >= 4
    for offset, vaddr in loads:
        assert int(offset, 16) % PAGE == int(vaddr, 16) % PAGE


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(LAYOUT))
def test_host_part_shrinks_by_the_removed_pages(split_out, key):
    original = split_out["tree"] / LAYOUT[key]
    with FatBinary(original) as fat:
        assert fat.fatbin is not None and fat.elf is not None
        first = -(-fat.fatbin.offset // PAGE) * PAGE
        last = (fat.fatbin.offset + fat.fatbin.size) // PAGE * PAGE
        names = fat.elf.sections[fat.elf.header.shstrndx].size + len(".rocm_kpack_ref\0")
        sections = (fat.elf.header.shnum + 1) * 64
    removed = last - first - PAGE
    assert removed >= PAGE
    host = _host(split_out, key).stat().st_size
    size = original.stat().st_size
    tail = size - removed + names
    assert host == -(-tail // 8) * 8 + sections


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "symbol", "value"), [("two", "b_answer", 7), ("one", "a_answer", 42)]
)
def test_split_library_still_loads(split_out, key, symbol, value):
    code = f"import ctypes; print(ctypes.CDLL({str(_host(split_out, key))!r}).{symbol}())"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(value)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["fill", "fill-no-pie"])
def test_split_executable_still_starts(split_out, key):
    result = subprocess.run(
        [str(_host(split_out, key)), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "usage: fill [--help]"


@pytest.mark.slow
def test_join_restores_every_byte(split_out):
    joined = split_out["root"] / "joined"
    assert join_tree(split_out["out"], joined) == 4
    for relpath in LAYOUT.values():
        assert (joined / relpath).read_bytes() == (split_out["tree"] / relpath).read_bytes()
    assert (joined / "usr/lib/libtwo.so").readlink() == Path("libtwo.so.1")


@pytest.mark.slow
def test_rerun_gives_identical_bytes(split_out):
    again = split_out["root"] / "again"
    split_tree(split_out["tree"], again, name="demo_lib")
    first = sorted(p.relative_to(split_out["out"]) for p in split_out["out"].rglob("*"))
    second = sorted(p.relative_to(again) for p in again.rglob("*"))
    assert first == second
    for relpath in first:
        if (again / relpath).is_file() and not (again / relpath).is_symlink():
            assert (again / relpath).read_bytes() == (split_out["out"] / relpath).read_bytes()
    assert read_split_index(again)["jobs"][0]["archives"] == {
        "gfx1030": "demo_lib_gfx1030/stage/.kpack/demo_lib_gfx1030.kpack",
        "gfx906": "demo_lib_gfx906/stage/.kpack/demo_lib_gfx906.kpack",
        "gfx90a": "demo_lib_gfx90a/stage/.kpack/demo_lib_gfx90a.kpack",
    }


@pytest.mark.slow
def test_missing_archive_and_missing_arch_are_different_errors(split_out):
    library = split_out["installed"] / LAYOUT["two"]
    with pytest.raises(ArchiveNotFound, match="no archive found"):
        resolve(library, "gfx942", environ={})
    archive = split_out["installed"] / ".kpack" / "demo_lib_gfx90a.kpack"
    with pytest.raises(ArchNotFound, match="not found for gfx1030"):
        resolve(library, "gfx1030", environ={"ROCM_KPACK_PATH": str(archive)})
    # The prefix is searched first; the override replaces the embedded paths.
    found = resolve(library, "gfx90a", environ={"ROCM_KPACK_PATH_PREFIX": str(archive)})
    assert {item.archive for item in found} == {archive}


@pytest.mark.slow
def test_cli_resolve_prints_and_writes_each_code_object(split_out, tmp_path, monkeypatch):
    monkeypatch.delenv("ROCM_KPACK_PATH", raising=False)
    monkeypatch.delenv("ROCM_KPACK_PATH_PREFIX", raising=False)
    monkeypatch.delenv("ROCM_KPACK_DISABLE", raising=False)
    library = split_out["installed"] / LAYOUT["two"]
    runner = CliRunner()
    result = runner.invoke(
        cli, ["kpack", "resolve", str(library), "--arch", "gfx1030", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].startswith("1: stage/usr/lib/libtwo.so.1#1 [gfx1030] in ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.hsaco", "1.hsaco"]
    assert (tmp_path / "0.hsaco").read_bytes()[:4] == b"\x7fELF"
    listed = json.loads(
        runner.invoke(cli, ["kpack", "resolve", str(library), "--arch", "gfx1030", "--json"]).output
    )
    assert [row["index"] for row in listed["code_objects"]] == [0, 1]
    monkeypatch.setenv("ROCM_KPACK_DISABLE", "1")
    off = runner.invoke(cli, ["kpack", "resolve", str(library), "--arch", "gfx1030"])
    assert off.exit_code == 1 and "turned off by ROCM_KPACK_DISABLE" in off.stderr
    monkeypatch.delenv("ROCM_KPACK_DISABLE")
    # The unsplit binary: its inline code objects are what the runtime loads, so a
    # device they cover is found (exit 0), one they do not is not, and there is no
    # archive to write code objects from.
    unsplit = str(split_out["tree"] / LAYOUT["two"])
    fat = runner.invoke(cli, ["kpack", "resolve", unsplit, "--arch", "gfx1030"])
    assert fat.exit_code == 0, fat.output
    assert fat.output.startswith(f"{unsplit}: not split: inline code objects for ")
    assert "gfx1030" in fat.output.splitlines()[0]
    absent = runner.invoke(cli, ["kpack", "resolve", unsplit, "--arch", "gfx942"])
    assert absent.exit_code == 1 and "not split" in absent.stderr, absent.output
    assert "gfx1030" in absent.stderr  # says what it holds instead
    written = runner.invoke(
        cli, ["kpack", "resolve", unsplit, "--arch", "gfx1030", "--out", str(tmp_path / "fat")]
    )
    assert written.exit_code == 1 and "no archive to write code objects from" in written.stderr
    assert not (tmp_path / "fat").exists()
