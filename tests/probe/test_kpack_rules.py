"""probe on split binaries: the kpack runtime's rules, each as its own case.

rocm-systems shared/kpack/runtime/src/loader.cpp: ROCM_KPACK_PATH is the only
source when set; ROCM_KPACK_PATH_PREFIX comes before the binary's own paths;
@GFXARCH@ is expanded over the device's feature subsets, most specific first
(isa_target_match.h); a miss in one archive falls through to the next; a generic
target is never tried. Each case is a root with one split library
(opt/rocm/lib/libx.so, searching ../.kpack/x_lib_@GFXARCH@.kpack) and archives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.probe.roots import KERNEL, archive, probe, split_binary

DEVICE = "gfx942:sramecc+:xnack-"
KEY = f"{KERNEL}#0"
LIBRARY = "opt/rocm/lib/libx.so (split binary)"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCM_KPACK_PATH", "ROCM_KPACK_PATH_PREFIX", "ROCM_KPACK_DISABLE", "HSA_XNACK"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    split_binary(tmp_path / "opt/rocm/lib/libx.so")
    return tmp_path


def test_found_in_the_archive_the_binary_names(root: Path) -> None:
    archive(root / "opt/rocm/.kpack/x_lib_gfx942.kpack", {"gfx942": [KEY]})
    result = probe(root, DEVICE)
    assert result.exit_code == 0
    assert result.lines[0] == f"found    {LIBRARY}: {DEVICE}: opt/rocm/.kpack/x_lib_gfx942.kpack"


def test_gfxarch_expands_the_feature_subsets_most_specific_first(root: Path) -> None:
    # Both archives hold the code object; the runtime tries gfx942:sramecc+ before
    # gfx942:xnack- (the last feature dropped first), and the full id before either.
    kpack = root / "opt/rocm/.kpack"
    archive(kpack / "x_lib_gfx942:xnack-.kpack", {"gfx942:xnack-": [KEY]})
    archive(kpack / "x_lib_gfx942:sramecc+.kpack", {"gfx942:sramecc+": [KEY]})
    assert probe(root, DEVICE).lines[0].endswith(": opt/rocm/.kpack/x_lib_gfx942:sramecc+.kpack")
    archive(kpack / f"x_lib_{DEVICE}.kpack", {DEVICE: [KEY]})
    assert probe(root, DEVICE).lines[0].endswith(f": opt/rocm/.kpack/x_lib_{DEVICE}.kpack")


def test_a_miss_falls_through_to_the_next_archive(root: Path) -> None:
    # An xnack- overlay listing the arch but not this kernel, then the bare archive.
    kpack = root / "opt/rocm/.kpack"
    archive(kpack / "x_lib_gfx942:xnack-.kpack", {"gfx942:xnack-": [f"{KERNEL}#7"]})
    archive(kpack / "x_lib_gfx942.kpack", {"gfx942": [KEY]})
    result = probe(root, DEVICE)
    assert result.exit_code == 0
    assert result.lines[0].endswith(": opt/rocm/.kpack/x_lib_gfx942.kpack")


def test_no_generic_target_fallback(root: Path) -> None:
    archive(root / "opt/rocm/.kpack/x_lib_gfx9-4-generic.kpack", {"gfx9-4-generic": [KEY]})
    result = probe(root, DEVICE)
    assert result.exit_code == 1
    assert result.lines[0].startswith(f"shadowed {LIBRARY}: {DEVICE}: wrapper 0: no archive found")
    assert "x_lib_gfx9-4-generic.kpack (gfx9-4-generic)" in result.lines[0]
    assert "gfx9-4-generic.kpack" not in result.lines[0].split("tried ")[1].split(";")[0]


def test_rocm_kpack_path_is_the_only_source(root: Path) -> None:
    archive(root / "opt/rocm/.kpack/x_lib_gfx942.kpack", {"gfx942": [KEY]})
    elsewhere = root / "elsewhere/any-name.kpack"
    archive(elsewhere, {"gfx942": [KEY]})
    found = probe(root, DEVICE, env={"ROCM_KPACK_PATH": str(elsewhere)})
    assert found.exit_code == 0 and found.lines[0].endswith(": elsewhere/any-name.kpack")
    # Naming an archive that is not there: the binary's own is not looked at.
    missed = probe(root, DEVICE, env={"ROCM_KPACK_PATH": str(root / "nowhere.kpack")})
    assert missed.exit_code == 1
    assert missed.lines[0] == (
        f"shadowed {LIBRARY}: {DEVICE}: opt/rocm/.kpack/x_lib_gfx942.kpack: ROCM_KPACK_PATH "
        "is set: the only archives searched are those it names (wrapper 0: no archive "
        "found; tried nowhere.kpack)"
    )


def test_rocm_kpack_path_prefix_is_searched_first(root: Path) -> None:
    archive(root / "opt/rocm/.kpack/x_lib_gfx942.kpack", {"gfx942": [KEY]})
    first = root / "first/x.kpack"
    archive(first, {"gfx942": [KEY]})
    result = probe(root, DEVICE, env={"ROCM_KPACK_PATH_PREFIX": str(first)})
    assert result.exit_code == 0 and result.lines[0].endswith(": first/x.kpack")
    # A prefix archive without the code object falls through to the binary's own.
    archive(first, {"gfx942": [f"{KERNEL}#3"]})
    result = probe(root, DEVICE, env={"ROCM_KPACK_PATH_PREFIX": str(first)})
    assert result.exit_code == 0 and result.lines[0].endswith(
        ": opt/rocm/.kpack/x_lib_gfx942.kpack"
    )


def test_missing_when_no_archive_is_anywhere(root: Path) -> None:
    result = probe(root, DEVICE)
    assert result.exit_code == 1
    assert result.lines[0].startswith(f"missing  {LIBRARY}: {DEVICE}: wrapper 0: no archive found")
    assert result.stderr.startswith("error: 1 of 1 check(s) of ")


def test_shadowed_by_another_archs_archive(root: Path) -> None:
    archive(root / "opt/rocm/.kpack/x_lib_gfx90a.kpack", {"gfx90a": [KEY]})
    result = probe(root, DEVICE)
    assert result.exit_code == 1
    assert result.lines[0].startswith(f"shadowed {LIBRARY}: {DEVICE}:")
    assert "archives for other target ids:" in result.lines[0] and "(gfx90a)" in result.lines[0]


def test_shadowed_by_an_archive_where_the_search_paths_do_not_lead(root: Path) -> None:
    archive(root / "opt/rocm/lib/.kpack/x_lib_gfx942.kpack", {"gfx942": [KEY]})
    result = probe(root, DEVICE)
    assert result.exit_code == 1
    assert result.lines[0].startswith(
        f"shadowed {LIBRARY}: {DEVICE}: opt/rocm/lib/.kpack/x_lib_gfx942.kpack: the binary's "
        "search paths do not lead there"
    )


def test_an_archive_holding_other_target_ids_only_shadows(root: Path) -> None:
    archive(root / "opt/rocm/.kpack/x_lib_gfx942.kpack", {"gfx942:xnack+": [KEY]})
    result = probe(root, DEVICE)
    assert result.exit_code == 1
    assert result.lines[0].startswith(f"shadowed {LIBRARY}: {DEVICE}:")
    assert "holds it for gfx942:xnack+" in result.lines[0]


def test_an_archive_outside_the_root_does_not_count(tmp_path: Path) -> None:
    # A search path climbing out of the root reaches this machine's file, which the
    # runtime inside the root would not see.
    root, outside = tmp_path / "root", tmp_path / "outside"
    climb = "../" * (len(root.parts) + 3)
    split_binary(root / "opt/rocm/lib/libx.so", search=(f"{climb}{outside}/x_lib_@GFXARCH@.kpack",))
    archive(outside / "x_lib_gfx942.kpack", {"gfx942": [KEY]})
    result = probe(root, DEVICE)
    assert result.exit_code == 1
    assert result.lines[0] == (
        f"missing  {LIBRARY}: {DEVICE}: the archives it resolves to lie outside the root "
        f"({outside}/x_lib_gfx942.kpack)"
    )


def test_control_characters_in_names_reach_the_terminal_escaped(root: Path) -> None:
    archive(root / "opt/rocm/.kpack/x_lib_gfx90a.kpack", {"gfx90a": [KEY]})
    split_binary(root / "opt/rocm/lib/lib\x1b[31mred.so")
    result = probe(root, DEVICE)
    assert result.exit_code == 1
    assert not any("\x1b" in line for line in result.lines)
    assert result.lines[0].startswith("shadowed opt/rocm/lib/lib\\x1b[31mred.so (split binary): ")
