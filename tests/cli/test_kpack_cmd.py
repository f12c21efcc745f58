"""gfxpack kpack create files nothing under an arch it is not: --arch is one processor of
the table, and every file is an AMDGPU code object for it (ELF64, EM_AMDGPU, HSA,
e_flags), as split checks a bundle entry. A real hipcc code object is accepted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.kpack import KpackReader
from tests.code_objects import code_object, hipcc_code_objects


def create(out: Path, arch: str, *files: Path | str):
    args = ["kpack", "create", str(out), "--group", "g", "--arch", arch, *map(str, files)]
    return CliRunner().invoke(cli, args)


@pytest.fixture(scope="module")
def hipcc(tmp_path_factory) -> dict[str, bytes]:
    return hipcc_code_objects(tmp_path_factory)


@pytest.mark.parametrize(
    ("arch", "message"),
    [
        ("GFX942", "'GFX942' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
        (
            "banana",
            "'banana' is not an AMDGPU processor LLVM knows (expected a processor such as "
            "gfx942, gfx90a:xnack+)",
        ),
        ("gfx9420", "'gfx9420' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
        ("gfx94", "'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
        (
            "gfx94X-dcgpu",
            "'gfx94X-dcgpu' is a family of processors, not a processor; give one of them (gfx942)",
        ),
    ],
)
def test_an_arch_that_is_no_processor_is_refused_with_a_suggestion(tmp_path, arch, message):
    good = tmp_path / "a.co"
    good.write_bytes(code_object("gfx942", b"body"))
    result = create(tmp_path / "out.kpack", arch, good)
    assert result.exit_code == 1
    assert result.stderr == f"error: --arch {message}\n"
    assert sorted(os.listdir(tmp_path)) == ["a.co"]


def planted_archive(tmp_path: Path) -> tuple[Path, bytes, int]:
    """An archive already at OUT: a refused create must leave it as it was."""
    out = tmp_path / "out.kpack"
    first = tmp_path / "first.co"
    first.write_bytes(code_object("gfx942", b"first"))
    assert create(out, "gfx942", first).exit_code == 0
    return out, out.read_bytes(), out.stat().st_ino


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"not a code object at all", "not an ELF file, expected an AMDGPU code object"),
        (code_object("gfx942", b"x", machine=62), "e_machine 62, expected 224 (AMDGPU)"),
        (code_object("gfx942", b"x", osabi=0), "OS/ABI 0, expected 64 (HSA)"),
        (code_object("gfx1100", b"x"), "e_flags say gfx1100, --arch says gfx942"),
    ],
    ids=["text", "x86-64", "not-hsa", "other-arch"],
)
def test_a_file_that_is_not_a_code_object_for_the_arch_is_refused(tmp_path, content, problem):
    out, before, inode = planted_archive(tmp_path)
    good, bad = tmp_path / "good.co", tmp_path / "bad.co"
    good.write_bytes(code_object("gfx942", b"good"))
    bad.write_bytes(content)
    result = create(out, "gfx942", good, bad)
    assert result.exit_code == 1
    assert result.stderr == f"error: {bad}: {problem}\n"
    assert out.read_bytes() == before and out.stat().st_ino == inode
    assert sorted(os.listdir(tmp_path)) == ["bad.co", "first.co", "good.co", "out.kpack"]


@pytest.mark.slow  # code objects built with hipcc
def test_real_hipcc_code_objects_are_accepted_under_their_arch_only(tmp_path, hipcc):
    files = {}
    for target, code in hipcc.items():
        files[target] = tmp_path / f"{target.replace(':', '-')}.co"
        files[target].write_bytes(code)
    out = tmp_path / "gfx90a.kpack"
    made = create(out, "gfx90a", f"{files['gfx90a']}=lib/libone.so#0")
    assert made.exit_code == 0, made.output
    with KpackReader.open(out) as reader:
        assert reader.read("lib/libone.so#0", "gfx90a") == hipcc["gfx90a"]
    # The target id hipcc compiled for, features included, is an arch of its own.
    variant = create(tmp_path / "gfx906.kpack", "gfx906:xnack-", files["gfx906:xnack-"])
    assert variant.exit_code == 0, variant.output
    # The gfx1030 object is not a gfx90a one.
    wrong = create(tmp_path / "wrong.kpack", "gfx90a", files["gfx1030"])
    assert wrong.exit_code == 1
    assert wrong.stderr == f"error: {files['gfx1030']}: e_flags say gfx1030, --arch says gfx90a\n"
    assert not (tmp_path / "wrong.kpack").exists()
