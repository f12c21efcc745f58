"""The installed root as probe reads it: links followed only inside it, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gfxpack.probe import ProbeError, probe_root
from gfxpack.probe.tree import MAX_LINKS, InstalledTree
from tests.probe.roots import probe, touch

LIBRARY = "opt/rocm/lib/rocblas/library"


def test_a_link_inside_the_root_counts_and_one_out_of_it_does_not(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    touch(root, f"{LIBRARY}/TensileLibrary.dat", "opt/rocm/data/TensileLibrary_lazy_gfx942.dat")
    touch(outside, "TensileLibrary_lazy_gfx1100.dat")
    library = root / LIBRARY
    # Absolute targets start again at the root, as the runtime inside it sees them.
    (library / "TensileLibrary_lazy_gfx942.dat").symlink_to(
        "/opt/rocm/data/TensileLibrary_lazy_gfx942.dat"
    )
    (library / "TensileLibrary_lazy_gfx1100.dat").symlink_to(
        outside / "TensileLibrary_lazy_gfx1100.dat"
    )
    assert probe(root, "gfx942").lines[0].startswith(f"found    {LIBRARY} (rocBLAS Tensile)")
    # gfx1100's file is a link to a file outside the root: not there for the runtime in it
    # (what is there is gfx942's).
    line = probe(root, "gfx1100").lines[0]
    assert line.startswith(f"shadowed {LIBRARY} (rocBLAS Tensile): gfx1100: ")
    assert "only other arches' files where gfx1100's should be (gfx942;" in line


def test_a_directory_link_out_of_the_root_is_not_walked(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    touch(outside, "lib/rocblas/library/TensileLibrary_lazy_gfx942.dat")
    (root / "opt").mkdir(parents=True)
    (root / "opt/rocm").symlink_to(outside)
    with pytest.raises(ProbeError, match="nothing probed"):
        probe_root(root, ["gfx942"], {})


def test_link_loops_and_chains_end(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    chain = tmp_path / "c0"
    touch(tmp_path, "real")
    for number in range(MAX_LINKS + 1):
        (tmp_path / f"c{number}").symlink_to(f"c{number + 1}" if number < MAX_LINKS else "real")
    tree = InstalledTree(tmp_path)
    assert tree.resolve("a") is None
    assert tree.resolve(f"c{MAX_LINKS - 1}") == "real"
    assert tree.resolve(chain.name) is None  # one link more than the kernel follows
    assert tree.resolve("../../real") == "real"  # .. stops at the root


def test_special_files_are_not_data(tmp_path: Path) -> None:
    touch(tmp_path, f"{LIBRARY}/TensileLibrary.dat")
    os.mkfifo(tmp_path / LIBRARY / "TensileLibrary_lazy_gfx942.dat")
    result = probe(tmp_path, "gfx942")
    assert result.exit_code == 1 and result.lines[0].startswith("missing ")


def test_a_root_that_is_no_directory_or_too_big_is_one_error(tmp_path: Path) -> None:
    touch(tmp_path, "file")
    with pytest.raises(ProbeError, match="expected a directory"):
        probe_root(tmp_path / "file", ["gfx942"], {})
    with pytest.raises(ProbeError, match="cannot read"):
        probe_root(tmp_path / "absent", ["gfx942"], {})
    touch(tmp_path, *(f"many/{n}" for n in range(20)))
    with pytest.raises(ProbeError, match="more than 10 entries"):
        InstalledTree(tmp_path, limit=10)
