"""The promises of the package graph (seed 000), checked on one resolution.

* ``cross-arch``: installing an arch-specific package (a device package or an
  arch meta, ``…-gfx942``) pulls in no ``…-gfxNNN`` package of another arch.
* ``arch-set``: installing a gfxarch meta, versioned (``amdrocm-blas8.2``) or
  not (``amdrocm-blas``), pulls in its host package and every device package
  the repository has for that release.
* ``file-conflict``: no two packages of one resolution install the same file.
* ``installable``: the resolution exists at all (checked for every package).

Arch-ness is read from names alone (spec packaging.md section 6), so any
repository can be checked, not only one gfxpack built.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gfxpack.plan.naming import InvalidName, Naming, version_xy
from gfxpack.plan.targets import sort_targets
from gfxpack.verify.resolution import Hop, Resolution
from gfxpack.verify.universe import Universe

RULES = {
    "installable": "every package in the repository is installable",
    "cross-arch": "an arch-specific package pulls no device or arch meta of another arch",
    "arch-set": "a gfxarch meta pulls its host and every device of its release",
    "file-conflict": "no two packages of one resolution own one file",
}
_ARCH_SUFFIX = re.compile(r"^(?P<meta>.+)-(?P<arch>gfx[0-9a-z]+)$")
_ASAN = "-asan"


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    install: str  # what was being installed when it showed
    message: str
    path: tuple[Hop, ...] = ()
    # What the finding is about, as a waiver names it (verify/waivers.py): the package
    # that breaks the rule (for file-conflict, every owner; for a requirement nothing
    # provides, the requirement and the names it mentions) and, for file-conflict, the
    # shared files.
    packages: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "rule": self.rule,
            "install": self.install,
            "message": self.message,
            "packages": list(self.packages),
            "path": [{"package": h.package, "via": h.via} for h in self.path],
        }
        if self.files:
            found["files"] = list(self.files)
        return found


def arch_of(name: str) -> str | None:
    """
    >>> arch_of("amdrocm-blas8.2-gfx942"), arch_of("amdrocm-blas-host8.2")
    ('gfx942', None)
    """
    match = _ARCH_SUFFIX.match(name)
    return match["arch"] if match else None


class ArchIndex:
    """Arch-ness of every package, read once: its arch suffix by solvable id, and the
    repository's arch-suffixed packages by the name they suffix."""

    def __init__(self, universe: Universe) -> None:
        self.universe = universe
        self.arch: dict[int, str] = {}
        self.suffixed: dict[str, list[int]] = defaultdict(list)
        self.by_name: dict[str, list[int]] = defaultdict(list)
        for solvable in universe.packages():
            self.by_name[solvable.name].append(solvable.id)
            match = _ARCH_SUFFIX.match(solvable.name)
            if match:
                self.arch[solvable.id] = match["arch"]
                self.suffixed[match["meta"]].append(solvable.id)

    def devices(self, meta: int) -> list[int]:
        name, evr = self.universe.name_evr(meta)
        return [s for s in self.suffixed.get(name, ()) if self.universe.name_evr(s)[1] == evr]

    def host(self, meta: int) -> int | None:
        name, evr = self.universe.name_evr(meta)
        xy = _xy(evr)
        if xy is None or not name.endswith(xy):
            return None
        stem = name[: -len(xy)]
        asan = stem.endswith(_ASAN)
        host = Naming(xy, asan).host(stem.removesuffix(_ASAN) if asan else stem)
        return next(
            (s for s in self.by_name.get(host, ()) if self.universe.name_evr(s)[1] == evr), None
        )


def _xy(evr: str) -> str | None:
    """The X.Y of a package's version (epoch and release cut off)."""
    try:
        return version_xy(evr.split(":", 1)[-1].rsplit("-", 1)[0])
    except InvalidName:
        return None


