"""Install resolution against a published repository, with the graph's promises checked.

For each format present (or the one asked for), the repository and a system
description are loaded into libsolv (universe.py); the requested install is
resolved and shown as a transaction (resolution.py); then every package of
the repository is resolved on its own, and each of these resolutions is held
to the rules of rules.py. The result is a :class:`Report` per format.

What is judged (spec packaging.md Decision 17): with an install, the findings of
what installing it brings (its closure); those of other packages are notes. A
finding a waiver names (waivers.py) is waived, and a waiver that names nothing
the repository shows is stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS, PackageFormat
from gfxpack.relations import InvalidRelation
from gfxpack.repo.package_signatures import packages_unchecked
from gfxpack.verify import rules
from gfxpack.verify.integrity import Keyring, mismatches, symlinked_directories
from gfxpack.verify.resolution import Resolution, resolve
from gfxpack.verify.rules import RULES, Violation
from gfxpack.verify.signers import check_rpm_signatures, judge_signers, unlisted_packages
from gfxpack.verify.system import VerifyError, read_system
from gfxpack.verify.universe import Universe, load, locate
from gfxpack.verify.waivers import Waived, Waiver, load_waivers, sort_out

DAY = 86_400

__all__ = [
    "RULES",
    "Report",
    "VerifyError",
    "Violation",
    "Waived",
    "Waiver",
    "formats_in",
    "load_waivers",
    "verify",
]


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
    # Findings in the judged scope that no waiver accepts: each fails the run.
    violations: list[Violation] = field(default_factory=list)
    # Findings outside it (packages --install does not bring): reported, not failing.
    notes: list[Violation] = field(default_factory=list)
    # Findings (judged or not) that a waiver accepts, and the waivers that accepted none.
    waived: list[Waived] = field(default_factory=list)
    stale_waivers: list[Waiver] = field(default_factory=list)
    # What installing --install brings, as sorted (name, version) pairs, when only that
    # is judged; None when the whole repository is (no --install, or --all).
    closure: list[tuple[str, str]] | None = None
    # What could not be checked: nothing failed, but a rule saw less than it should.
    warnings: list[str] = field(default_factory=list)
    # how the indexes were vouched for, and how many package files --deep checked
    trust: str = ""
    files_checked: int | None = None
    # when apt stops accepting the indexes (Unix time; None: never)
    valid_until: int | None = None
    # with --expires-within: whether they expire within those days, or have (else None)
    expiring: bool | None = None

    @property
    def unresolved(self) -> bool:
        """The install asked for cannot be resolved: a failed run, whatever a waiver
        accepts (it waives a finding, not the question the run was asked)."""
        return self.resolution is not None and not self.resolution.ok

    @property
    def ok(self) -> bool:
        return not self.violations and not self.unresolved

    def as_dict(self) -> dict[str, Any]:
        resolution = self.resolution
        findings = [v.as_dict() for v in self.violations]
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
            "valid_until": _utc(self.valid_until),
            "expiring": self.expiring,
            "scope": "repository" if self.closure is None else "install",
            "closure": [{"name": n, "version": v} for n, v in self.closure or ()],
            "findings": findings,
            # The same list under its older name, for scripts written before "findings".
            "violations": findings,
            "notes": [v.as_dict() for v in self.notes],
            "waived": [w.as_dict() for w in self.waived],
            "stale_waivers": [w.as_dict() for w in self.stale_waivers],
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
    waivers: Sequence[Waiver] = (),
    judge_all: bool = False,
    allow_weak_key: bool = False,
    expires_within: int | None = None,
    now: int | None = None,
) -> list[Report]:
    """Resolve ``install`` and check every rule, for ``fmt`` or every format under ``root``.

    The indexes are checked against their Release or repomd.xml first, and their
    signatures against ``keyring`` when given, with every RPM's own signature (and the
    keys that signed, refused as current apt and dnf refuse them unless
    ``allow_weak_key``: then a warning); ``deep`` checks every package file's size and
    sha256 against its index too, and with ``keyring`` the signature of every RPM in
    the repository, listed or not.

    With ``install``, the findings judged are those of what installing it brings
    (Decision 17); the rest of the repository's are notes, unless ``judge_all``.
    A finding a waiver matches is waived instead, judged or not. With
    ``expires_within`` (days), an apt Release whose Valid-Until is less than that after
    ``now`` (default: the clock) is a warning."""
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
    reports = []
    for chosen_fmt in chosen:
        report = _verify_format(
            root, chosen_fmt, install, system, suite, progress, keys, deep, judge_all
        )
        if expires_within is not None:
            _judge_expiry(report, expires_within, now)
        _apply(report, [w for w in waivers if w.applies_to(chosen_fmt)])
        reports.append(report)
    if keys is not None:
        said: list[str] = []
        judge_signers(keys, allow_weak_key, said.append)
        for report in reports:
            report.warnings += said
    return reports


def _verify_format(
    root: Path,
    fmt: PackageFormat,
    install: list[str],
    system: Path | None,
    suite: str | None,
    progress: Callable[[PackageFormat, int, int], None] | None,
    keyring: Keyring | None,
    deep: bool,
    judge_all: bool,
) -> Report:
    universe = load(root, fmt, read_system(system, fmt), suite, keyring)
    files_checked = None
    if deep:
        files = list(universe.package_files())
        # A symlinked directory first: what is listed under it is not the repository's.
        problems = symlinked_directories(universe.root)
        problems += mismatches(universe.root, iter(files))
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise VerifyError(f"{problems[0]}{more}: the repository was changed after publishing")
        files_checked = len(files)
    trust = universe.trust
    unchecked = []
    if keyring is not None and fmt.signs_packages and packages_unchecked(root):
        # What dnf does too: the repository's setup says gpgcheck=0.
        unchecked.append(
            f"{universe.label}: package signatures not checked: the repository takes "
            "unsigned packages (published with --allow-unsigned-packages; its setup says "
            "gpgcheck=0)"
        )
    elif keyring is not None and fmt.signs_packages:
        listed = [universe.root / where for where, _ in universe.package_files()]
        if deep:
            listed += unlisted_packages(universe.root, set(listed), fmt.extension)
        checked = check_rpm_signatures(listed, keyring)
        trust += f"; {checked} package signature(s) by a key of {keyring.path}"
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
        trust=trust,
        files_checked=files_checked,
    )
    report.valid_until = universe.valid_until
    report.warnings += unchecked
    if not universe.has_file_lists:
        listing = fmt.file_lists
        report.warnings.append(
            f"{universe.label}: no {listing} index, so the file-conflict rule checks nothing"
        )
    unavailable = _unavailable(universe)
    judged: list[Violation] = []
    elsewhere: list[Violation] = []
    # The repository packages whose findings are judged; None: all of them.
    closure: set[int] | None = None
    # What the request lacked, when it could not be installed: its root causes are judged.
    lacked: set[int] = set()
    if install:
        resolution = resolve(universe, install)
        report.resolution = resolution
        if not judge_all:
            # A failed request brings nothing: its own failure is the finding.
            closure = resolution.world & {s.id for s in packages}
            report.closure = sorted(universe.name_evr(s) for s in closure)
        lacked = resolution.unprovided & unavailable
        request = " ".join(install)
        if lacked:
            names = ", ".join(sorted(universe.show_dep(dep) for dep in lacked))
            report.checked["installable"] += 1
            judged.append(
                Violation(
                    "installable",
                    request,
                    f"cannot install {request}: it needs {names}, which nothing provides",
                    packages=tuple(install),
                )
            )
        else:
            _hold(report, universe, index, resolution, request, tuple(install), judged)
    needed_by: dict[int, set[int]] = {dep: set() for dep in unavailable}
    for done, solvable in enumerate(packages, start=1):
        resolution = resolve(universe, solvable=solvable, steps=False)
        missed = resolution.unprovided & unavailable
        if missed:
            # One root cause for many failures: counted here, reported once below.
            report.checked["installable"] += 1
            for dep in missed:
                needed_by[dep].add(solvable.id)
        else:
            found = judged if closure is None or solvable.id in closure else elsewhere
            install_text = f"{solvable.name}={solvable.evr}"
            _hold(report, universe, index, resolution, install_text, (solvable.name,), found)
        if progress:
            progress(fmt, done, len(packages))
    # judged, elsewhere: a root cause is listed before the failures it explains
    causes: tuple[list[Violation], list[Violation]] = ([], [])
    for dep, violation in _unavailable_violations(universe, needed_by):
        in_scope = closure is None or dep in lacked or not closure.isdisjoint(needed_by[dep])
        causes[0 if in_scope else 1].append(violation)
    report.violations = causes[0] + judged
    report.notes = causes[1] + elsewhere
    return report


def _judge_expiry(report: Report, within_days: int, now: int | None) -> None:
    """``report.expiring`` and a warning when the indexes of ``report`` expire less than
    ``within_days`` after ``now``, or have expired: apt then refuses the repository
    ("Release file ... is expired") until it is published or refreshed."""
    until = report.valid_until
    now = int(time.time()) if now is None else now
    report.expiring = until is not None and until - now < within_days * DAY
    if until is None or not report.expiring:
        return
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))
    state = "expired" if until <= now else "expires"
    report.warnings.append(
        f"{report.repository}: {state} {when} (Valid-Until), within --expires-within "
        f"{within_days} days; apt refuses it from then on: publish into it or run gfxpack "
        "stream refresh"
    )


def _utc(moment: int | None) -> str | None:
    """``moment`` (Unix time) as ISO 8601 in UTC, as JSON readers parse it."""
    return None if moment is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def _apply(report: Report, waivers: Sequence[Waiver]) -> None:
    """Move the findings ``waivers`` accept to ``report.waived``; record the stale ones."""
    used: set[Waiver] = set()
    report.violations, waived = sort_out(report.violations, waivers, used, judged=True)
    report.notes, waived_notes = sort_out(report.notes, waivers, used, judged=False)
    report.waived = waived + waived_notes
    report.stale_waivers = [w for w in waivers if w not in used]


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


def _unavailable_violations(
    universe: Universe, needed_by: dict[int, set[int]]
) -> list[tuple[int, Violation]]:
    """One violation per missing requirement, in the repository's own spelling, with the
    dependency it is about: ``system packages not available: ocl-icd-libopencl1 (needed
    by 28 packages)``."""
    where = {
        True: f"not on the system ({universe.system_label}) nor in the repository",
        False: "not in the repository nor on the system",
    }
    found = []
    for dep, needing in sorted(needed_by.items(), key=lambda item: universe.show_dep(item[0])):
        if not needing:
            continue
        text = universe.show_dep(dep)
        system = not text.lstrip("(").startswith("amdrocm")
        noun = "package" if len(needing) == 1 else "packages"
        kind = "system packages" if system else "packages"
        message = f"{kind} not available: {text} (needed by {len(needing)} {noun}); {where[system]}"
        names = (text, *_names_in(universe, text))
        found.append((dep, Violation("installable", "every package", message, packages=names)))
    return found


def _names_in(universe: Universe, text: str) -> list[str]:
    """The package names a requirement mentions (``(a or b)`` mentions two)."""
    try:
        relations = universe.fmt.parse_field(text)
    except InvalidRelation:
        return []
    return [name for relation in relations for name in relation.names() if name != text]


def _hold(
    report: Report,
    universe: Universe,
    index: rules.ArchIndex,
    resolution: Resolution,
    install: str,
    names: tuple[str, ...],
    found: list[Violation],
) -> None:
    """Hold one resolution (of ``install``, the packages ``names``) to every rule,
    adding what it breaks to ``found``."""
    if not resolution.ok:
        report.checked["installable"] += 1
        found.append(
            Violation(
                "installable",
                install,
                f"cannot install {install}: " + " | ".join(resolution.problems),
                packages=names,
            )
        )
        return
    violations, applied = rules.check(universe, index, resolution, install)
    for rule in applied:
        report.checked[rule] += 1
    found += violations
