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
# (link, group, pattern): slaves whose name matches the shell case ``pattern`` were
# registered in ``group`` by older packages and are groups of their own now
Promotion = tuple[str, str, str]

# Moves the slaves a Promotion names out of every choice of its group (this release's
# own and those of releases beside it), into groups of their own. A slave stays in a
# group while any choice carries it, so every choice is done before any slave becomes
# a master. A choice whose path is gone is left alone: update-alternatives drops it.
# No tool but update-alternatives and the shell's builtins: the scripts run in minimal
# roots.
_PROMOTE = """# Packages by older gfxpack releases registered, as slaves, links that are groups of
# their own now; update-alternatives makes no slave a master. So each choice carrying
# such a slave is registered again without it (same priority, same other slaves),
# then each such slave is registered as a group, at that priority.
promote_slaves() {
    # $1 the group's link, $2 the group, $3 the pattern of the slaves to promote.
    # 2>&1, not 2>/dev/null: a root rpm installs into may have no /dev yet, and the
    # messages match none of the lines read below.
    query=$(%(ua)s --query "$2" 2>&1) || return 0
    promoted=$(printf '%%s\\n' "$query" | while IFS= read -r line; do
        case $line in
            "Alternative: "*) choice=${line#Alternative: } ;;
            "Priority: "*)
                if [ -e %(root)s"$choice" ]; then
                    drop_slaves "$1" "$2" "$3" "$choice" "${line#Priority: }"
                fi ;;
        esac
    done)
    printf '%%s\\n' "$promoted" | while IFS=' ' read -r name rank choice; do
        if [ -n "$name" ]; then
            %(ua)s --install "$(slave_link "$name")" "$name" "$choice" "$rank"
        fi
    done
}

drop_slaves() {
    # Registers choice $4 of group $2 again at priority $5 without the slaves matching
    # $3, and prints "name priority choice" of each one dropped.
    # A pipe, no here-document: a shell may want a /tmp for one, and a fresh root may
    # have none.
    link=$1 group=$2 pattern=$3 choice=$4 rank=$5 dropped=""
    slave_lines "$choice" | {
        set --
        while IFS=' ' read -r name path; do
            # shellcheck disable=SC2254 # $pattern unquoted: a pattern, not a literal
            case $name in
                "") ;;
                $pattern) dropped=yes; printf '%%s %%s %%s\\n' "$name" "$rank" "$choice" ;;
                *) set -- "$@" --slave "$(slave_link "$name")" "$name" "$path" ;;
            esac
        done
        if [ -n "$dropped" ]; then
            %(ua)s --install "$link" "$group" "$choice" "$rank" "$@" >&2
        fi
    }
}

slave_lines() {
    # The "name path" slave lines of choice $1 in $query; the group's own block ($1
    # empty) gives "name link" instead.
    block=""
    printf '%%s\\n' "$query" | while IFS= read -r line; do
        case $line in
            "Alternative: "*) block=${line#Alternative: } ;;
            " "*) if [ "$block" = "$1" ]; then printf '%%s\\n' "${line# }"; fi ;;
        esac
    done
}

slave_link() {
    # The link of slave $1 of the group in $query.
    slave_lines "" | while IFS=' ' read -r name link; do
        if [ "$name" = "$1" ]; then printf '%%s\\n' "$link"; fi
    done
}

"""


def _promotion(promotions: list[Promotion], ua: str, root: str = "") -> tuple[str, list[str]]:
    """The shell functions of :data:`_PROMOTE`, to define at the top of a script, and
    a call for each promotion, to run before the registrations; nothing without
    promotions."""
    if not promotions:
        return "", []
    calls = [
        f"promote_slaves {shlex.quote(link)} {shlex.quote(group)} {shlex.quote(pattern)}"
        for link, group, pattern in promotions
    ]
    return _PROMOTE % {"ua": ua, "root": root}, calls


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
    promotions: list[Promotion] | None = None,
) -> dict[str, str]:
    """postinst and prerm; they honour DPKG_ROOT. ``triggered``: the package has file
    triggers, and dpkg's ``postinst triggered`` registers again, for the links whose
    targets other packages brought since. ``promotions``: slaves older packages
    registered that are groups of their own now (:data:`Promotion`)."""
    ua = 'update-alternatives ${DPKG_ROOT:+--root "$DPKG_ROOT"}'
    root = '"${DPKG_ROOT:-}"'
    functions, calls = _promotion(promotions or [], ua, root)
    commands = calls + _install_commands(alternatives, rank, ua, root)
    install = textwrap.indent("\n".join(commands), "    ").lstrip()
    remove = "\n        ".join(_remove_commands(alternatives, ua))
    others = " ".join(siblings) or '""'
    when = '[ "$1" = configure ]' + (' || [ "$1" = triggered ]' if triggered else "")
    postinst = f"""#!/bin/sh
set -e
PREFIX={shlex.quote(prefix)}
{functions}if {when}; then
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
    promotions: list[Promotion] | None = None,
) -> dict[str, str]:
    """%post and %postun (as postinst and postrm); the prefix may be relocated.
    ``triggered``: also the body of the %transfiletriggerin scriptlet, which registers
    again once the transaction has brought the links' targets. ``promotions`` as for
    :func:`deb_scripts`."""
    ua = "update-alternatives"
    functions, calls = _promotion(promotions or [], ua)
    install = "\n".join(calls + _install_commands(alternatives, rank, ua))
    remove = "\n    ".join(_remove_commands(alternatives, ua))
    others = " ".join(siblings) or '""'
    # RPM_INSTALL_PREFIX0 is the prefix after relocation (--prefix / --relocate).
    head = f'PREFIX="${{RPM_INSTALL_PREFIX0:-{prefix}}}"'
    post = f"""{head}
{functions}{install}
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
