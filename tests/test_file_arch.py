"""file_arch on real upstream file names, and the commands that read it agreeing.

Split once routed ``db/gfx942130.db.txt``, ``oclc_isa_version_90a.bc`` and
``x_gfx9-4-generic.co`` by one reading of a name while try-install's cross-arch
check used another, so files split moved to an arch were invisible to the check.
The table below is of names the ROCm libraries ship (rocBLAS and hipBLASLt Tensile
libraries, MIOpen kernel databases with compute-unit counts, rocFFT caches, AOTriton
images, device-libs bitcode, generic targets, xnack variants, kpack archives,
hipDNN arch_content); every command gets its answer from file_arch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gfxpack import trial
from gfxpack.amdgpu import GENERIC_OF
from gfxpack.fatbin.split import split_tree
from gfxpack.file_arch import file_arch

REAL_NAMES = [
    # rocBLAS / hipBLASLt (Tensile, TensileLite): per-arch libraries, lazy loading,
    # fallback libraries, code object files with features spelled after '-'.
    ("lib/rocblas/library/TensileLibrary_Type_HH_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx942.co",
     "gfx942"),
    ("lib/rocblas/library/TensileLibrary_Type_4xi8I_HPA_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx1201.dat",
     "gfx1201"),
    ("lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat", "gfx90a"),
    ("lib/rocblas/library/TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback_gfx1100.hsaco",
     "gfx1100"),
    ("lib/rocblas/library/Kernels.so-000-gfx90a-xnack+.hsaco", "gfx90a"),
    ("lib/rocblas/library/Kernels.so-000-gfx942.hsaco", "gfx942"),
    ("lib/rocblas/library/TensileLibrary.dat", None),
    ("lib/rocblas/library/TensileManifest.txt", None),
    ("lib/hipblaslt/library/extop_gfx950.co", "gfx950"),
    ("lib/hipblaslt/library/hipblasltExtOpLibrary.dat", None),
    ("lib/hipblaslt/library/gfx1151/TensileLibrary_lazy_gfx1151.dat", "gfx1151"),
    # MIOpen: the CU count glued to the processor, in hex above 64 CUs.
    ("share/miopen/db/gfx942130.kdb", "gfx942"),
    ("share/miopen/db/gfx942130.db.txt", "gfx942"),
    ("share/miopen/db/gfx90a6e.kdb", "gfx90a"),
    ("share/miopen/db/gfx90878.HIP.fdb.txt", "gfx908"),
    ("share/miopen/db/gfx1030_36.kdb", "gfx1030"),
    ("share/miopen/db/gfx110060.kdb", "gfx1100"),
    ("lib/libMIOpenCKGroupedConv_gfx942.so", "gfx942"),
    # rocFFT: one kernel cache per arch (rocFFT 1.0.37).
    ("lib/rocfft/rocfft_kernel_cache_gfx1201.db", "gfx1201"),
    ("lib/rocfft/rocfft_kernel_cache.db", None),
    # AOTriton: one images directory per arch; a family directory names none.
    ("lib/aotriton.images/amd-gfx942/flash/attn_fwd/FONLY__^bf16@16___MI300X.aks2", "gfx942"),
    ("lib/aotriton.images/amd-gfx11xx/flash/attn_fwd/FONLY__^fp16@16___RX7900.aks2", None),
    # device-libs bitcode: the arch without "gfx"; other oclc files name none.
    ("amdgcn/bitcode/oclc_isa_version_90a.bc", "gfx90a"),
    ("amdgcn/bitcode/oclc_isa_version_1151.bc", "gfx1151"),
    ("amdgcn/bitcode/oclc_abi_version_500.bc", None),
    ("amdgcn/bitcode/oclc_wavefrontsize64_on.bc", None),
    # generic targets are whole words.
    ("lib/x_gfx9-4-generic.co", "gfx9-4-generic"),
    ("lib/rocblas/library/Kernels.so-000-gfx11-generic.hsaco", "gfx11-generic"),
    ("lib/y_gfx10-3-generic.hsaco", "gfx10-3-generic"),
    # kpack archives (TheRock's names, a target id in one), hipDNN arch_content.
    (".kpack/blas_lib_gfx942.kpack", "gfx942"),
    (".kpack/blas_lib_gfx942:sramecc+:xnack-.kpack", "gfx942"),
    # a variant target of the table is a whole word too (gfx1250's strict-mode target).
    (".kpack/blas_lib_gfx1250-strict.kpack", "gfx1250-strict"),
    ("lib/hipdnn_plugins/engines/arch_content/miopen_provider/gfx1100/kernels.kpack", "gfx1100"),
    # an arch directory decides for what it holds; words merely containing gfx do not.
    ("library/gfx942/TensileLibrary_gfx90a.co", "gfx942"),
    ("share/doc/gfxpack/README", None),
    ("lib/libgfx942x.so", None),
    ("include/hip/amd_detail/amd_hip_gfx.h", None),
]  # fmt: skip


@pytest.mark.parametrize(("path", "arch"), REAL_NAMES, ids=[p for p, _ in REAL_NAMES])
def test_real_names(path: str, arch: str | None) -> None:
    assert file_arch(path) == arch
    assert file_arch("/opt/rocm/core-8.2/" + path) == arch  # installed, absolute


@pytest.mark.parametrize(("path", "arch"), [r for r in REAL_NAMES if r[1]], ids=str)
def test_try_installs_cross_arch_check_sees_what_split_routes(path: str, arch: str) -> None:
    # Installed for another processor (gfx90a: of no generic family), the file is
    # foreign; for its own arch, or a processor its generic target runs on, it is not.
    other = "gfx90a" if arch != "gfx90a" else "gfx1201"
    assert trial.other_archs("/opt/rocm/" + path, [other]) == [arch]
    own = next((p for p, generic in GENERIC_OF.items() if generic == arch), arch)
    assert trial.other_archs("/opt/rocm/" + path, [own]) == []


def test_split_routes_data_files_by_the_same_answer(tmp_path: Path) -> None:
    """A plain tree of data files: each named file lands in its arch's artifact, the
    shared index and the other files in the generic one."""
    tree = tmp_path / "tree"
    for path, _ in REAL_NAMES:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(b"data")
    split_tree(tree, tmp_path / "out", name="demo_lib")
    for path, arch in REAL_NAMES:
        where = tmp_path / "out" / f"demo_lib_{arch or 'generic'}" / "stage" / path
        assert where.is_file(), f"{path}: expected in demo_lib_{arch or 'generic'}"
