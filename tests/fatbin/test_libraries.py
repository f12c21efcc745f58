"""kpack resolve on what split kept whole (inline code objects) and on a whole tree:
one line per library, --json, exit 1 on any miss or when nothing was checked. On
libraries hipcc built (gfx90a, gfx1030, gfx906:xnack-; and gfx90a:xnack±)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from gfxpack.fatbin.libraries import check_tree, inline_targets
from gfxpack.fatbin.reader import HIPF
from gfxpack.fatbin.split import split_tree
from tests.fatbin.conftest import HipBuild
from tests.fatbin.fat_elf import fat_elf

pytestmark = pytest.mark.slow

INLINE = "gfx906:xnack-, gfx90a, gfx1030"  # libone.so's targets, in processor order


def resolve(*args: str) -> Result:
    return CliRunner().invoke(cli, ["kpack", "resolve", *args])


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCM_KPACK_PATH", "ROCM_KPACK_PATH_PREFIX", "ROCM_KPACK_DISABLE"):
        monkeypatch.delenv(name, raising=False)


def test_inline_targets_are_the_bundles_code_objects(hip_build: HipBuild) -> None:
    assert inline_targets(hip_build.one_file) == INLINE.split(", ")


def test_an_unsplit_library_is_found_when_an_inline_object_fits(hip_build: HipBuild) -> None:
    library = str(hip_build.one_file)
    result = resolve(library, "--arch", "gfx90a:sramecc+")  # a detected MI210's target id
    assert result.exit_code == 0, result.output
    assert result.output == f"{library}: not split: inline code objects for {INLINE}\n"
    result = resolve(library, "--arch", "gfx90a", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "binary": library, "arch": "gfx90a", "split": False,
        "inline": INLINE.split(", "), "code_objects": [],
    }  # fmt: skip


def test_an_unsplit_library_without_the_arch_is_a_miss(hip_build: HipBuild) -> None:
    library = str(hip_build.one_file)
    result = resolve(library, "--arch", "gfx942")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {library}: not split, and it holds no code object for gfx942 (tried gfx942, "
        f"gfx9-4-generic); inline code objects for {INLINE}"
    ]
    # gfx906 code built for xnack- only: a device whose target id says xnack+ misses it.
    result = resolve(library, "--arch", "gfx906:xnack+", "--json")
    assert result.exit_code == 1
    error = json.loads(result.output)
    assert (error["reason"], error["split"], error["inline"]) == (
        "arch-not-found", False, INLINE.split(", ")
    )  # fmt: skip


@pytest.fixture(scope="module")
def tree(hip_build: HipBuild, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An installed tree: libdemo.so.1 (gfx90a:xnack±) split and merged back with its
    gfx90a archive, libone.so kept fat, a script, a link inside and one out of it."""
    work = tmp_path_factory.mktemp("tree")
    (work / "in/usr/lib").mkdir(parents=True)
    shutil.copy2(hip_build.variants, work / "in/usr/lib/libdemo.so.1")
    split_tree(work / "in", work / "split", name="demo_lib")
    installed = work / "installed"
    for artifact in ("demo_lib_generic", "demo_lib_gfx90a"):
        shutil.copytree(work / "split" / artifact / "stage", installed, dirs_exist_ok=True)
    shutil.copy2(hip_build.one_file, installed / "usr/lib/libone.so")
    (installed / "usr/bin").mkdir()
    (installed / "usr/bin/run.sh").write_text("#!/bin/sh\n")
    os.symlink("libdemo.so.1", installed / "usr/lib/libdemo.so")  # the library itself
    os.symlink(hip_build.two_files, installed / "usr/lib/libtwo.so")  # out of the tree
    return installed


def test_a_tree_is_one_line_per_library(tree: Path) -> None:
    result = resolve(str(tree), "--arch", "gfx90a:xnack-")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "ok   usr/lib/libdemo.so.1: gfx90a:xnack-: 1 code object from .kpack/demo_lib_gfx90a.kpack",
        f"ok   usr/lib/libone.so: not split: inline code objects for {INLINE}",
    ]


def test_a_miss_in_a_tree_is_its_line_and_exit_1(tree: Path) -> None:
    result = resolve(str(tree), "--arch", "gfx1030", "--arch", "gfx90a:xnack+")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        "miss usr/lib/libdemo.so.1: gfx1030: wrapper 0: no archive found; tried "
        ".kpack/demo_lib_gfx1030.kpack"
    )
    assert "archives for other target ids: .kpack/demo_lib_gfx90a.kpack" in lines[0]
    assert lines[1:] == [
        "ok   usr/lib/libdemo.so.1: gfx90a:xnack+: 1 code object from .kpack/demo_lib_gfx90a.kpack",
        f"ok   usr/lib/libone.so: not split: inline code objects for {INLINE}",
        f"ok   usr/lib/libone.so: not split: inline code objects for {INLINE}",
    ]
    assert result.stderr == "error: 1 of 4 libraries miss device code for gfx1030, gfx90a:xnack+\n"


