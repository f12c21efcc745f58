"""The kernel-data families: files a library reads by the device's processor name.

Each check finds its libraries in the installed tree, then asks, for one device,
what the library's runtime would read: the search directory the rule names, a file
there for the device's processor (:func:`gfxpack.file_arch.file_arch`, the reading
split routes by). What is there instead decides between ``missing`` (nothing for
this arch) and ``shadowed``: another arch's file in the searched place, or this
arch's file somewhere under the library the runtime does not search.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping

from gfxpack.file_arch import file_arch
from gfxpack.probe.model import Finding, Status
from gfxpack.probe.tree import FILE, InstalledTree
from gfxpack.regular_files import open_regular, printable

MAX_MANIFEST = 16 << 20  # TensileManifest.txt: one line per generated file
SHOWN = 3  # other arches' files a shadowed line names


def _shown(path: str) -> str:
    return printable(path)


def _first(names: Iterable[str]) -> str:
    return sorted(names)[0]


def _others(paths: list[str]) -> str:
    archs = sorted({a for p in paths if (a := file_arch(p))})
    more = f" and {len(archs) - SHOWN} more" if len(archs) > SHOWN else ""
    return ", ".join(archs[:SHOWN]) + more


def _judge(
    library: str,
    family: str,
    device: str,
    processor: str,
    searched: str,
    candidates: list[str],
    elsewhere: list[str],
    looks_for: str,
    assumed: str = "",
) -> Finding:
    """The finding for one library: ``candidates`` are the data files in the searched
    place (relative paths), ``elsewhere`` the library's data files outside it."""
    mine = [p for p in candidates if file_arch(posixpath.basename(p)) == processor]
    if mine:
        return Finding(library, family, device, Status.FOUND, _shown(_first(mine)), "", assumed)
    where = f"{looks_for} in {_shown(searched)}/"
    astray = [p for p in elsewhere if file_arch(p) == processor]
    if astray:
        return Finding(
            library, family, device, Status.SHADOWED, _shown(_first(astray)),
            f"the runtime does not search there (it looks for {where})", assumed,
        )  # fmt: skip
    foreign = [p for p in candidates if file_arch(posixpath.basename(p)) not in (None, processor)]
    if foreign:
        return Finding(
            library, family, device, Status.SHADOWED, _shown(_first(foreign)),
            f"only other arches' files where {processor}'s should be ({_others(foreign)}; "
            f"it looks for {where})", assumed,
        )  # fmt: skip
    return Finding(library, family, device, Status.MISSING, "", f"looks for {where}", assumed)


def _files_under(tree: InstalledTree, top: str) -> list[str]:
    """Every regular file below ``top`` (no link followed), relative to the root."""
    return tree.files_under(top)


def _in(tree: InstalledTree, directory: str) -> list[str]:
    """The regular files directly in ``directory`` (links to files of the root count)."""
    return [
        f"{directory}/{name}"
        for name in tree.listing(directory)
        if tree.is_file(f"{directory}/{name}")
    ]


# --- Tensile / TensileLite (rocBLAS, hipBLASLt, hipSPARSELt) -----------------------------

TENSILE_OWNERS = {"rocblas": "rocBLAS", "hipblaslt": "hipBLASLt", "hipsparselt": "hipSPARSELt"}
_TENSILE_FILE = re.compile(r"^(TensileLibrary|TensileLiteLibrary|Kernels\.so-|extop_)")
_ARCH_LINE = re.compile(r"/library/(gfx[0-9a-z-]+)/")
# Debian installs rocBLAS's library/ under the library's version, so that two sonames
# can be installed side by side (librocblas0 5.5.1: rocblas/2.47.0/library/).
_VERSION_DIRECTORY = re.compile(r"^[0-9]+(\.[0-9]+)+$")


def tensile_owner(library: str) -> str | None:
    """The key of :data:`TENSILE_OWNERS` whose ``library/`` directory ``library`` is:
    ``.../rocblas/library``, or Debian's versioned ``.../rocblas/2.47.0/library``."""
    owner, name = posixpath.split(library)
    if name != "library":
        return None
    if _VERSION_DIRECTORY.match(posixpath.basename(owner)):
        owner = posixpath.dirname(owner)
    return posixpath.basename(owner) if posixpath.basename(owner) in TENSILE_OWNERS else None