def check(
    universe: Universe, index: ArchIndex, resolution: Resolution, install: str
) -> tuple[list[Violation], set[str]]:
    """Every rule on one successful resolution (``install`` names it in reports):
    the violations, and the rules that applied to it."""
    applied = {"installable", "file-conflict"}
    violations = _file_conflicts(universe, resolution, install)
    for rule, holds in (("cross-arch", _cross_arch), ("arch-set", _arch_set)):
        found = holds(universe, index, resolution, install)
        if found is not None:
            applied.add(rule)
            violations += found
    return violations, applied


def _cross_arch(
    universe: Universe, index: ArchIndex, resolution: Resolution, install: str
) -> list[Violation] | None:
    """None when no start is arch-specific."""
    violations = None
    for start in resolution.starts:
        arch = index.arch.get(start)
        if arch is None:
            continue
        violations = [] if violations is None else violations
        # Breadth-first order: the nearest offender first, its path the shortest.
        foreign = [
            r for r in resolution.reached(universe, start) if index.arch.get(r, arch) != arch
        ]
        if foreign:
            names = [universe.name_evr(r)[0] for r in foreign]
            archs = sort_targets({index.arch[r] for r in foreign})
            listed = ", ".join(names[:3]) + (
                f" and {len(names) - 3} more" if len(names) > 3 else ""
            )
            violations.append(
                Violation(
                    "cross-arch",
                    install,
                    f"{universe.name_evr(start)[0]} is for {arch} but pulls in "
                    f"{len(names)} package(s) of {', '.join(archs)}: {listed}",
                    resolution.path(universe, start, foreign[0]),
                    (universe.name_evr(start)[0],),
                )
            )
    return violations


def _arch_set(
    universe: Universe, index: ArchIndex, resolution: Resolution, install: str
) -> list[Violation] | None:
    """None when no start is (or pulls in) a gfxarch meta."""
    violations = None
    on_system = None  # (name, evr) of the resolved system, once a meta needs it
    for start in resolution.starts:
        if start in index.arch:
            continue
        name, evr = universe.name_evr(start)
        # The start itself, or the versioned meta a non-versioned name pulls in.
        versioned = name + (_xy(evr) or "")
        metas = [start, *(s for s in index.by_name.get(versioned, ()) if s in resolution.world)]
        for meta in metas:
            devices = index.devices(meta)
            if not devices:
                continue  # not a gfxarch meta
            violations = [] if violations is None else violations
            if on_system is None:
                on_system = {universe.name_evr(s) for s in resolution.world}
            expected = [*devices, *filter(None, [index.host(meta)])]
            missing = sorted(
                universe.nevr(s) for s in expected if universe.name_evr(s) not in on_system
            )
            if missing:
                violations.append(
                    Violation(
                        "arch-set",
                        install,
                        f"installing {name} does not pull in {', '.join(missing)}",
                        resolution.path(universe, start, meta),
                        (name,),
                    )
                )
    return violations


def _file_conflicts(universe: Universe, resolution: Resolution, install: str) -> list[Violation]:
    files = universe.files
    owners: dict[str, list[int]] = defaultdict(list)
    for solvable in resolution.world:
        for path in files.get(solvable, ()):
            owners[path].append(solvable)
    shared: dict[tuple[int, ...], list[str]] = defaultdict(list)
    for path, packages in owners.items():
        if len(packages) > 1:
            shared[tuple(packages)].append(path)
    violations = []
    for ids, paths in shared.items():
        packages = sorted(ids, key=universe.name_evr)
        paths.sort()
        example = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        owners_text = " and ".join(universe.nevr(p) for p in packages)
        verb = "both install" if len(packages) == 2 else "all install"
        violations.append(
            Violation(
                "file-conflict",
                install,
                f"{owners_text} {verb} {example}",
                _path_to(universe, resolution, packages[-1]),
                tuple(universe.name_evr(p)[0] for p in packages),
                tuple(paths),
            )
        )
    return sorted(violations, key=lambda v: v.message)


def _path_to(universe: Universe, resolution: Resolution, target: int) -> tuple[Hop, ...]:
    for start in resolution.starts:
        path = resolution.path(universe, start, target)
        if path:
            return path
    return ()
