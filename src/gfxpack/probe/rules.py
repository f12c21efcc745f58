"""Where each runtime looks for its device code and kernel data: one table, one row
per family, each with the upstream source of its rule (spec runtime-search.md).

A row names what the family's runtime looks for, where and in which order; the
check beside it (:data:`CHECKS`) asks that of an installed root. Where no source
settles a point, the row says what probe assumes, and every line resting on it
says so too ("rule assumed: ...").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from gfxpack.probe.data_files import check_aotriton, check_miopen, check_rocfft, check_tensile
from gfxpack.probe.hipdnn import check_providers
from gfxpack.probe.model import Finding, Rule
from gfxpack.probe.split_binaries import check_split_binaries
from gfxpack.probe.tree import InstalledTree

# (tree, device target id, its processor, the runtime's environment) -> findings
Check = Callable[[InstalledTree, str, str, Mapping[str, str]], Iterator[Finding]]

RULES: dict[str, Rule] = {
    rule.family: rule
    for rule in (
        Rule(
            "kpack",
            "split binaries: device code in .kpack archives",
            "<kernel_name>#<co_index> in <prefix>_@GFXARCH@.kpack",
            "ROCM_KPACK_PATH alone when set (':'-separated archives); else "
            "ROCM_KPACK_PATH_PREFIX first, then the binary's kpack_search_paths relative "
            "to its directory, @GFXARCH@ expanded for each target id compatible with the "
            "device, most specific first (gfx942:sramecc+:xnack-, gfx942:sramecc+, "
            "gfx942:xnack-, gfx942); every archive listing a form is asked, a miss falls "
            "through to the next; no generic target",
            "rocm-systems shared/kpack/runtime/src/loader.cpp (kpack_load_code_object), "
            "shared/kpack/runtime/src/isa_target_match.h (for_each_compatible_target)",
        ),
        Rule(
            "tensile",
            "rocBLAS, hipBLASLt, hipSPARSELt (Tensile / TensileLite)",
            "TensileLibrary_*_<arch>.{dat,co,hsaco}, TensileLibrary_lazy_<arch>.dat, "
            "fallback libraries, Kernels.so-*-<arch>.hsaco",
            "the library's own library/ directory (Debian's: rocblas/<version>/library/) by "
            "the device's processor name; the library/<arch>/ layout where the runtime was "
            "built with it",
            "rocm-libraries#5976 (library/<arch>/ layout), TheRock#7976 (that layout not "
            "searched), rocm-systems#7645 (gfx90a shipped empty), Debian librocblas0 5.5.1 "
            "(rocblas/2.47.0/library/)",
            "the layout the runtime searches is the one its build's TensileManifest.txt "
            "lists; without one, library/ flat",
        ),
        Rule(
            "miopen",
            "MIOpen",
            "db/<arch>[_<CUs>].kdb (CUs in hex above 64: gfx942130), libMIOpenCK*_<arch>.so",
            "the system db directory share/miopen/db/ by processor and compute-unit count; "
            "the CK libraries beside the others",
            "MIOpen handle.cpp (GetDbBasename), rocm-systems#11725 (CU-count names)",
            "any compute-unit count of the processor counts (probe does not know the device's CUs)",
        ),
        Rule(
            "rocfft",
            "rocFFT",
            "rocfft_kernel_cache_<arch>.db",
            "beside librocfft.so; ROCFFT_RTC_SYS_CACHE_PATH replaces it",
            "rocm-libraries#4892 (one cache per arch since rocFFT 1.0.37)",
        ),
        Rule(
            "aotriton",
            "AOTriton",
            "aotriton.images/amd-<arch>/...",
            "the images directory beside the library, by processor",
            "AOTriton's image loader; rocm-systems#11725 (directory aliases)",
            "a family directory (amd-gfx11xx) covers the processors its x's match",
        ),
        Rule(
            "hipdnn",
            "hipDNN providers",
            "arch_content/<provider>/<arch>/ descriptors and archives",
            "each installed provider's arch_content tree (<prefix>/lib/hipdnn/arch_content/"
            "<provider>/, as gfxpack's provider packages install it) walked whole, packs "
            "resolved by GUID, a pack's kernels for the device's processor",
            "seed 001 (the descriptor loader), spec descriptors.md",
        ),
    )
}

CHECKS: dict[str, Check] = {
    "kpack": check_split_binaries,
    "tensile": check_tensile,
    "miopen": check_miopen,
    "rocfft": check_rocfft,
    "aotriton": check_aotriton,
    "hipdnn": check_providers,
}
