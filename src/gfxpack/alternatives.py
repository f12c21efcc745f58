"""Maintainer scripts for ``Postinstall`` packages (spec packaging.md section 10), and
the file triggers that run their registration again (gfxpack.formats.triggers).

``amdrocm-core`` registers the release's prefix with update-alternatives:
``/opt/rocm/core`` and ``/opt/rocm/core-<major>`` point at it, as do
``/opt/rocm/{bin,lib,...}`` and the compiler drivers in ``/usr/bin``;
``amdrocm-core-devel`` registers ``/usr/bin/MIOpenDriver``. The newest release
wins by priority.

The scripts go on every versioned variant of such a base (each arch meta and
the generic meta), so removal is careful: it deregisters only when no other
variant of the same X.Y stays installed, and every step tolerates having
been done already. DEB scripts honour ``DPKG_ROOT``; RPM scripts read the
relocated prefix from ``RPM_INSTALL_PREFIX0``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

from gfxpack.config import PackageSpec
from gfxpack.errors import GfxpackError
from gfxpack.formats.maintainer_scripts import (
    Alternative,
    Promotion,
    Slave,
    deb_scripts,
    rpm_scripts,
)
from gfxpack.formats.package_format import PackageFormat
from gfxpack.formats.triggers import with_prefix
from gfxpack.plan import Kind, PlannedPackage, ReleasePlan
from gfxpack.plan.naming import version_xy

_ROCM_DIRS = ("bin", "lib", "include", "llvm", "amdgcn", "libexec", "share")
_TOOLS = ("hipcc", "hipconfig", "amdclang", "amdclang++", "rocminfo", "amd-smi")
_DEVEL_TOOLS = ("MIOpenDriver",)


class UnplaceableVersion(GfxpackError, ValueError):
    """A version the priority scheme cannot place below 2^31 in order."""


# update-alternatives (dpkg's and chkconfig's) takes a C int: at most 2^31 - 1.
MAX_PRIORITY = 2**31 - 1
# Bits of each field, most significant first: 6 + 6 + 5 + 14 = 31.
_MAJOR_BITS, _MINOR_BITS, _PATCH_BITS, _STAGE_BITS = 6, 6, 5, 14
# Stage, the last field: the day of a nightly or dev build (days since 2020-01-01),
# then the release candidates (rc0 ... rc254), then the release itself, on top.
_STAGES = 1 << _STAGE_BITS
_RELEASE_STAGE = _STAGES - 1
_CANDIDATES = 255
_FIRST_CANDIDATE = _RELEASE_STAGE - _CANDIDATES
_DAY_ZERO = date(2020, 1, 1)
_LAST_DAY = _DAY_ZERO + timedelta(days=_FIRST_CANDIDATE - 1)
_EPOCH_OF_DAY_ZERO = 1_577_836_800  # 2020-01-01T00:00:00Z
_NUMBERS = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(.*)$", re.DOTALL)
# TheRock's prerelease suffixes: ~rcN (RPM), ~preN (DEB), rcN (Python).
_CANDIDATE = re.compile(r"^[~.]?(?:rc|pre)(\d+)$", re.IGNORECASE)
# A nightly's or dev build's date: ~YYYYMMDD, ~devYYYYMMDD, ~YYYYMMDDg<hash>, aYYYYMMDD.
_DATE = re.compile(r"(?<!\d)(\d{8})(?!\d)")


def priority(version: str, epoch: int) -> int:
    """The update-alternatives priority of a release: newer version, higher priority.

    ``((major*64 + minor)*32 + patch)*16384 + stage`` (spec packaging.md section 10;
    "update-alternatives priorities" in docs/explanation/how-it-works.md): majors and minors up to
    63, patches up to 31, so every value fits update-alternatives' 32-bit signed
    priority. The stage orders builds of one X.Y.Z as dpkg orders their versions:
    nightlies and dev builds by their date (from the version, ``7.14.0~20260625``;
    else the build's ``epoch``), then release candidates (``~rc2``, ``~pre2``), then
    the release. A version outside those bounds is an error, never a wrapped value."""
    numbers = _NUMBERS.match(version)
    if not numbers:
        raise UnplaceableVersion(
            f"ROCm version {version!r}: expected X.Y or X.Y.Z, such as 10.1.0, for the "
            "update-alternatives priority"
        )
    major, minor, patch = (int(n or 0) for n in numbers.group(1, 2, 3))
    limits = (("major", major, _MAJOR_BITS), ("minor", minor, _MINOR_BITS))
    for what, value, bits in (*limits, ("patch", patch, _PATCH_BITS)):
        if value >= 1 << bits:
            raise UnplaceableVersion(
                f"ROCm version {version!r}: the {what} {value} is above {(1 << bits) - 1}, "
                "the largest the update-alternatives priority can order"
            )
    stage = _stage(version, numbers.group(4), epoch)
    rank = (((major << _MINOR_BITS) + minor) << _PATCH_BITS) + patch
    return (rank << _STAGE_BITS) + stage


def _stage(version: str, suffix: str, epoch: int) -> int:
    """Where a build of one X.Y.Z stands among the others (see :func:`priority`)."""
    if not suffix:
        return _RELEASE_STAGE
    if candidate := _CANDIDATE.match(suffix):
        number = int(candidate.group(1))
        if number >= _CANDIDATES:
            raise UnplaceableVersion(
                f"ROCm version {version!r}: release candidate {number} is above "
                f"{_CANDIDATES - 1}, the largest the update-alternatives priority can order"
            )
        return _FIRST_CANDIDATE + number
    if dated := _DATE.search(suffix):
        try:
            day = datetime.strptime(dated.group(1), "%Y%m%d").date()
        except ValueError:
            raise UnplaceableVersion(
                f"ROCm version {version!r}: {dated.group(1)} is no date (YYYYMMDD expected)"
            ) from None
        if not _DAY_ZERO <= day <= _LAST_DAY:
            raise UnplaceableVersion(
                f"ROCm version {version!r}: the date {day} is outside {_DAY_ZERO} to "
                f"{_LAST_DAY}, the builds the update-alternatives priority can order"
            )
        return (day - _DAY_ZERO).days
    # A dev build whose version carries no date (7.14.0.dev0+abc): the build's date,
    # kept within the nightlies' days.
    built = (epoch - _EPOCH_OF_DAY_ZERO) // 86400
    return min(max(built, 0), _FIRST_CANDIDATE - 1)


def _alternatives(spec: PackageSpec, prefix_var: str, major: str) -> list[Alternative]:
    """(group, link, path, slaves) for the base; paths use a shell variable for the prefix.

    ``/opt/rocm/core-<major>`` is a group of its own, at the same priority, never a
    slave of ``rocm-core``: a slave follows the group's winner, so with 10.1 and 14.0
    installed, 14.0 winning ``rocm-core`` would take away ``/opt/rocm/core-10``."""
    if spec.is_devel:
        return [
            (f"rocm-{tool.lower()}", f"/usr/bin/{tool}", f"{prefix_var}/bin/{tool}", [])
            for tool in _DEVEL_TOOLS
        ]
    slaves: list[Slave] = [(f"/opt/rocm/{d}", f"rocm-{d}", f"{prefix_var}/{d}") for d in _ROCM_DIRS]
    slaves += [(f"/usr/bin/{t}", f"rocm-{t}", f"{prefix_var}/bin/{t}") for t in _TOOLS]
    return [
        ("rocm-core", "/opt/rocm/core", prefix_var, slaves),
        (f"rocm-core-{major}", f"/opt/rocm/core-{major}", prefix_var, []),
    ]


def _promotions(spec: PackageSpec) -> list[Promotion]:
    """Packages by older gfxpack releases registered ``rocm-core-<major>`` as a slave of
    ``rocm-core``; the scripts move it into its own group first (see
    gfxpack.formats.maintainer_scripts)."""
    return [] if spec.is_devel else [("/opt/rocm/core", "rocm-core", "rocm-core-[0-9]*")]


def scripts_for(
    plan: ReleasePlan, package: PlannedPackage, fmt: PackageFormat, epoch: int
) -> dict[str, str]:
    """The maintainer scripts of one package, or none."""
    spec = plan.specs[package.base]
    if not spec.registers_alternatives or package.kind is Kind.NON_VERSIONED:
        return {}
    xy = version_xy(plan.rocm_version)
    major = xy.split(".")[0]
    rank = priority(plan.rocm_version, epoch)
    siblings = sorted(
        p.name(fmt)
        for p in plan.family(package.base)
        if p.kind is not Kind.NON_VERSIONED and p.key != package.key
    )
    return _MAINTAINER_SCRIPTS[fmt.name](
        _alternatives(spec, '"$PREFIX"', major),
        plan.prefix,
        rank,
        siblings,
        bool(spec.triggers(fmt)),
        _promotions(spec),
    )


def triggers_for(plan: ReleasePlan, package: PlannedPackage, fmt: PackageFormat) -> tuple[str, ...]:
    """The file triggers of one package in ``fmt`` (gfxpack.formats.triggers), on the
    packages that carry the registration scripts, ``{prefix}`` spelled out."""
    spec = plan.specs[package.base]
    if not spec.registers_alternatives or package.kind is Kind.NON_VERSIONED:
        return ()
    return tuple(with_prefix(trigger, plan.prefix) for trigger in spec.triggers(fmt))


# format name -> the update-alternatives scripts of a Postinstall package in it
_MAINTAINER_SCRIPTS: dict[
    str,
    Callable[[list[Alternative], str, int, list[str], bool, list[Promotion]], dict[str, str]],
] = {
    "deb": deb_scripts,
    "rpm": rpm_scripts,
}
