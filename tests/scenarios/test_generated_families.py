"""The kernel-data families of examples/generate_artifacts.py, split and probed.

A single-arch (legacy) tree holds every target's kernel data side by side, as a fat
build installs it; ``gfxpack split`` must route each family's per-arch files to
their arch (an xnack variant's to its processor) and leave the shared ones, the
Tensile manifests, generic. One test per family (spec runtime-search.md's table):
rocBLAS's flat Tensile layout, hipBLASLt's ``library/<arch>/`` one, MIOpen's
databases with compute-unit counts, rocFFT's per-arch caches, AOTriton's images.
Then ``gfxpack probe`` reads the split output installed for one arch the way the
runtimes would: found for it, not for another; and so for TheRock's config, built
from the tree the generator makes for it (skipped without ../shared).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.file_arch import file_arch
from gfxpack.probe.data_files import tensile_layout
from gfxpack.probe.tree import InstalledTree
from tests.conftest import EXAMPLE_CONFIG, THEROCK_TARGETS, BuiltRelease, load_generator, run

FAMILY = "gfx94X-dcgpu"
TARGETS = ["gfx942", "gfx950"]
BLAS = "math-libs/BLAS"

# family -> (split directory, prefix, the files for each target (arch -> paths), shared)
FAMILIES = {
    "tensile-flat": (
        "blas_lib",
        f"{BLAS}/rocBLAS/stage",
        {
            "gfx942": [
                "lib/rocblas/library/TensileLibrary_lazy_gfx942.dat",
                "lib/rocblas/library/Kernels.so-000-gfx942.hsaco",
                "lib/rocblas/library/Kernels.so-000-gfx942-xnack+.hsaco",  # the xnack variant
            ],
            "gfx950": ["lib/rocblas/library/TensileLibrary_lazy_gfx950.dat"],
        },
        ["lib/rocblas/library/TensileManifest.txt"],
    ),
    "tensile-arch-directories": (
        "blas_lib",
        f"{BLAS}/hipBLASLt/stage",
        {
            "gfx942": [
                "lib/hipblaslt/library/gfx942/TensileLibrary_lazy_gfx942.dat",
                "lib/hipblaslt/library/gfx942/extop_gfx942.co",
            ],
            "gfx950": ["lib/hipblaslt/library/gfx950/TensileLibrary_lazy_gfx950.dat"],
        },
        ["lib/hipblaslt/library/TensileManifest.txt"],
    ),
    "miopen-cu-counts": (
        "miopen_lib",
        "ml-libs/MIOpen/stage",
        # 304 and 228 CUs, in hex; amdrocm-dnn has no gfx950 build (the generator's NO_BUILD)
        {"gfx942": ["share/miopen/db/gfx942130.kdb", "share/miopen/db/gfx942e4.HIP.fdb.txt"]},
        [],
    ),
    "rocfft-caches": (
        "fft_lib",
        "math-libs/fft/rocFFT/stage",
        {
            "gfx942": ["lib/rocfft_kernel_cache_gfx942.db"],
            "gfx950": ["lib/rocfft_kernel_cache_gfx950.db"],
        },
        [],
    ),
    "aotriton-images": (
        "miopen_lib",
        "ml-libs/MIOpen/stage",
        {"gfx942": ["lib/aotriton.images/amd-gfx942/flash/attn_fwd/FONLY__^bf16@16___MI300X.aks2"]},
        [],
    ),
}


@pytest.fixture(scope="module")
def split_legacy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("families")
    artifacts = base / "artifacts"
    load_generator().generate(artifacts, EXAMPLE_CONFIG, TARGETS, 0.01, 2026, FAMILY)
    result = CliRunner().invoke(cli, ["split", str(artifacts), "--out", str(base / "split")])
    assert result.exit_code == 0, result.output
    return {"artifacts": artifacts, "split": base / "split"}


@pytest.mark.parametrize("family", FAMILIES)
def test_split_routes_each_familys_files_to_their_arch(
    split_legacy: dict[str, Path], family: str
) -> None:
    group, prefix, per_arch, shared = FAMILIES[family]
    fat = split_legacy["artifacts"] / f"{group}_{FAMILY}" / prefix
    for arch, paths in per_arch.items():
        for path in paths:
            assert (fat / path).is_file(), f"the generator wrote no {path}"
            routed = split_legacy["split"] / f"{group}_{arch}" / prefix / path
            assert routed.is_file(), f"{path}: not in {group}_{arch}"
            assert routed.read_bytes() == (fat / path).read_bytes()
            others = [a for a in TARGETS if a != arch] + ["generic"]
            for other in others:
                assert not (split_legacy["split"] / f"{group}_{other}" / prefix / path).exists()
    for path in shared:
        text = (split_legacy["split"] / f"{group}_generic" / prefix / path).read_text()
        # the manifest lists every target's files, where the layout puts them
        listed = {file_arch(line) for line in text.splitlines()}
        assert listed == set(per_arch), text


def test_the_tensile_manifests_say_each_layout(split_legacy: dict[str, Path]) -> None:
    """probe reads the layout from the manifest: hipBLASLt's lists library/<arch>/."""
    stage = split_legacy["split"] / "blas_lib_generic" / BLAS
    layouts = {
        name: tensile_layout(InstalledTree(stage / subdir / "stage"), f"lib/{name}/library")[0]
        for subdir, name in (("rocBLAS", "rocblas"), ("hipBLASLt", "hipblaslt"))
    }
    assert layouts == {"rocblas": "flat", "hipblaslt": "arch"}


