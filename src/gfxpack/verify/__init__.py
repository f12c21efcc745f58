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
            "violations": [v.as_dict() for v in self.violations],
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
) -> list[Report]:
    """Resolve ``install`` and check every rule, for ``fmt`` or every format under ``root``."""
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
    return [_verify_format(root, f, install, system, suite, progress) for f in chosen]


def _verify_format(
    root: Path,
    fmt: PackageFormat,
    install: list[str],
    system: Path | None,
    suite: str | None,
    progress: Callable[[PackageFormat, int, int], None] | None,
) -> Report:
    universe = load(root, fmt, read_system(system, fmt), suite)
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
    )
    if install:
        resolution = resolve(universe, install)
        report.resolution = resolution
        _hold(report, universe, index, resolution, " ".join(install))
    for done, solvable in enumerate(packages, start=1):
        _hold(
            report,
            universe,
            index,
            resolve(universe, solvable=solvable, steps=False),
            f"{solvable.name}={solvable.evr}",
        )
        if progress:
            progress(fmt, done, len(packages))
    return report


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
