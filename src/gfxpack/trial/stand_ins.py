"""Stand-ins: the system packages a release depends on, as empty packages gfxpack writes
(the system package's name, version, architecture, Provides and Depends, no files),
installed into the root first so that the client resolves the release against them as
on a real machine."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from gfxpack.formats import DEB, RPM, PackageFormat, PackageInfo
from gfxpack.repo.debfile import ARCHITECTURE, PACKAGE_NAME, VERSION
from gfxpack.repo.rpmfile import RPM_ARCH, RPM_NAME, RPM_VERSION
from gfxpack.trial.tools import TrialError
from gfxpack.verify.system import SystemPackage


@dataclass(frozen=True, slots=True)
class StandIn:
    """An empty package in the root in place of the system package of its name."""

    name: str
    version: str
    provides: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "provides": list(self.provides)}


class Accepted(NamedTuple):
    """What a format's package manager (``tool``) accepts as a package's fields."""

    tool: str
    name: re.Pattern[str]
    version: re.Pattern[str]
    release: re.Pattern[str]
    arch: re.Pattern[str]


# format name -> what its package manager accepts: a system list naming anything else
# (a path, an option) makes no stand-in
ACCEPTED = {
    DEB.name: Accepted("dpkg", PACKAGE_NAME, VERSION, VERSION, ARCHITECTURE),
    RPM.name: Accepted("rpm", RPM_NAME, RPM_VERSION, RPM_VERSION, RPM_ARCH),
}


def stand_ins(
    fmt: PackageFormat, packages: Sequence[SystemPackage], out: Path, label: str = "system list"
) -> list[Path]:
    """Write an empty package of ``fmt`` into ``out`` for each system package: its name,
    version, architecture, Provides and Depends, no files; the files written."""
    return write_stand_ins(fmt, stand_in_infos(fmt, packages, label), out)


def stand_in_infos(
    fmt: PackageFormat, packages: Sequence[SystemPackage], label: str
) -> list[PackageInfo]:
    """What :func:`write_stand_ins` writes for ``packages`` (of the system list
    ``label``); checked before anything is written."""
    return [stand_in_info(fmt, package, label) for package in unique(packages)]


def reported(fmt: PackageFormat, packages: Sequence[SystemPackage]) -> list[StandIn]:
    """The stand-ins for ``packages`` as the report lists them."""
    return [
        StandIn(p.name, p.version, tuple(fmt.render_relation(r) for r in p.provides))
        for p in unique(packages)
    ]


def unique(packages: Sequence[SystemPackage]) -> list[SystemPackage]:
    """The first package of each name: one a dpkg status lists for two architectures
    (multiarch) stands in once."""
    first: dict[str, SystemPackage] = {}
    for package in packages:
        first.setdefault(package.name, package)
    return list(first.values())


def write_stand_ins(fmt: PackageFormat, infos: Sequence[PackageInfo], out: Path) -> list[Path]:
    """Each of ``infos`` written as a package of ``fmt`` into ``out``; the files."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for info in infos:
        path = out / fmt.filename(info)
        with open(path, "xb") as file:
            fmt.write(info, file)
        written.append(path)
    return written


def stand_in_info(fmt: PackageFormat, package: SystemPackage, label: str) -> PackageInfo:
    """The empty package of ``fmt`` standing in for ``package``; one error naming the
    field when its package manager would not accept it."""
    # Without a revision (Debian) or release (RPM), V is written V-0: dpkg reads a missing
    # revision as 0, and rpm compares releases only when both sides have one.
    version, _, release = package.version.rpartition("-")
    if not version:
        version, release = package.version, "0"
    arch = fmt.noarch if package.arch in ("all", "noarch") else package.arch
    accepted = ACCEPTED[fmt.name]
    for what, value, grammar in (
        ("name", package.name, accepted.name),
        ("version", version, accepted.version),
        ("release", release, accepted.release),
        ("architecture", arch, accepted.arch),
    ):
        if not grammar.match(value):
            raise TrialError(
                f"{label}: package {package.name!r}: {what} {value!r} is not one "
                f"{accepted.tool} accepts, so no stand-in can be made for it"
            )
    return PackageInfo(
        name=package.name,
        version=version,
        release=release,
        arch=arch,
        summary=f"stand-in for the system package {package.name} (gfxpack try-install)",
        description="An empty package in place of the system package of its name, so that "
        "packages depending on it install into a throwaway root.",
        maintainer="gfxpack try-install <try-install@localhost>",
        license="MIT",
        provides=tuple(fmt.render_relation(r) for r in package.provides),
        depends=tuple(fmt.render_relation(r) for r in package.depends),
        prefix="/",
    )
