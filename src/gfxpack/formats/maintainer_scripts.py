"""The maintainer scripts of each format: update-alternatives registrations written as
dpkg and rpm run them (gfxpack/alternatives.py decides which packages get which ones).

DEB scripts honour ``DPKG_ROOT`` and ask dpkg-query whether a sibling stays
installed; RPM scripts read the relocated prefix from ``RPM_INSTALL_PREFIX0`` and
ask rpm.
"""

from __future__ import annotations

import shlex
import textwrap

# (link, name, path) of one update-alternatives slave
Slave = tuple[str, str, str]
# (group, link, path, slaves) of one update-alternatives registration
Alternative = tuple[str, str, str, list[Slave]]


def _install_commands(
    alternatives: list[Alternative], rank: int, ua: str, root: str = ""
) -> list[str]:
    """One registration per alternative, each only when its path is installed:
    update-alternatives refuses a missing path, and a tool such as MIOpenDriver comes
    from a package the install may not bring (a per-arch SDK without the DNN library).
    ``root`` is prepended to the path tested (dpkg's DPKG_ROOT)."""
    lines = []
    for group, link, path, slaves in alternatives:
        command = f"if [ -e {root}{path} ]; then\n    {ua} --install {link} {group} {path} {rank}"
        for slave_link, slave_name, slave_path in slaves:
            command += f" \\\n        --slave {slave_link} {slave_name} {slave_path}"
        lines.append(command + "\nfi")
    return lines


def _remove_commands(alternatives: list[Alternative], ua: str) -> list[str]:
    return [f"{ua} --remove {group} {path} || true" for group, _, path, _ in alternatives]


def deb_scripts(
    alternatives: list[Alternative],
    prefix: str,
    rank: int,
    siblings: list[str],
    triggered: bool = False,
) -> dict[str, str]:
    """postinst and prerm; they honour DPKG_ROOT. ``triggered``: the package has file
    triggers, and dpkg's ``postinst triggered`` registers again, for the links whose
    targets other packages brought since."""
    ua = 'update-alternatives ${DPKG_ROOT:+--root "$DPKG_ROOT"}'
    commands = _install_commands(alternatives, rank, ua, root='"${DPKG_ROOT:-}"')
    install = textwrap.indent("\n".join(commands), "    ").lstrip()
    remove = "\n        ".join(_remove_commands(alternatives, ua))
    others = " ".join(siblings) or '""'
    when = '[ "$1" = configure ]' + (' || [ "$1" = triggered ]' if triggered else "")
    postinst = f"""#!/bin/sh
set -e
PREFIX={shlex.quote(prefix)}
if {when}; then
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


def rpm_scripts(
    alternatives: list[Alternative],
    prefix: str,
    rank: int,
    siblings: list[str],
    triggered: bool = False,
) -> dict[str, str]:
    """%post and %postun (as postinst and postrm); the prefix may be relocated.
    ``triggered``: also the body of the %transfiletriggerin scriptlet, which registers
    again once the transaction has brought the links' targets."""
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
    scripts = {"postinst": post, "postrm": postun}
    if triggered:
        scripts["transfiletriggerin"] = post
    return scripts