def tensile_libraries(tree: InstalledTree) -> Iterator[tuple[str, str]]:
    """(``.../<rocblas|hipblaslt|hipsparselt>[/<version>]/library``, whose it is)."""
    for path in tree.paths("dir"):
        owner = tensile_owner(path)
        if owner is not None:
            yield path, TENSILE_OWNERS[owner]


def tensile_layout(tree: InstalledTree, library: str) -> tuple[str, str]:
    """("flat" or "arch", what was assumed): the layout the library's runtime searches.
    The build that made the runtime wrote TensileManifest.txt, listing the files it
    generated where it put them: ``library/<arch>/`` names the newer layout."""
    manifest = f"{library}/TensileManifest.txt"
    if not tree.is_file(manifest):
        return "flat", (
            "no TensileManifest.txt: library/ searched flat (library/<arch>/ only by a "
            "runtime built with rocm-libraries#5976)"
        )
    real = tree.resolve(manifest) or manifest
    try:
        fd = open_regular(tree.absolute(real), follow_symlinks=False)
    except OSError:
        return "flat", "TensileManifest.txt unreadable: library/ searched flat"
    with open(fd, "rb") as file:
        text = file.read(MAX_MANIFEST).decode("utf-8", "replace")
    layout = "arch" if _ARCH_LINE.search(text) else "flat"
    return layout, ""


def check_tensile(
    tree: InstalledTree, device: str, processor: str, environ: Mapping[str, str]
) -> Iterator[Finding]:
    del environ  # ROCBLAS_TENSILE_LIBPATH and kin are not read: the installed layout is
    for library, owner in tensile_libraries(tree):
        layout, assumed = tensile_layout(tree, library)
        searched = f"{library}/{processor}" if layout == "arch" else library
        data = [p for p in _in(tree, searched) if _TENSILE_FILE.match(posixpath.basename(p))]
        elsewhere = [
            p
            for p in _files_under(tree, library)
            if posixpath.dirname(p) != searched and _TENSILE_FILE.match(posixpath.basename(p))
        ]
        looks_for = f"TensileLibrary_*_{processor}.{{dat,co,hsaco}} (or _lazy_{processor}.dat)"
        yield _judge(
            f"{_shown(library)} ({owner} Tensile)", "tensile", device, processor, searched, data,
            elsewhere, looks_for, assumed,
        )  # fmt: skip


# --- MIOpen -------------------------------------------------------------------------------

_MIOPEN_DB = re.compile(r"^gfx[0-9a-z]+(_[0-9]+)?\.(kdb|db|db\.txt|fdb\.txt|HIP\.fdb\.txt)$")
_MIOPEN_CK = re.compile(r"^libMIOpenCK.*_gfx[0-9a-z-]+\.so")


def check_miopen(
    tree: InstalledTree, device: str, processor: str, environ: Mapping[str, str]
) -> Iterator[Finding]:
    del environ
    cu_count = (
        "any compute-unit count counts (the runtime wants the device's own: "
        f"{processor}_<CUs> up to 64, {processor}<CUs in hex> above)"
    )
    for db in tree.paths("dir"):
        if posixpath.basename(db) != "db" or posixpath.basename(posixpath.dirname(db)) != "miopen":
            continue
        home = posixpath.dirname(db)
        data = [p for p in _in(tree, db) if _MIOPEN_DB.match(posixpath.basename(p))]
        elsewhere = [
            p
            for p in _files_under(tree, home)
            if posixpath.dirname(p) != db and _MIOPEN_DB.match(posixpath.basename(p))
        ]
        yield _judge(
            _shown(db) + " (MIOpen)", "miopen", device, processor, db, data, elsewhere,
            f"{processor}[_<CUs>].kdb", cu_count,
        )  # fmt: skip
    for lib in _ck_directories(tree):
        data = [p for p in _in(tree, lib) if _MIOPEN_CK.match(posixpath.basename(p))]
        yield _judge(
            f"{_shown(lib)}/libMIOpenCK* (MIOpen)", "miopen", device, processor, lib, data, [],
            f"libMIOpenCK*_{processor}.so",
        )  # fmt: skip


