"""Which layer each file of an image's root goes into: by the package that owns it.

The root is snapshotted after the base is unpacked and again after the install. Every
file a newly installed package owns (its package database says so) goes to that
package's layer; what else is new or changed (the package database itself, the
alternatives the scripts registered, ld.so.cache) goes on top, with a whiteout for
each base file the install removed. By kind (the default):

- one *host* layer: every arch-independent package's files. They are the same bytes
  in every arch's image of a release, so the layer has the same digest in each, and
  pulling a second arch's image downloads only its device and top layers;
- one *device* layer: the arch's device packages' files (``amdrocm-blas8.2-gfx942``);
- the *top* layer.

By family, each package family (``amdrocm-blas``: its name without version and arch)
gets its own host and device layers, which a later release reuses where the family's
packages did not change, at the price of more layers per image.

What the clients write that differs from run to run is left out: their logs, lock
files, backups of the database (``status-old``), caches and scratch directories.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gfxpack.image.install import Installed
from gfxpack.safe_tree import entries_under
from gfxpack.verify.rules import arch_of

BY_KIND = "kind"
BY_FAMILY = "family"
GROUPINGS = (BY_KIND, BY_FAMILY)
TOP = "top"

# Written by the clients with timestamps, locks or host-specific bytes: never in a layer.
_VOLATILE = re.compile(
    r"^/(?:var/log/.+|var/cache/.+|tmp/.+|var/tmp/.+|run/.+"
    r"|var/lib/dpkg/(?:[^/]+-old|lock(?:-frontend)?|triggers/Lock)"
    r"|var/lib/dnf/.+|var/lib/rpm/(?:\.rpm\.lock|\.dbenv\.lock|__db\..+|rpmdb\.sqlite-(?:shm|wal))"
    r"|root/\.rpmdb/(?:\.rpm\.lock|\.dbenv\.lock|__db\..+|rpmdb\.sqlite-(?:shm|wal)))$"
)
# A file's identity for "did the install change it".
Entry = tuple[int, int, int, int, int, str]


def snapshot(root: Path) -> dict[str, Entry]:
    """'/path' -> (mode, uid, gid, size, mtime in ns, link target) of every entry under
    ``root``, found without following a symlink."""
    found: dict[str, Entry] = {}
    for path, entry, info in entries_under(root):
        target = os.readlink(entry.path) if stat.S_ISLNK(info.st_mode) else ""
        found[path] = (
            info.st_mode,
            info.st_uid,
            info.st_gid,
            info.st_size,
            info.st_mtime_ns,
            target,
        )
    return found


def family(name: str) -> str:
    """A package's name without its arch suffix and version.

    >>> family("amdrocm-blas8.2-gfx942"), family("amdrocm-blas-host8.2"), family("libfoo")
    ('amdrocm-blas', 'amdrocm-blas-host', 'libfoo')
    """
    arch = arch_of(name)
    if arch:
        name = name.removesuffix(f"-{arch}")
    return name.rstrip("0123456789.") or name


@dataclass(frozen=True, slots=True)
class Planned:
    """A layer to write: what it is, the paths it holds and the paths it deletes."""

    what: str
    paths: tuple[str, ...]
    whiteouts: tuple[str, ...] = ()


def plan_layers(
    before: Mapping[str, Entry],
    after: Mapping[str, Entry],
    base_packages: Mapping[str, Installed],
    packages: Mapping[str, Installed],
    arch: str,
    grouping: str = BY_KIND,
) -> list[Planned]:
    """The layers of one arch's image, bottom first (the base's own layers below them)."""
    changed = {p for p, entry in after.items() if before.get(p) != entry}
    groups: dict[tuple[int, str], set[str]] = {}
    claimed: set[str] = set()
    new = [
        p
        for name, p in sorted(packages.items())
        if name not in base_packages or base_packages[name].version != p.version
    ]
    # Host packages first: a path a host and a device package both own (a directory)
    # goes with the host's, the same in every arch's image.
    for package in sorted(new, key=lambda p: (arch_of(p.name) is not None, p.name)):
        device = arch_of(package.name) is not None
        key = (
            (1 if device else 0),
            (family(package.name) if grouping == BY_FAMILY else "")
            + (f" device {arch}" if device else " host"),
        )
        mine = {
            path
            for path in (in_root(p, after) for p in package.paths)
            if path and path not in claimed
        }
        groups.setdefault(key, set()).update(mine)
        claimed |= mine
    planned = [
        Planned(what.strip(), tuple(sorted(paths)))
        for (_, what), paths in sorted(groups.items())
        if paths
    ]
    rest = sorted(p for p in changed - claimed if not _VOLATILE.match(p))
    deleted = sorted(p for p in before if p not in after and not _VOLATILE.match(p))
    # Only the topmost deleted path needs its whiteout.
    whiteouts = [p for p in deleted if os.path.dirname(p) not in set(deleted)]
    planned.append(Planned(TOP, tuple(rest), tuple(whiteouts)))
    return planned


# Symlinks followed (inside the root) when finding where a package's path is.
MAX_LINKS = 40


def in_root(path: str, entries: Mapping[str, Entry]) -> str:
    """Where the package database's ``path`` is in the root ``entries`` describe: its
    directories' symlinks followed inside the root, as the install followed them (on a
    merged-/usr base a package's /lib/x is /usr/lib/x); '' when it is not there.

    >>> link, directory = (0o120777, 0, 0, 0, 0, "usr/lib"), (0o40755, 0, 0, 0, 0, "")
    >>> in_root("/lib/libx.so", {"/lib": link, "/usr": directory, "/usr/lib": directory,
    ...                          "/usr/lib/libx.so": directory})
    '/usr/lib/libx.so'
    """
    parts = [p for p in _normal(path).split("/") if p]
    resolved: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        candidate = "/" + "/".join([*resolved, part])
        entry = entries.get(candidate)
        if entry is None:
            return ""
        if parts and stat.S_ISLNK(entry[0]):  # a directory on the way is a symlink
            hops += 1
            if hops > MAX_LINKS:
                return ""
            target = entry[5]
            base = [] if target.startswith("/") else resolved
            parts = [p for p in _normal("/".join([*base, target])).split("/") if p] + parts
            resolved = []
            continue
        resolved.append(part)
    return "/" + "/".join(resolved) if resolved else ""


def _normal(path: str) -> str:
    """'/path' as the snapshot spells it ('' for the root itself)."""
    normal = os.path.normpath("/" + path.strip().lstrip("/"))  # "//x" stays "//x"
    return "" if normal == "/" or "/../" in normal + "/" else normal
