"""Maintainer scripts for ``Postinstall`` packages (spec packaging.md section 10).

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

from collections.abc import Callable
from itertools import takewhile

from gfxpack.config import PackageSpec
from gfxpack.formats.maintainer_scripts import Alternative, Slave, deb_scripts, rpm_scripts
from gfxpack.formats.package_format import PackageFormat
from gfxpack.plan import Kind, PlannedPackage, ReleasePlan
from gfxpack.plan.naming import version_xy

_ROCM_DIRS = ("bin", "lib", "include", "llvm", "amdgcn", "libexec", "share")
_TOOLS = ("hipcc", "hipconfig", "amdclang", "amdclang++", "rocminfo", "amd-smi")
_DEVEL_TOOLS = ("MIOpenDriver",)


def priority(version: str, epoch: int) -> int:
    """(((major-3)*14+minor)*14+patch)*10^6 + minutes since 1.6e9 s (upstream's formula).

    Each component counts by its leading digits only: the patch of ``7.14.0~dev20260625``
    is 0, not 20260625, which would outrank every release and overflow the 32-bit
    priority update-alternatives accepts."""
    parts = [int("".join(takewhile(str.isdigit, p)) or 0) for p in version.split(".")[:3]]
    major, minor, patch = [*parts, 0, 0, 0][:3]
    return (((major - 3) * 14 + minor) * 14 + patch) * 1_000_000 + max(
        0, epoch - 1_600_000_000
    ) // 60


def _alternatives(spec: PackageSpec, prefix_var: str, major: str) -> list[Alternative]:
    """(group, link, path, slaves) for the base; paths use a shell variable for the prefix."""
    if spec.is_devel:
        return [
            (f"rocm-{tool.lower()}", f"/usr/bin/{tool}", f"{prefix_var}/bin/{tool}", [])
            for tool in _DEVEL_TOOLS
        ]
    slaves: list[Slave] = [(f"/opt/rocm/core-{major}", f"rocm-core-{major}", prefix_var)]
    slaves += [(f"/opt/rocm/{d}", f"rocm-{d}", f"{prefix_var}/{d}") for d in _ROCM_DIRS]
    slaves += [(f"/usr/bin/{t}", f"rocm-{t}", f"{prefix_var}/bin/{t}") for t in _TOOLS]
    return [("rocm-core", "/opt/rocm/core", prefix_var, slaves)]


def scripts_for(
    plan: ReleasePlan, package: PlannedPackage, fmt: PackageFormat, epoch: int
) -> dict[str, str]:
    """The maintainer scripts of one package, or none."""
    spec = plan.specs[package.base]
    if not spec.postinstall or package.kind is Kind.NON_VERSIONED:
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
        _alternatives(spec, '"$PREFIX"', major), plan.prefix, rank, siblings
    )


# format name -> the update-alternatives scripts of a Postinstall package in it
_MAINTAINER_SCRIPTS: dict[
    str, Callable[[list[Alternative], str, int, list[str]], dict[str, str]]
] = {
    "deb": deb_scripts,
    "rpm": rpm_scripts,
}