def test_the_split_installed_for_one_arch_probes_found_and_not_for_another(
    split_legacy: dict[str, Path], tmp_path: Path
) -> None:
    """Every stage of the generic and gfx942 directories copied into one root, as the
    host and gfx942 packages would install them: each family finds gfx942's data; for
    gfx950, nothing is found (its files are not installed)."""
    root = tmp_path / "root"
    for directory in sorted(split_legacy["split"].iterdir()):
        if directory.is_dir() and directory.name.endswith(("_generic", "_gfx942")):
            for stage in directory.glob("**/stage"):
                shutil.copytree(stage, root, symlinks=True, dirs_exist_ok=True)
    mine = CliRunner().invoke(cli, ["probe", "--root", str(root), "--device", "gfx942"])
    assert mine.exit_code == 0, mine.output
    families = {line.split(" (")[1].split(")")[0] for line in mine.stdout.splitlines()[:-1]}
    assert {"rocBLAS Tensile", "hipBLASLt Tensile", "MIOpen", "rocFFT", "AOTriton"} <= families
    other = CliRunner().invoke(cli, ["probe", "--root", str(root), "--device", "gfx950"])
    assert other.exit_code == 1
    assert not any(line.startswith("found") for line in other.stdout.splitlines())


@pytest.mark.slow  # TheRock's whole release built (the session's, shared with other tests)
def test_therocks_release_unpacked_for_one_arch_probes_clean(
    therock_release: BuiltRelease, tmp_path: Path
) -> None:
    """Every .deb of TheRock's release but the other arches' ones, unpacked into one
    root (dpkg-deb -x): each family TheRock's config stages finds gfx942's data."""
    root = tmp_path / "root"
    others = [a for a in THEROCK_TARGETS if a != "gfx942"]
    for deb in sorted(therock_release.files("deb").values()):
        if not any(deb.name.split("_")[0].endswith(f"-{arch}") for arch in others):
            run("dpkg-deb", "-x", str(deb), str(root))
    mine = CliRunner().invoke(cli, ["probe", "--root", str(root), "--device", "gfx942"])
    assert mine.exit_code == 0, mine.output
    families = {line.split(" (")[1].split(")")[0] for line in mine.stdout.splitlines()[:-1]}
    assert {"rocBLAS Tensile", "hipBLASLt Tensile", "MIOpen", "rocFFT", "AOTriton"} <= families
    other = CliRunner().invoke(cli, ["probe", "--root", str(root), "--device", "gfx90a"])
    assert other.exit_code == 1