def test_a_tree_as_json(tree: Path) -> None:
    result = resolve(str(tree), "--arch", "gfx942", "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["arches"] == ["gfx942"]
    assert (document["ok"], document["checked"], document["missed"]) == (False, 2, 2)
    assert document["error"] == "2 of 2 libraries miss device code for gfx942"
    assert result.stderr == ""  # with --json the document says it
    rows = {row["path"]: row for row in document["libraries"]}
    assert sorted(rows) == ["usr/lib/libdemo.so.1", "usr/lib/libone.so"]
    assert rows["usr/lib/libdemo.so.1"]["reason"] == "archive-not-found"
    assert rows["usr/lib/libone.so"] | {"problem": None} == {
        "path": "usr/lib/libone.so", "arch": "gfx942", "split": False, "found": False,
        "code_objects": 0, "archives": [], "inline": INLINE.split(", "), "problem": None,
        "reason": "arch-not-found",
    }  # fmt: skip
    found = check_tree(tree, ["gfx90a:xnack-"])
    assert [(r.path, r.found, r.code_objects) for r in found] == [
        ("usr/lib/libdemo.so.1", True, 1),
        ("usr/lib/libone.so", True, 0),
    ]


def test_a_tree_with_no_device_code_checked_nothing(tree: Path) -> None:
    result = resolve(str(tree / "usr/bin"), "--arch", "gfx90a")
    assert result.exit_code == 1
    message = f"{tree / 'usr/bin'}: no library with HIP device code; nothing checked"
    assert result.output == f"error: {message}\n"
    result = resolve(str(tree / "usr/bin"), "--arch", "gfx90a", "--json")
    assert result.exit_code == 1
    assert json.loads(result.output) | {"path": ""} == {
        "path": "", "arches": ["gfx90a"], "libraries": [], "ok": False, "checked": 0,
        "missed": 0, "error": message,
    }  # fmt: skip
    result = resolve(str(tree / "usr/bin"), "--arch", "gfx90a:xnack", "--json")
    assert result.exit_code == 1
    assert json.loads(result.output)["error"].startswith("target id 'gfx90a:xnack': expected")


def test_a_broken_library_is_one_line_and_the_walk_goes_on(
    hip_build: HipBuild, tmp_path: Path
) -> None:
    """A bundle of zeros: that library's miss says why; the next is still checked."""
    shutil.copy2(hip_build.one_file, tmp_path / "b.so")
    (tmp_path / "a.so").write_bytes(fat_elf(b"\0" * 64, [(HIPF, 0, 0)])[0])
    result = resolve(str(tmp_path), "--arch", "gfx1030")
    assert result.exit_code == 1
    [broken, fine] = result.stdout.splitlines()
    assert broken.startswith("miss a.so: gfx1030: ") and "bad magic" in broken
    assert fine == f"ok   b.so: not split: inline code objects for {INLINE}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give one of PATH and --venv"),
        (["x", "--venv", "y"], "give one of PATH and --venv"),
        (["x", "--dist", "demo", "--arch", "gfx90a"], "--dist names a distribution"),
    ],
)
def test_usage(args: list[str], message: str) -> None:
    result = resolve(*args)
    assert result.exit_code == 2 and message in result.output


def test_without_arch_the_machines_gpus_are_checked(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight MI210s detected from a copied KFD tree: gfx90a:sramecc+, xnack left open by
    detect, is checked in the xnack mode of this process (HSA_XNACK): libdemo.so.1,
    built for xnack+ and xnack- only, finds the code of that mode."""
    kfd = Path(__file__).parents[1] / "fixtures" / "kfd"
    for setting, mode in (("", "-"), ("1", "+")):
        monkeypatch.setenv("HSA_XNACK", setting)
        result = resolve(str(tree), "--sysfs", str(kfd / "mi210"))
        assert result.exit_code == 0, result.output
        assert result.output.splitlines()[0] == (
            f"ok   usr/lib/libdemo.so.1: gfx90a:sramecc+:xnack{mode}: 1 code object from "
            ".kpack/demo_lib_gfx90a.kpack"
        )
    result = resolve(str(tree), "--sysfs", str(kfd / "cpu-only"))
    assert result.exit_code == 1
    assert result.output.startswith("error: no --arch given, and no AMD GPU found")
