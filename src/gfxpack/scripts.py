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

import shlex

from gfxpack.config import PackageSpec
from gfxpack.plan import Kind, PlannedPackage, ReleasePlan
from gfxpack.plan.naming import version_xy

_ROCM_DIRS = ("bin", "lib", "include", "llvm", "amdgcn", "libexec", "share")
_TOOLS = ("hipcc", "hipconfig", "amdclang", "amdclang++", "rocminfo", "amd-smi")
_DEVEL_TOOLS = ("MIOpenDriver",)


def priority(version: str, epoch: int) -> int:
    """(((major-3)*14+minor)*14+patch)*10^6 + minutes since 1.6e9 s (upstream's formula)."""
    parts = [int("".join(ch for ch in p if ch.isdigit()) or 0) for p in version.split(".")[:3]]
    major, minor, patch = [*parts, 0, 0, 0][:3]
    return (((major - 3) * 14 + minor) * 14 + patch) * 1_000_000 + max(
        0, epoch - 1_600_000_000
    ) // 60


def _alternatives(
    spec: PackageSpec, prefix_var: str, major: str
) -> list[tuple[str, str, str, list]]:
    """(group, link, path, slaves) for the base; paths use a shell variable for the prefix."""
    if spec.is_devel:
        return [
            (f"rocm-{tool.lower()}", f"/usr/bin/{tool}", f"{prefix_var}/bin/{tool}", [])
            for tool in _DEVEL_TOOLS
        ]
    slaves = [(f"/opt/rocm/core-{major}", f"rocm-core-{major}", prefix_var)]
    slaves += [(f"/opt/rocm/{d}", f"rocm-{d}", f"{prefix_var}/{d}") for d in _ROCM_DIRS]
    slaves += [(f"/usr/bin/{t}", f"rocm-{t}", f"{prefix_var}/bin/{t}") for t in _TOOLS]
    return [("rocm-core", "/opt/rocm/core", prefix_var, slaves)]


def scripts_for(plan: ReleasePlan, package: PlannedPackage, fmt: str, epoch: int) -> dict[str, str]:
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
    if fmt == "deb":
        return _deb_scripts(_alternatives(spec, '"$PREFIX"', major), plan.prefix, rank, siblings)
    return _rpm_scripts(_alternatives(spec, '"$PREFIX"', major), plan.prefix, rank, siblings)


def _install_commands(alternatives, rank: int, ua: str) -> list[str]:
    lines = []
    for group, link, path, slaves in alternatives:
        command = f"{ua} --install {link} {group} {path} {rank}"
        for slave_link, slave_name, slave_path in slaves:
            command += f" \\\n    --slave {slave_link} {slave_name} {slave_path}"
        lines.append(command)
    return lines


def _remove_commands(alternatives, ua: str) -> list[str]:
    return [f"{ua} --remove {group} {path} || true" for group, _, path, _ in alternatives]


def _deb_scripts(alternatives, prefix: str, rank: int, siblings: list[str]) -> dict[str, str]:
    ua = 'update-alternatives ${DPKG_ROOT:+--root "$DPKG_ROOT"}'
    install = "\n    ".join(_install_commands(alternatives, rank, ua))
    remove = "\n        ".join(_remove_commands(alternatives, ua))
    others = " ".join(siblings) or '""'
    postinst = f"""#!/bin/sh
set -e
PREFIX={shlex.quote(prefix)}
if [ "$1" = configure ]; then
    {install}
fi
exit 0
"""
    prerm = f"""#!/bin/sh
set -e
PREFIX={shlex.quote(prefix)}
if [ "$1" = remove ] || [ "$1" = deconfigure ]; then
    # Another installed variant of this release keeps the alternatives.
    kept=""
    for other in {others}; do
        if dpkg-query ${{DPKG_ROOT:+--root "$DPKG_ROOT"}} -W -f='${{db:Status-Abbrev}}' "$other" \\
            2>/dev/null | grep -q '^[ih]i'; then
            kept=yes
        fi
    done
    if [ -z "$kept" ]; then
        {remove}
    fi
fi
exit 0
"""
    return {"postinst": postinst, "prerm": prerm}


def _rpm_scripts(alternatives, prefix: str, rank: int, siblings: list[str]) -> dict[str, str]:
    ua = "update-alternatives"
    install = "\n".join(_install_commands(alternatives, rank, ua))
    remove = "\n    ".join(_remove_commands(alternatives, ua))
    others = " ".join(siblings) or '""'
    # RPM_INSTALL_PREFIX0 is the prefix after relocation (--prefix / --relocate).
    head = f'PREFIX="${{RPM_INSTALL_PREFIX0:-{prefix}}}"'
    post = f"""{head}
{install}
exit 0
"""
    # Deregistered after removal (%postun), as the RPM packaging guidelines and rpmlint
    # expect: the files are gone by then, the links are what is left to clean up.
    postun = f"""{head}
# $1 is how many instances remain: 0 on removal, 1 on upgrade.
if [ "$1" = 0 ]; then
    kept=""
    for other in {others}; do
        rpm -q --quiet "$other" && kept=yes
    done
    if [ -z "$kept" ]; then
    {remove}
    fi
fi
exit 0
"""
    return {"postinst": post, "postrm": postun}
