"""Reading an artifacts tree the way a package may hold it: nothing followed, nothing odd.

The artifacts tree is untrusted input (a build, a download, anyone with write access
to either), and what gfxpack reads from it is installed by root. So:

- **No symlink is followed.** The directories leading to a package's content (the
  artifact directory and every component of an ``artifact_manifest.txt`` line) must be
  real directories; below them a symlink is packaged as a symlink, never read through,
  and only when its target stays inside the install prefix (see
  :func:`symlink_target_problem`, the one rule of build, split and join). Manifests are
  opened without following a symlink.
- **Only regular files, directories and symlinks** are packaged: a FIFO, socket or
  device is an error (opening one could hang or touch hardware).
- **Names are UTF-8 without control characters**: dpkg refuses others, a newline
  would split the lists packages carry.
- **Modes are normalised**: directories 0755, files 0755 when any execute bit is set and
  0644 otherwise, so the umask the artifacts were made under never shows in a package.
  setuid, setgid, sticky and world-writable entries are refused unless the package sets
  ``Allow_Special_Modes``, which keeps those bits.

Every problem is collected, so one run names all of them. ``gfxpack split`` reads
its input by the same rules, with the same walker, since its output is packaged next
(modes aside: split keeps them as they are, and the build decides).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from gfxpack.errors import GfxpackError
from gfxpack.formats.payload import Entry, EntryKind, install_path
from gfxpack.regular_files import CONTROL
from gfxpack.regular_files import printable as printable  # where it was, for its importers

# The bits that let a file run as its owner, keep others' files or let anyone write.
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWOTH
ALLOW_SPECIAL_MODES_KEY = "Allow_Special_Modes"
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
_ONLY = "only regular files, directories and symlinks can be packaged"


class InvalidArtifacts(GfxpackError, ValueError):
    """An artifacts directory that cannot be read as TheRock's layout, or holds
    something a package must not carry."""


def name_problem(name: str) -> str | None:
    """Why a file name (or symlink target) cannot go into a package, or None."""
    try:
        name.encode("utf-8")  # undecodable bytes arrive as lone surrogates
    except UnicodeEncodeError:
        return "name is not valid UTF-8"
    if CONTROL.search(name):
        return "name contains a control character"
    return None


def symlink_target_problem(
    target: str, depth: int, where: str, top: str | None = None
) -> str | None:
    """Why a symlink ``depth`` directories below the top of its tree (called ``where``
    in the message) must not point to ``target``, or None when the target stays inside
    the tree. The one rule of ``build``, ``split`` and ``join``:

    - A relative target may start with ``..`` parts, no more of them than ``depth``
      (never above the top), and holds none after a name. ``a/../b`` climbs from
      wherever ``a`` leads, and when ``a`` is itself a symlink (``a -> .``, ``a ->
      sub/deep``) a target that looks inside can end outside: only a target whose
      climbing comes first, over the real directories above the link, is known to stay
      inside whatever the tree's other symlinks are.
    - An absolute target stays inside only where the tree's own place is known,
      ``top``: the install prefix of a package (build). It must then be ``top`` or
      below it, without ``..``. ``split`` and ``join`` know no place: a split is
      installed wherever a later build says, and join's OUT may be anywhere, so there
      an absolute target, which may name any file of the machine, is refused.

    Empty and ``.`` parts are ignored.

    >>> symlink_target_problem("../include/x.h", 1, "the tree") is None
    True
    >>> print(symlink_target_problem("a/../b", 1, "the tree"))
    has '..' after a name (which may climb out of the tree through another symlink)
    """
    if not target or "\0" in target:
        return "has no target"
    names = [name for name in target.split("/") if name not in ("", ".")]
    ups = 0
    if not target.startswith("/"):
        while ups < len(names) and names[ups] == "..":
            ups += 1
    if ".." in names[ups:]:
        return f"has '..' after a name (which may climb out of {where} through another symlink)"
    if target.startswith("/"):
        if top is None:
            return f"is absolute; only a relative target is known to stay inside {where}"
        if names[: len(inside := [name for name in top.split("/") if name])] != inside:
            return f"leaves {where}"
    elif ups > depth:
        return f"leaves {where}"
    return None


def normalised_mode(kind: str, mode: int, allow_special: bool) -> int:
    """The mode a package records for an entry made with ``mode`` on disk.

    >>> oct(normalised_mode("file", 0o700, False)), oct(normalised_mode("dir", 0o700, False))
    ('0o755', '0o755')
    >>> oct(normalised_mode("file", 0o600, False)), oct(normalised_mode("file", 0o6777, True))
    ('0o644', '0o6777')
    """
    if kind == "symlink":
        return 0o777
    base = 0o755 if kind == "dir" or mode & 0o111 else 0o644
    if not allow_special:
        return base
    kept = mode & SPECIAL_BITS
    if kept & stat.S_IWOTH:
        kept |= stat.S_IWGRP  # world-writable implies group-writable
    return base | kept


def _special_problem(mode: int) -> str | None:
    bits = mode & SPECIAL_BITS
    if not bits:
        return None
    names = [
        name
        for bit, name in (
            (stat.S_ISUID, "setuid"),
            (stat.S_ISGID, "setgid"),
            (stat.S_ISVTX, "sticky"),
            (stat.S_IWOTH, "world-writable"),
        )
        if bits & bit
    ]
    return (
        f"mode {stat.S_IMODE(mode):04o} is {' and '.join(names)}; set "
        f'"{ALLOW_SPECIAL_MODES_KEY}": "True" on the package in package.json to ship it'
    )


def real_directory(root: str, relative: str, problems: list[str]) -> bool:
    """Whether ``root/relative`` is a directory reached without any symlink; a symlink
    on the way is a problem, a missing or non-directory component just means no content."""
    path = root
    for part in [p for p in relative.split("/") if p]:
        path = os.path.join(path, part)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return False
        except OSError as e:
            problems.append(f"{printable(path)}: cannot read: {e.strerror}")
            return False
        if stat.S_ISLNK(info.st_mode):
            problems.append(
                f"{printable(path)}: is a symlink; the directories an artifact_manifest.txt "
                "line names must be real directories (gfxpack never follows a directory "
                "symlink)"
            )
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
    return True


def walk(
    top: str,
    prefix: str,
    mtime: int,
    allow_special: bool,
    problems: list[str],
    *,
    inside: str | None = None,
    installed_at_prefix: bool = True,
) -> Iterator[Entry]:
    """Every entry under the real directory ``top``, installed under ``prefix``; nothing
    is followed. Entries that cannot be packaged are left out and described in
    ``problems``. Iterative, so a deep tree cannot exhaust the stack.

    A symlink must point inside ``top`` (:func:`symlink_target_problem`); ``inside``
    names that place in the message about one that does not (default: the install
    prefix). The walker is shared with ``gfxpack split``, whose trees are packaged
    later: it gives ``installed_at_prefix=False``, as its trees have no place yet, so
    an absolute symlink in them is refused."""
    where = inside if inside is not None else f"the install prefix {prefix}"
    place = prefix if installed_at_prefix else None
    pending = [(top, prefix, 0)]  # a directory, its install path, its depth below top
    while pending:
        directory, installed, depth = pending.pop()
        try:
            with os.scandir(directory) as listing:
                children = sorted(listing, key=lambda child: child.name)
        except OSError as e:
            problems.append(f"{printable(directory)}: cannot read: {e.strerror}")
            continue
        below = []
        for child in children:
            path = install_path(installed, child.name)
            entry = _entry(child, path, (depth, where, place), mtime, allow_special)
            if isinstance(entry, str):
                problems.append(f"{printable(child.path)}: {entry}")
                continue
            yield entry
            if entry.kind == "dir":
                below.append((child.path, entry.path, depth + 1))
        # Subdirectories in name order, each before the next sibling (as os.walk), so
        # a split records its files in the order of the tree.
        pending.extend(reversed(below))


def _entry(
    child: os.DirEntry[str],
    path: str,
    tree: tuple[int, str, str | None],
    mtime_limit: int,
    allow_special: bool,
) -> Entry | str:
    """The entry for one directory member, or why it cannot be packaged. ``tree``: the
    member's depth below the top of its tree, the tree's name in messages and its
    install prefix (None when unknown), for :func:`symlink_target_problem`."""
    problem = name_problem(child.name)
    if problem:
        return f"{problem}; dpkg and rpm accept only UTF-8 names without control characters"
    try:
        info = child.stat(follow_symlinks=False)
    except OSError as e:
        return f"cannot read: {e.strerror}"
    mode = info.st_mode
    mtime = min(int(info.st_mtime), mtime_limit)
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(child.path)
        except OSError as e:
            return f"cannot read the symlink: {e.strerror}"
        problem = name_problem(target)
        if problem:
            return f"symlink target: {problem}"
        problem = symlink_target_problem(target, *tree)
        if problem:
            return f"symlink to {target!r} {problem} (a packaged symlink must point inside it)"
        return Entry(path, EntryKind.SYMLINK, 0o777, target=target, mtime=mtime)
    kind = EntryKind.DIR if stat.S_ISDIR(mode) else EntryKind.FILE if stat.S_ISREG(mode) else None
    if kind is None:
        return f"is {_KINDS.get(stat.S_IFMT(mode), 'not a regular file')}; {_ONLY}"
    if not allow_special and (problem := _special_problem(mode)):
        return problem
    final = normalised_mode(kind, mode, allow_special)
    if kind is EntryKind.DIR:
        return Entry(path, kind, final, mtime=mtime)
    identity = (info.st_dev, info.st_ino)
    return Entry(path, kind, final, info.st_size, child.path, mtime=mtime, identity=identity)
