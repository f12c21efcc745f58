"""Install resolution against a published repository, with the graph's promises checked.

For each format present (or the one asked for), the repository and a system
description are loaded into libsolv (universe.py); the requested install is
resolved and shown as a transaction (resolution.py); then every package of
the repository is resolved on its own, and each of these resolutions is held
to the rules of rules.py. The result is a :class:`Report` per format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS, PackageFormat
from gfxpack.verify import rules
from gfxpack.verify.integrity import Keyring, mismatches
from gfxpack.verify.resolution import Resolution, resolve
from gfxpack.verify.rules import RULES, Violation
from gfxpack.verify.system import VerifyError, read_system
from gfxpack.verify.universe import Universe, load, locate

__all__ = ["RULES", "Report", "VerifyError", "Violation", "formats_in", "verify"]


@dataclass
class Report:
    fmt: PackageFormat
    repository: str
    system: str
    packages: int
    install: list[str]
    resolution: Resolution | None
    # rule -> how many resolutions it was held to
    checked: dict[str, int] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    # What could not be checked: nothing failed, but a rule saw less than it should.
    warnings: list[str] = field(default_factory=list)
    # how the indexes were vouched for, and how many package files --deep checked
    trust: str = ""
    files_checked: int | None = None

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict[str, Any]:
        resolution = self.resolution
        return {
            "format": self.fmt.name,
            "repository": self.repository,
            "system": self.system,
            "packages": self.packages,
            "install": self.install,
            "transaction": [s.as_dict() for s in resolution.steps] if resolution else [],
            "checked": self.checked,
            "signatures": self.trust,
            "files_checked": self.files_checked,
            "violations": [v.as_dict() for v in self.violations],
            "warnings": self.warnings,
            "ok": self.ok,
        }


def formats_in(root: Path) -> list[PackageFormat]:
    return [fmt for fmt in FORMATS if locate(root, fmt) is not None]


def verify(
    root: Path,
    install: list[str],
    fmt: PackageFormat | None = None,
    system: Path | None = None,
    suite: str | None = None,
    progress: Callable[[PackageFormat, int, int], None] | None = None,
    keyring: Path | None = None,
    deep: bool = False,
) -> list[Report]:
    """Resolve ``install`` and check every rule, for ``fmt`` or every format under ``root``.

    The indexes are checked against their Release or repomd.xml first, and their
    signatures against ``keyring`` when given; ``deep`` checks every package file's
    size and sha256 against its index too."""
    if not Path(root).is_dir():
        raise VerifyError(f"{root}: not a directory (give the --out directory of gfxpack repo)")
    present = formats_in(root)
    if fmt is not None and fmt not in present:
        raise VerifyError(
            f"{root}: no {fmt} repository here{f' (there is: {present[0]})' if present else ''}"
        )
    chosen = [fmt] if fmt else present
    if not chosen:
        raise VerifyError(
            f"{root}: neither an apt repository (dists/) nor an rpm-md one "
            "(repodata/), nor the apt/ and rpm/ directories gfxpack repo makes"
        )
    if system is not None and len(chosen) > 1:
        raise VerifyError("--system describes one format's packages: add --format deb or rpm")
    keys = Keyring(keyring) if keyring is not None else None
    return [_verify_format(root, f, install, system, suite, progress, keys, deep) for f in chosen]


def _verify_format(
    root: Path,
    fmt: PackageFormat,
    install: list[str],
    system: Path | None,
    suite: str | None,
    progress: Callable[[PackageFormat, int, int], None] | None,
    keyring: Keyring | None,
    deep: bool,
) -> Report:
    universe = load(root, fmt, read_system(system, fmt), suite, keyring)
    files_checked = None
    if deep:
        files = list(universe.package_files())
        problems = mismatches(universe.root, iter(files))
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise VerifyError(f"{problems[0]}{more}: the repository was changed after publishing")
        files_checked = len(files)
    index = rules.ArchIndex(universe)
    packages = universe.packages()
    report = Report(
        fmt,
        universe.label,
        universe.system_label,
        len(packages),
        install,
        None,
        dict.fromkeys(RULES, 0),
        trust=universe.trust,
        files_checked=files_checked,
    )
    if not universe.has_file_lists:
        listing = fmt.file_lists
        report.warnings.append(
            f"{universe.label}: no {listing} index, so the file-conflict rule checks nothing"
        )
    unavailable = _unavailable(universe)
    if install:
        resolution = resolve(universe, install)
        report.resolution = resolution
        missed = resolution.unprovided & unavailable
        if missed:
            names = ", ".join(sorted(universe.show_dep(dep) for dep in missed))
            report.checked["installable"] += 1
            report.violations.append(
                Violation(
                    "installable",
                    " ".join(install),
                    f"cannot install {' '.join(install)}: it needs {names}, which nothing provides",
                )
            )
        else:
            _hold(report, universe, index, resolution, " ".join(install))
    needed_by: dict[int, int] = dict.fromkeys(unavailable, 0)
    for done, solvable in enumerate(packages, start=1):
        resolution = resolve(universe, solvable=solvable, steps=False)
        missed = resolution.unprovided & unavailable
        if missed:
            # One root cause for many failures: counted here, reported once below.
            report.checked["installable"] += 1
            for dep in missed:
                needed_by[dep] += 1
        else:
            _hold(report, universe, index, resolution, f"{solvable.name}={solvable.evr}")
        if progress:
            progress(fmt, done, len(packages))
    report.violations[:0] = _unavailable_violations(universe, needed_by)
    return report


def _unavailable(universe: Universe) -> set[int]:
    """Requirements of repository packages naming packages that neither the repository
    nor the system has: each makes every package that needs it uninstallable. (A
    requirement on a version the repository lacks is a problem of that package alone.)"""
    return {
        dep
        for solvable in universe.packages()
        for dep, providers in universe.requirements(solvable.id)
        if not providers and universe.names_unknown(dep)
    }


def _unavailable_violations(universe: Universe, needed_by: dict[int, int]) -> list[Violation]:
    """One violation per kind of missing requirement, in the repository's own spelling:
    ``system packages not available: ocl-icd-libopencl1 (needed by 28 packages)``."""
    groups: dict[str, list[str]] = {"system packages": [], "packages": []}
    for dep, count in sorted(needed_by.items(), key=lambda item: universe.show_dep(item[0])):
        if count == 0:
            continue
        text = universe.show_dep(dep)
        ours = text.lstrip("(").startswith("amdrocm")
        noun = "package" if count == 1 else "packages"
        groups["packages" if ours else "system packages"].append(
            f"{text} (needed by {count} {noun})"
        )
    where = {
        "system packages": f"not on the system ({universe.system_label}) nor in the repository",
        "packages": "not in the repository nor on the system",
    }
    return [
        Violation(
            "installable",
            "every package",
            f"{kind} not available: {', '.join(items)}; {where[kind]}",
        )
        for kind, items in groups.items()
        if items
    ]


def _hold(
    report: Report, universe: Universe, index: rules.ArchIndex, resolution: Resolution, install: str
) -> None:
    if not resolution.ok:
        report.checked["installable"] += 1
        report.violations.append(
            Violation(
                "installable",
                install,
                f"cannot install {install}: " + " | ".join(resolution.problems),
            )
        )
        return
    violations, applied = rules.check(universe, index, resolution, install)
    for rule in applied:
        report.checked[rule] += 1
    report.violations += violations
