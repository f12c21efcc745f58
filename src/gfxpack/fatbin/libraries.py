"""What a device finds in each library of a file or a tree (``gfxpack kpack resolve``).

A library gfxpack split (its wrappers marked HIPK) finds its code objects in kpack
archives, which :mod:`gfxpack.fatbin.resolve` follows as the runtime does. A library
the split kept whole (its wrappers still HIPF: too small to gain, or a layout the
rewriter leaves alone; the split's notes say which) needs no archive: the runtime
loads the inline code object whose target id fits the device, so the check is
whether one does. A file with no HIP wrapper carries no device code and is not a
library here.

A tree is walked without following any symlink: a link to a library inside the tree
is that library, listed under its own name; a link out of the tree is not the
tree's. One broken or hostile library is one line saying why, never the end of the
walk.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack import kpack
from gfxpack.amdgpu import XNACK_PROCESSORS, TargetId, sort_targets
from gfxpack.errors import GfxpackError
from gfxpack.fatbin.reader import HIPF, HIPK, FatBinary
from gfxpack.fatbin.resolve import ResolveError, each_code_object
from gfxpack.regular_files import open_regular, printable

ELF_MAGIC = b"\x7fELF"


class InlineArchNotFound(ResolveError):
    """A library kept whole holds no inline code object for the device."""

    reason = "arch-not-found"

    def __init__(self, message: str, inline: list[str]):
        super().__init__(message)
        self.inline = inline  # the target ids it holds code objects for


@dataclass(frozen=True)
class LibraryReport:
    """One library checked for one device: found or not, and from where."""

    path: str  # as shown: relative to the tree checked, or as given
    arch: str
    split: bool
    found: bool
    code_objects: int = 0  # split: the wrappers' code objects found
    archives: tuple[str, ...] = ()  # split: the archives they came from
    inline: tuple[str, ...] = ()  # kept whole: the target ids of its code objects
    problem: str = ""  # why not found
    reason: str = ""  # ResolveError.reason of a miss, for scripts

    def line(self) -> str:
        """``ok``/``miss``, the library and what the device gets from it."""
        if not self.found:
            return f"miss {self.path}: {self.arch}: {self.problem}"
        if not self.split:
            return f"ok   {self.path}: not split: {inline_summary(self.inline)}"
        objects = "code object" if self.code_objects == 1 else "code objects"
        return (
            f"ok   {self.path}: {self.arch}: {self.code_objects} {objects} from "
            f"{', '.join(self.archives)}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "arch": self.arch,
            "split": self.split,
            "found": self.found,
            "code_objects": self.code_objects,
            "archives": list(self.archives),
            "inline": list(self.inline),
            "problem": self.problem or None,
            "reason": self.reason or None,
        }


def inline_summary(targets: tuple[str, ...] | list[str]) -> str:
    return f"inline code objects for {', '.join(targets) or 'no target'}"


def forms_of(target: str) -> list[str]:
    """The target ids a device with ``target`` loads, most specific first; ResolveError
    when ``target`` is not one."""
    try:
        return TargetId.parse(target).less_specific()
    except ValueError as e:
        raise ResolveError(str(e)) from None


def process_target(target_id: str, environ: Mapping[str, str] | None = None) -> str:
    """The target id a process sees for a GPU whose id leaves xnack open (as ``gfxpack
    detect`` names it: xnack is a per-process mode): its processor's xnack mode added,
    on when HSA_XNACK=1 and off otherwise, the runtime's default (a kernel booted
    with amdgpu.noretry=0 turns it on: give the target id then). Code built for
    ``gfx90a:xnack-`` loads in such a process; the open id would match only code
    built for either mode.

    >>> process_target("gfx90a:sramecc+", {}), process_target("gfx1100", {"HSA_XNACK": "1"})
    ('gfx90a:sramecc+:xnack-', 'gfx1100')
    """
    environ = os.environ if environ is None else environ
    target = TargetId.parse(target_id)
    if target.processor not in XNACK_PROCESSORS or "xnack" in dict(target.features):
        return target_id
    mode = "+" if environ.get("HSA_XNACK") == "1" else "-"
    return str(TargetId(target.processor, tuple(sorted((*target.features, ("xnack", mode))))))


def wrapper_magic(path: Path) -> int | None:
    """HIPK when every HIP wrapper of ``path`` is split, HIPF when none is, None when it
    has no wrapper (no device code). Only the wrappers are read."""
    with FatBinary(path, split=True) as fat:
        magics = {wrapper.magic for wrapper in fat.wrappers}
    if not magics:
        return None
    if len(magics) > 1:
        raise ResolveError(f"{path}: some wrappers are split (HIPK) and some not (HIPF)")
    return HIPK if magics == {HIPK} else HIPF


def inline_targets(path: Path, max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE) -> list[str]:
    """The target ids of the inline code objects of an unsplit library, in processor order."""
    with FatBinary(path, max_object_size=max_object_size) as fat:
        if fat.unsplittable:
            raise ResolveError(f"{path}: not split, and no device code loads: {fat.unsplittable}")
        targets = {str(obj.target) for device in fat.devices for obj in device.bundle.code_objects}
    return sort_targets(targets)


def check_inline(
    path: Path, target: str, max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE
) -> list[str]:
    """The inline target ids of a library kept whole; InlineArchNotFound when none is a
    form of ``target`` the device loads."""
    forms = forms_of(target)
    inline = inline_targets(path, max_object_size)
    if not set(forms) & set(inline):
        raise InlineArchNotFound(
            f"{path}: not split, and it holds no code object for {target} "
            f"(tried {', '.join(forms)}); {inline_summary(inline)}",
            inline,
        )
    return inline


def check_library(
    path: Path,
    target: str,
    shown: str | None = None,
    environ: Mapping[str, str] | None = None,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
    relative_to: Path | None = None,
) -> LibraryReport | None:
    """What a device with ``target`` finds in the library ``path``; None when it has no
    device code. A miss, a broken file included, is a report, not an exception;
    ``relative_to`` shortens the archive paths inside it."""
    shown = printable(str(path)) if shown is None else shown
    split = False
    try:
        magic = wrapper_magic(path)
        if magic is None:
            return None
        split = magic == HIPK
        if not split:
            targets = tuple(check_inline(path, target, max_object_size))
            return LibraryReport(shown, target, False, True, inline=targets)
        archives: dict[str, None] = {}
        count = 0
        for found in each_code_object(path, target, environ, max_object_size):
            count += 1
            archives[_shorter(found.archive, relative_to)] = None
        return LibraryReport(shown, target, True, True, count, tuple(archives))
    except (GfxpackError, OSError) as e:
        reason = e.reason if isinstance(e, ResolveError) else "invalid-input"
        held = tuple(e.inline) if isinstance(e, InlineArchNotFound) else ()
        problem = str(e) if isinstance(e, GfxpackError) else f"cannot read: {e.strerror or e}"
        problem = problem.removeprefix(f"{path}: ").removeprefix(f"{printable(str(path))}: ")
        if relative_to is not None:
            problem = problem.replace(f"{relative_to}/", "")
        return LibraryReport(
            shown, target, split, False, inline=held, problem=problem, reason=reason
        )


def _shorter(archive: Path, relative_to: Path | None) -> str:
    if relative_to is not None and archive.is_relative_to(relative_to):
        return printable(archive.relative_to(relative_to).as_posix())
    return printable(str(archive))


def is_elf(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a symlink) that starts as an ELF file does."""
    try:
        fd = open_regular(path, follow_symlinks=False)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as file:
        return file.read(len(ELF_MAGIC)) == ELF_MAGIC


def elf_files(root: Path) -> Iterator[Path]:
    """Every regular ELF file under ``root``, in path order; no symlink is followed."""
    for directory, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        here = Path(directory)
        for name in sorted(names):
            path = here / name
            try:
                regular = stat.S_ISREG(os.lstat(path).st_mode)
            except OSError:
                continue  # gone since the listing
            if regular and is_elf(path):
                yield path


def check_tree(
    root: Path,
    targets: list[str],
    environ: Mapping[str, str] | None = None,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> list[LibraryReport]:
    """One report per library with device code under ``root`` and per target, paths
    relative to ``root``."""
    for target in targets:
        forms_of(target)  # a bad --arch is one error, not a miss per library
    absolute = Path(os.path.abspath(root))  # the archives' paths are absolute
    reports = []
    for path in elf_files(root):
        shown = printable(path.relative_to(root).as_posix())
        for target in targets:
            report = check_library(path, target, shown, environ, max_object_size, absolute)
            if report is None:
                break  # no device code: the same for every target
            reports.append(report)
    return reports
