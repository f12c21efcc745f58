"""What RPM distributions expect of a binary package beyond its format (what rpmbuild
and the packaging guidelines add, and rpmlint checks):

- shared libraries installed with mode 0755 (rpm's find-debuginfo and
  ldconfig tooling look for executable .so files; Debian wants 0644, so only RPMs);
- ``/sbin/ldconfig`` run after install and after removal by a package that puts a
  versioned shared library (libNAME.so.N) in a library directory (``lib`` or
  ``lib64``: /usr/lib64, or a prefix's lib that an ld.so.conf.d file adds to the
  linker path), with ``Requires(post)`` and ``Requires(postun)`` on it;
- ``Requires(post)``/``Requires(postun)`` on update-alternatives for scriptlets
  that call it;
- a ``Packager`` and a ``%changelog`` entry (generated from the version, the
  maintainer and SOURCE_DATE_EPOCH);
- no system directory (``/usr``, ``/usr/lib`` ...) listed: the distribution's
  ``filesystem`` package owns those, some with other modes (Fedora's ``/usr/lib`` is
  0555), and rpm refuses a second owner that disagrees; a package installed at the
  distribution's own paths (``--install-prefix /``) lists only its files and its own
  directories (rpm creates missing parents when it installs).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import time

from gfxpack.formats.info import PackageInfo
from gfxpack.formats.payload import Entry, EntryKind

# rpm's dependency sense flags for scriptlet-time requirements (rpmds.h).
SCRIPT_POST, SCRIPT_PREUN, SCRIPT_POSTUN = 1 << 10, 1 << 11, 1 << 12
LDCONFIG = "/sbin/ldconfig"
# A scriptlet that only runs ldconfig is written as rpmbuild's ``%post -p /sbin/ldconfig``:
# ldconfig is the interpreter, no shell is started.
LDCONFIG_ONLY = f"{LDCONFIG}\n"
# RPMFILE_CONFIG | RPMFILE_NOREPLACE: a file under /etc is %config(noreplace), so an
# administrator's change survives an upgrade.
CONFIG_NOREPLACE = 1 | 16
ALTERNATIVES = "/usr/sbin/update-alternatives"
# A versioned shared library in a library directory (what rpmlint's check matches).
_LINKER_LIBRARY = re.compile(r".*/lib(64)?/lib[^/]+\.so\.[0-9][^/]*")
_SHARED_LIBRARY = re.compile(r"lib[^/]*\.so(\.[0-9]+)*")
_SCRIPT_FLAGS = {"postinst": SCRIPT_POST, "prerm": SCRIPT_PREUN, "postrm": SCRIPT_POSTUN}
# The directories a distribution's filesystem package owns: rpmlint's STANDARD_DIRS
# (rpmlint 2.4, checks/FilesCheck.py, "kept in sync with the filesystem package"), whose
# standard-dir-owned-by-package error is what listing one of them costs.
# fmt: off
SYSTEM_DIRECTORIES = frozenset(
    ["/", "/bin", "/boot", "/etc", "/etc/X11", "/etc/opt", "/etc/profile.d", "/etc/skel",
     "/etc/xinetd.d", "/home", "/lib", "/lib/modules", "/lib64", "/media", "/mnt",
     "/mnt/cdrom", "/mnt/disk", "/mnt/floppy", "/opt", "/proc", "/root", "/run", "/sbin",
     "/selinux", "/srv", "/sys", "/tmp", "/usr", "/usr/X11R6", "/usr/bin", "/usr/bin/X11",
     "/usr/etc", "/usr/games", "/usr/include", "/usr/lib", "/usr/lib/X11", "/usr/lib/games",
     "/usr/lib/gcc-lib", "/usr/lib/menu", "/usr/lib64", "/usr/lib64/gcc-lib", "/usr/local",
     "/usr/sbin", "/usr/share", "/usr/share/dict", "/usr/share/doc", "/usr/share/icons",
     "/usr/share/info", "/usr/share/man", "/usr/share/misc", "/usr/src", "/usr/tmp", "/var",
     "/var/cache", "/var/db", "/var/lib", "/var/lib/games", "/var/lib/misc", "/var/lib/rpm",
     "/var/local", "/var/log", "/var/mail", "/var/nis", "/var/opt", "/var/preserve",
     "/var/spool", "/var/spool/mail", "/var/tmp"]
    + [f"/usr/X11R6/{d}" for d in ("bin", "doc", "include", "lib", "lib64", "man")]
    + [f"/usr/local/{d}" for d in ("bin", "doc", "etc", "games", "info", "lib", "lib64",
                                   "man", "sbin", "share", "share/man", "src")]
    + [f"{man}/man{section}" for man in ("/usr/X11R6/man", "/usr/local/man",
                                         "/usr/local/share/man", "/usr/share/man")
       for section in "123456789n"]
)
# fmt: on


def is_shared_library(entry: Entry) -> bool:
    return entry.kind is EntryKind.FILE and bool(
        _SHARED_LIBRARY.fullmatch(posixpath.basename(entry.path))
    )


def ships_linker_libraries(entries: tuple[Entry, ...]) -> bool:
    return any(e.kind is EntryKind.FILE and _LINKER_LIBRARY.fullmatch(e.path) for e in entries)


def file_flags(entry: Entry) -> int:
    return (
        CONFIG_NOREPLACE if entry.kind is EntryKind.FILE and entry.path.startswith("/etc/") else 0
    )


def _with_ldconfig(script: str | None) -> str:
    if not script:
        return LDCONFIG_ONLY
    if script.startswith("#!"):
        first, _, rest = script.partition("\n")
        return f"{first}\n{LDCONFIG}\n{rest}"
    return f"{LDCONFIG}\n{script}"


def apply(info: PackageInfo) -> PackageInfo:
    """``info`` as an RPM should carry it: library modes, ldconfig scriptlets, no system
    directories."""
    entries = tuple(
        dataclasses.replace(e, mode=0o755) if is_shared_library(e) else e
        for e in info.entries
        if not (e.kind is EntryKind.DIR and e.path in SYSTEM_DIRECTORIES)
    )
    scripts = dict(info.scripts)
    if ships_linker_libraries(entries):
        for name in ("postinst", "postrm"):
            scripts[name] = _with_ldconfig(scripts.get(name))
    return dataclasses.replace(info, entries=entries, scripts=scripts)


def script_requirements(info: PackageInfo) -> list[tuple[str, int]]:
    """(name, sense flags) of what the scriptlets run: Requires(post) and friends."""
    wanted: dict[str, int] = {}
    for script, flag in _SCRIPT_FLAGS.items():
        text = info.scripts.get(script, "")
        if LDCONFIG in text:
            wanted[LDCONFIG] = wanted.get(LDCONFIG, 0) | flag
        if "update-alternatives" in text:
            wanted[ALTERNATIVES] = wanted.get(ALTERNATIVES, 0) | flag
    return sorted(wanted.items())


def changelog(info: PackageInfo) -> tuple[tuple[int, str, str], ...]:
    """The %changelog entries (time, author line, text): the given ones, or one generated
    from the version, the maintainer and SOURCE_DATE_EPOCH. rpm keeps a day: the
    generated time is noon UTC of that date, never after the build time."""
    if info.changelog:
        return info.changelog
    day = info.mtime - info.mtime % 86400
    when = min(day + 12 * 3600, info.mtime) if info.mtime else 0
    author = info.maintainer or "gfxpack"
    stamp = time.strftime("%Y-%m-%d", time.gmtime(when))
    return (
        (
            when,
            f"{author} - {info.version}-{info.release}",
            f"- {info.name} {info.version}-{info.release}, packaged by gfxpack on {stamp}",
        ),
    )