def _ck_directories(tree: InstalledTree) -> list[str]:
    return sorted(
        {posixpath.dirname(p) for p in tree.kinds if _MIOPEN_CK.match(posixpath.basename(p))}
    )


# --- rocFFT -------------------------------------------------------------------------------

_ROCFFT_CACHE = re.compile(r"^rocfft_kernel_cache_[0-9a-z-]+\.db$")


def check_rocfft(
    tree: InstalledTree, device: str, processor: str, environ: Mapping[str, str]
) -> Iterator[Finding]:
    override = environ.get("ROCFFT_RTC_SYS_CACHE_PATH")
    libraries: dict[str, str] = {}  # directory -> the first librocfft.so* in it
    for path in sorted(tree.kinds):
        if posixpath.basename(path).startswith("librocfft.so"):
            libraries.setdefault(posixpath.dirname(path), posixpath.basename(path))
    caches = [p for p in tree.paths(FILE) if _ROCFFT_CACHE.match(posixpath.basename(p))]
    for directory, name in libraries.items():
        library = f"{_shown(directory)}/{name} (rocFFT)"
        if override:
            yield Finding(
                library, "rocfft", device, Status.MISSING, "",
                f"ROCFFT_RTC_SYS_CACHE_PATH={printable(override)} replaces the installed cache; "
                "probe checks the installed one: unset it",
            )  # fmt: skip
            continue
        data = [p for p in _in(tree, directory) if _ROCFFT_CACHE.match(posixpath.basename(p))]
        elsewhere = [p for p in caches if posixpath.dirname(p) != directory]
        yield _judge(
            library, "rocfft", device, processor, directory, data, elsewhere,
            f"rocfft_kernel_cache_{processor}.db (without it rocFFT compiles each kernel at "
            "first use)",
        )  # fmt: skip


# --- AOTriton -----------------------------------------------------------------------------

IMAGES = "aotriton.images"


def _alias_covers(name: str, processor: str) -> bool:
    """``amd-gfx11xx``: a family directory whose ``x`` stand for any digit."""
    body = name.removeprefix("amd-")
    return (
        body != name
        and "x" in body
        and len(body) == len(processor)
        and all(a == b or (a == "x" and b.isalnum()) for a, b in zip(body, processor, strict=True))
    )


def check_aotriton(
    tree: InstalledTree, device: str, processor: str, environ: Mapping[str, str]
) -> Iterator[Finding]:
    del environ
    for images in (p for p in tree.paths("dir") if posixpath.basename(p) == IMAGES):
        library = f"{_shown(images)} (AOTriton)"
        names = tree.listing(images)
        own = f"{images}/amd-{processor}"
        held = _files_under(tree, own) if f"amd-{processor}" in names else []
        if held:
            yield Finding(library, "aotriton", device, Status.FOUND, _shown(_first(held)))
            continue
        alias = [n for n in names if _alias_covers(n, processor)]
        held = _files_under(tree, f"{images}/{alias[0]}") if alias else []
        if held:
            yield Finding(
                library, "aotriton", device, Status.FOUND, _shown(_first(held)), "",
                f"{alias[0]} is read as covering {processor} (AOTriton's family directories)",
            )  # fmt: skip
            continue
        where = f"looks for files in {_shown(own)}/"
        astray = [
            p
            for p in tree.files_under(images)
            if file_arch(p) == processor and not p.startswith(own + "/")
        ]
        if astray:
            yield Finding(
                library, "aotriton", device, Status.SHADOWED, _shown(astray[0]),
                f"the runtime does not search there (it {where})",
            )  # fmt: skip
            continue
        foreign = [
            f"{images}/{n}"
            for n in names
            if n.startswith("amd-") and _files_under(tree, f"{images}/{n}")
        ]
        if foreign:
            yield Finding(
                library, "aotriton", device, Status.SHADOWED, _shown(foreign[0]),
                f"only other arches' images where {processor}'s should be ({_others(foreign)}; "
                f"it {where})",
            )  # fmt: skip
            continue
        yield Finding(library, "aotriton", device, Status.MISSING, "", where)
