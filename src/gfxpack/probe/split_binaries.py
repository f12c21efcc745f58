"""Split binaries (and fat ones kept whole): what the kpack runtime finds for a device.

Every regular ELF file of the root with HIP wrappers is one library, checked by
:func:`gfxpack.fatbin.libraries.check_library` (the lookup ``gfxpack kpack resolve``
makes, by the runtime's rules in :mod:`gfxpack.fatbin.resolve`). The device is the
target id a process sees (:func:`~gfxpack.fatbin.libraries.process_target`: the
xnack mode added when the id leaves it open). A miss is ``shadowed`` when an archive
holds the code object for other target ids only, when archives exist for other
arches only, or when an archive named for this device lies in the root where the
binary's search paths do not lead; otherwise ``missing``, as it is when the archive
found lies outside the root (a search path climbing out of it with ``../``: the
runtime inside the root would not see this machine's file).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from pathlib import Path

from gfxpack.amdgpu import TargetId
from gfxpack.fatbin import InvalidFatBinary
from gfxpack.fatbin.libraries import check_library, is_elf, process_target
from gfxpack.fatbin.resolve import PLACEHOLDER, ResolveError, read_references
from gfxpack.probe.model import Finding, Status
from gfxpack.probe.tree import FILE, InstalledTree
from gfxpack.regular_files import printable

FAMILY = "kpack"


def check_split_binaries(
    tree: InstalledTree, device: str, processor: str, environ: Mapping[str, str]
) -> Iterator[Finding]:
    del processor  # the lookup takes the whole target id
    target = process_target(device, environ)
    archives: dict[str, str] = {}  # file name -> the first archive of that name
    for archive in tree.paths(FILE):
        if archive.endswith(".kpack"):
            archives.setdefault(posixpath.basename(archive), archive)
    for path in tree.paths(FILE):
        absolute = tree.absolute(path)
        if not is_elf(absolute):
            continue
        report = check_library(absolute, target, printable(path), environ, relative_to=tree.root)
        if report is None:
            continue  # no device code
        shown = f"{printable(path)} ({'split' if report.split else 'fat'} binary)"
        outside = [a for a in report.archives if a.startswith("/")]  # not relative to the root
        if report.found and outside:
            # A search path climbing out of the root (../../..) reached a file of this
            # machine: the runtime in the root would not see it.
            yield Finding(
                shown, FAMILY, device, Status.MISSING, "",
                f"the archives it resolves to lie outside the root ({', '.join(outside)})",
            )  # fmt: skip
            continue
        if report.found:
            used = ", ".join(report.archives) if report.split else "inline code objects"
            yield Finding(shown, FAMILY, device, Status.FOUND, used)
            continue
        if report.split and report.reason == "arch-not-found":
            yield Finding(shown, FAMILY, device, Status.SHADOWED, "", report.problem)
            continue
        if report.split and report.reason == "archive-not-found":
            astray = _astray(absolute, target, archives)
            if astray:
                why = "the binary's search paths do not lead there"
                if environ.get("ROCM_KPACK_PATH"):
                    why = "ROCM_KPACK_PATH is set: the only archives searched are those it names"
                yield Finding(
                    shown, FAMILY, device, Status.SHADOWED, printable(astray),
                    f"{why} ({report.problem})",
                )  # fmt: skip
                continue
            if "archives for other target ids" in report.problem:
                yield Finding(shown, FAMILY, device, Status.SHADOWED, "", report.problem)
                continue
        yield Finding(shown, FAMILY, device, Status.MISSING, "", report.problem)


def _astray(binary: Path, target: str, archives: dict[str, str]) -> str | None:
    """An archive of the root named as a search path of ``binary`` names one for
    ``target``, but not where the path leads (a ``.kpack`` directory moved)."""
    try:
        references = read_references(binary)
    except (ResolveError, InvalidFatBinary, OSError):
        return None
    forms = TargetId.parse(target).compatible()
    wanted = {
        posixpath.basename(search).replace(PLACEHOLDER, form, 1)
        for _, reference in references
        for search in reference.search_paths
        for form in forms
    }
    return next((archives[name] for name in sorted(wanted) if name in archives), None)
