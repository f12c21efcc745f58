"""What a tried install did: every package installed (stand-ins aside) with the bytes of
the regular files it owns in the root, the alternatives its scripts registered, and
every package or file of another GPU arch than the install is held to.

A file is of an arch when its path names a processor (``blas_lib_gfx1100.kpack``,
``.../arch_content/<provider>/gfx1100/...``, ``TensileLibrary_gfx1100-xnack+.co``):
:func:`gfxpack.file_arch.file_arch`, the answer split routes by. Code for a generic
target is of every processor it runs on (``gfx9-4-generic``: gfx942 and gfx950).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack.amdgpu import GENERIC_OF, PROCESSORS, sort_targets
from gfxpack.file_arch import file_arch
from gfxpack.formats import PackageFormat
from gfxpack.safe_tree import entries_under
from gfxpack.trial.clients import CLIENTS
from gfxpack.trial.stand_ins import StandIn, reported
from gfxpack.verify.rules import arch_of
from gfxpack.verify.system import SystemPackage


@dataclass(frozen=True, slots=True)
class Installed:
    name: str
    version: str
    size: int  # bytes of the regular files it owns in the root
    files: int  # how many regular files those are

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "size": self.size, "files": self.files}


@dataclass(frozen=True, slots=True)
class ForeignFile:
    """A file or symlink of ``arch``, not one the install is held to, from ``package``."""

    path: str
    package: str
    arch: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "package": self.package, "arch": self.arch}


@dataclass
class Trial:
    """What one tried install did."""

    client: str
    repository: str
    root: str
    kept: bool  # whether the root is still there
    requested: list[str]
    archs: list[str]  # the archs it is held to (none: not judged)
    system: str  # the system list the stand-ins stand for
    stand_ins: list[StandIn]
    packages: list[Installed]
    # link name under /etc/alternatives -> what it points at (the scripts' registrations)
    alternatives: dict[str, str] = field(default_factory=dict)
    foreign_packages: list[str] = field(default_factory=list)
    foreign_files: list[ForeignFile] = field(default_factory=list)
    sandboxed: bool = True  # whether the client ran in the sandbox
    scripts: bool = True  # whether the packages' scripts ran (not: --no-scripts)

    @property
    def ok(self) -> bool:
        return not self.foreign_packages and not self.foreign_files

    @property
    def total_size(self) -> int:
        return sum(p.size for p in self.packages)

    def other_archs(self) -> list[str]:
        """The archs of what should not be there, in processor order."""
        found = {f.arch for f in self.foreign_files}
        found |= {a for name in self.foreign_packages if (a := arch_of(name))}
        return sort_targets(found)

    def failure(self) -> str:
        """What went wrong, in one line (for a trial that is not ok)."""
        packages, files = len(self.foreign_packages), len(self.foreign_files)
        return (
            f"installing {' '.join(self.requested)} brought {packages} package"
            f"{'s' * (packages != 1)} and {files} file{'s' * (files != 1)} of another arch "
            f"than {', '.join(self.archs)} ({', '.join(self.other_archs())})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "format": CLIENTS[self.client].fmt.name,
            "repository": self.repository,
            "root": self.root,
            "kept": self.kept,
            "requested": self.requested,
            "archs": self.archs,
            "system": self.system,
            "stand_ins": [s.as_dict() for s in self.stand_ins],
            "packages": [p.as_dict() for p in self.packages],
            "total_size": self.total_size,
            "alternatives": self.alternatives,
            "sandboxed": self.sandboxed,
            "scripts": self.scripts,
            "other_arch": {
                "packages": self.foreign_packages,
                "files": [f.as_dict() for f in self.foreign_files],
            },
            "ok": self.ok,
        }


def file_archs(path: str) -> set[str]:
    """The processor or generic target a path belongs to (:func:`gfxpack.file_arch.file_arch`,
    the answer split routes by), as a set.

    >>> sorted(file_archs("/opt/rocm/core-8.2/lib/TensileLibrary_gfx1100-xnack+.co"))
    ['gfx1100']
    >>> file_archs("/opt/rocm/.kpack/blas_lib_gfx942:xnack+.kpack"), file_archs("/gfxpack/gfx11")
    ({'gfx942'}, set())
    >>> file_archs("/opt/rocm/lib/rocblas/library/Kernels_gfx9-4-generic.co")
    {'gfx9-4-generic'}
    """
    arch = file_arch(path)
    return {arch} if arch else set()


def other_archs(path: str, held: Sequence[str]) -> list[str]:
    """The archs ``path`` names that are not ``held`` (a generic target is held when a
    processor it runs on is), in processor order.

    >>> other_archs("/x/blas_lib_gfx1100.kpack", ["gfx942"])
    ['gfx1100']
    >>> other_archs("/x/a_gfx9-4-generic.co", ["gfx942"]), other_archs("/x/a_gfx942.co", ["gfx942"])
    ([], [])
    """
    runs_on = {GENERIC_OF.get(arch) for arch in held}
    return sort_targets(a for a in file_archs(path) if a not in held and a not in runs_on)


def report(
    client: str,
    fmt: PackageFormat,
    repository: str,
    root: Path,
    listed: tuple[str, list[SystemPackage]],
    requested: Sequence[str],
    held: list[str],
    owned: dict[tuple[str, str], list[str]],
) -> Trial:
    """The report of an install of ``requested`` by ``client`` into ``root``, where the
    system list ``listed`` stands in and ``owned`` is what the package database lists
    (:func:`owned_files`), held to the archs ``held`` (none: not judged)."""
    label, system = listed
    standing = {p.name for p in system}
    sizes = file_sizes(root)
    packages, foreign_packages, foreign_files = [], [], []
    for (name, version), paths in sorted(owned.items()):
        if name in standing:
            continue
        mine = [size for p in paths if (size := sizes.get(p)) is not None]
        packages.append(Installed(name, version, sum(mine), len(mine)))
        if not held:
            continue
        arch = arch_of(name)
        if arch in PROCESSORS and arch not in held:
            foreign_packages.append(name)
        for path in sorted(paths):
            if path in sizes:
                foreign_files += [ForeignFile(path, name, a) for a in other_archs(path, held)]
    return Trial(
        client=client,
        repository=repository,
        root=str(root),
        kept=True,
        requested=list(requested),
        archs=held,
        system=label,
        stand_ins=reported(fmt, system),
        packages=packages,
        alternatives=alternatives(root),
        foreign_packages=foreign_packages,
        foreign_files=foreign_files,
    )


def owned_files(listing: str) -> dict[tuple[str, str], list[str]]:
    """(name, version) -> the paths of every installed package of a package database's
    ``listing`` (:meth:`gfxpack.trial.clients.Client.listing`'s output)."""
    owned: dict[tuple[str, str], list[str]] = {}
    paths: list[str] = []
    for line in listing.splitlines():
        if line.lstrip().startswith("/"):
            paths.append(line.strip())
        elif line:
            name, version, state = [*line.split("\t"), "", ""][:3]
            # A Debian package is installed when its state is "ii"; rpm lists only those.
            paths = owned.setdefault((name, version), []) if state.strip() in ("ii", "") else []
    return owned


def file_sizes(root: Path) -> dict[str, int | None]:
    """'/path' -> size of every regular file under ``root`` (None: a symlink or another
    entry that is not a directory), found without following any symlink (a link in
    the root may point at this machine's files)."""
    sizes: dict[str, int | None] = {}
    for path, _, info in entries_under(root):
        if stat.S_ISREG(info.st_mode):
            sizes[path] = info.st_size
        elif not stat.S_ISDIR(info.st_mode):
            sizes[path] = None
    return sizes


def alternatives(root: Path) -> dict[str, str]:
    """The links under the root's /etc/alternatives and where they point."""
    directory = root / "etc/alternatives"
    if not directory.is_dir() or directory.is_symlink():
        return {}
    with os.scandir(directory) as entries:
        return {
            entry.name: os.readlink(entry.path)
            for entry in sorted(entries, key=lambda e: e.name)
            if entry.is_symlink()
        }
