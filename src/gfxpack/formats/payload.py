"""Package contents and the two archive formats that carry them: tar and cpio (newc).

A payload is a sorted tuple of :class:`Entry` values (absolute, normalised install
paths: joined by :func:`install_path`, checked by :func:`install_path_problem`);
writers stream each regular file from disk once, hashing it on the way, and
return the digests they computed. Output is reproducible: sorted entries,
owner root:root, mtimes clamped to the build's SOURCE_DATE_EPOCH.
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import stat
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import BinaryIO

from gfxpack._io import Writable
from gfxpack.text_fields import TextKind

CHUNK = 64 << 10
# The characters of an install path: one line's, up to Linux's PATH_MAX.
_PATH_TEXT = TextKind("one line of printable characters", 4096)


class EntryKind(StrEnum):
    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"


@dataclass(frozen=True, slots=True)
class Entry:
    """One path a package installs."""

    path: str  # absolute, normalized: /opt/rocm/core-8.2/lib/libx.so
    kind: EntryKind
    mode: int = 0o644  # permission bits only
    size: int = 0
    source: str | None = None  # where a file's bytes are read from
    target: str | None = None  # a symlink's target, as written
    mtime: int = 0
    data: bytes | None = None  # inline bytes instead of a source file
    # (st_dev, st_ino) of the source when the artifacts were walked: the file read
    # must be that one, not whatever a directory swapped in since leads to.
    identity: tuple[int, int] | None = None

    @property
    def link(self) -> str:
        """A symlink's target."""
        if self.target is None:
            raise OSError(f"{self.path}: a symlink entry without a target")
        return self.target

    @property
    def is_file(self) -> bool:
        return self.kind == EntryKind.FILE


def install_path_problem(path: str) -> str | None:
    """Why ``path`` is not an install path (absolute, normalised, one line of printable
    characters), in one line; None when it is. An install path is what a package's
    member names are made of, so ``/`` is one and ``/usr/`` or ``opt/rocm`` are not.

    >>> install_path_problem("/usr/lib"), install_path_problem("/")
    (None, None)
    >>> print(install_path_problem("/opt//rocm/"))
    expected a normalised absolute path (no '.', '..', '//' or trailing '/'), such as /opt/rocm
    """
    if problem := _PATH_TEXT.problem(path):
        return problem
    if not path.startswith("/"):
        return f"expected an absolute path, such as {posixpath.normpath('/' + path)}"
    normal = "/" + "/".join(part for part in path.split("/") if part not in ("", "."))
    if path != normal or "/../" in path + "/":
        return (
            "expected a normalised absolute path (no '.', '..', '//' or trailing '/'), "
            f"such as {posixpath.normpath(normal)}"
        )
    return None


def install_path(directory: str, name: str) -> str:
    """The install path of ``name`` inside the install path ``directory``: the one place
    install paths are joined, so that the prefix ``/`` gives ``/usr``, never ``//usr``.

    >>> install_path("/", "usr"), install_path("/opt/rocm", "lib")
    ('/usr', '/opt/rocm/lib')
    """
    return f"{directory.rstrip('/')}/{name}"


def member_name(root: str, path: str) -> str:
    """A tar or cpio member's name: ``root`` (``.``) then the install path. A path that
    is not one is refused where every member is named, not written as ``.//usr/lib`` or
    ``./opt/rocm//lib``: dpkg and rpm would record such names as they are, and no other
    package's file or directory would match them."""
    if problem := install_path_problem(path):
        raise OSError(f"{path!r}: not an install path: {problem}")
    return root + path


def with_parents(entries: Iterable[Entry], mtime: int, stop: str = "/") -> tuple[Entry, ...]:
    """Entries plus every missing parent directory below ``stop``, sorted by path."""
    by_path = {entry.path: entry for entry in entries}
    for path in list(by_path):
        parent = posixpath.dirname(path)
        while parent not in by_path and parent != stop and parent.startswith(stop):
            by_path[parent] = Entry(parent, EntryKind.DIR, 0o755, mtime=mtime)
            parent = posixpath.dirname(parent)
    return tuple(sorted(by_path.values(), key=lambda e: e.path))


def installed_size(entries: Iterable[Entry]) -> int:
    return sum(entry.size for entry in entries if entry.kind != EntryKind.DIR)


def archive_size_hint(entries: tuple[Entry, ...]) -> int:
    """Roughly the bytes a tar or cpio of ``entries`` holds: contents plus headers."""
    return installed_size(entries) + 512 * (len(entries) + 2)


def _open(entry: Entry) -> BinaryIO:
    """A file's bytes; the path is opened without following a symlink or blocking on
    a FIFO, so a source swapped after the artifacts were checked cannot leak in."""
    if entry.data is not None:
        return io.BytesIO(entry.data)
    if entry.source is None:
        raise OSError(f"{entry.path}: a file entry with neither contents nor a source")
    fd = os.open(entry.source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    file = os.fdopen(fd, "rb")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        file.close()
        raise OSError(f"{entry.source}: no longer a regular file")
    if entry.identity is not None and (
        (info.st_dev, info.st_ino) != entry.identity or info.st_size != entry.size
    ):
        file.close()
        raise OSError(f"{entry.source}: changed since the artifacts were read; rerun the build")
    return file


# --- tar (DEB data.tar and control.tar) ------------------------------------------------------


def write_tar(
    out: Writable, entries: Iterable[Entry], mtime: int, algorithm: str = "md5", root: str = "."
) -> dict[str, str]:
    """GNU tar of ``entries`` with names ``./opt/...``; returns each file's hex digest.

    tarfile encodes the headers (long names, large sizes); the contents go straight
    to ``out``, since tarfile's own stream would copy every byte again in 10 KiB
    pieces. The bytes are what ``tarfile.open(mode="w|", format=GNU_FORMAT)`` writes.
    """
    digests: dict[str, str] = {}
    written = _tar_header(out, root + "/", tarfile.DIRTYPE, 0o755, mtime)
    for entry in entries:
        name = member_name(root, entry.path)
        if entry.kind == EntryKind.DIR:
            written += _tar_header(out, name + "/", tarfile.DIRTYPE, entry.mode, entry.mtime)
        elif entry.kind == EntryKind.SYMLINK:
            written += _tar_header(
                out, name, tarfile.SYMTYPE, entry.mode, entry.mtime, link=entry.link
            )
        else:
            written += _tar_header(
                out, name, tarfile.REGTYPE, entry.mode, entry.mtime, size=entry.size
            )
            digests[entry.path] = _copy_contents(entry, out, algorithm)
            padding = -entry.size % tarfile.BLOCKSIZE
            out.write(b"\0" * padding)
            written += entry.size + padding
    # The end: two zero blocks, then zeros up to a whole record.
    written += 2 * tarfile.BLOCKSIZE
    out.write(b"\0" * (2 * tarfile.BLOCKSIZE + -written % tarfile.RECORDSIZE))
    return digests


def _tar_header(
    out: Writable, name: str, kind: bytes, mode: int, mtime: int, size: int = 0, link: str = ""
) -> int:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime, info.size, info.linkname = kind, mode, mtime, size, link
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    header = info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
    out.write(header)
    return len(header)


def _copy_contents(entry: Entry, out: Writable, algorithm: str) -> str:
    """Write a file entry's ``size`` bytes to ``out``; their hex digest. A source that
    is not that size any more is an error: its header already promised the size."""
    with _open(entry) as file:
        digest = hashlib.new(algorithm, usedforsecurity=False)
        copied = 0
        while copied < entry.size and (chunk := file.read(min(CHUNK, entry.size - copied))):
            digest.update(chunk)
            out.write(chunk)
            copied += len(chunk)
        if copied != entry.size or file.read(1):
            raise OSError(f"{entry.source or entry.path} changed while it was packaged")
    return digest.hexdigest()


# --- cpio newc (the RPM payload) ------------------------------------------------------------------

_NEWC = "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}"
_MAX_NEWC = 0xFFFFFFFF


def _pad4(length: int) -> bytes:
    return b"\0" * (-length % 4)


def _cpio_header(
    out: Writable, name: str, ino: int, mode: int, nlink: int, mtime: int, size: int
) -> None:
    encoded = name.encode() + b"\0"
    header = _NEWC.format(ino, mode, 0, 0, nlink, mtime, size, 0, 0, 0, 0, len(encoded), 0)
    out.write(header.encode() + encoded + _pad4(len(header) + len(encoded)))


def write_cpio(
    out: Writable, entries: Iterable[Entry], algorithm: str = "sha256", root: str = "."
) -> dict[str, str]:
    """newc cpio with names ``./opt/...`` and inodes numbered from 1 in entry order;
    returns each file's hex digest."""
    digests: dict[str, str] = {}
    for ino, entry in enumerate(entries, start=1):
        name = member_name(root, entry.path)
        if entry.kind == EntryKind.DIR:
            _cpio_header(out, name, ino, stat.S_IFDIR | entry.mode, 2, entry.mtime, 0)
        elif entry.kind == EntryKind.SYMLINK:
            target = entry.link.encode()
            _cpio_header(out, name, ino, stat.S_IFLNK | 0o777, 1, entry.mtime, len(target))
            out.write(target + _pad4(len(target)))
        else:
            if entry.size > _MAX_NEWC:
                raise OSError(f"{entry.path}: {entry.size} bytes is too large for a cpio payload")
            _cpio_header(out, name, ino, stat.S_IFREG | entry.mode, 1, entry.mtime, entry.size)
            digests[entry.path] = _copy_contents(entry, out, algorithm)
            out.write(_pad4(entry.size))
    _cpio_header(out, "TRAILER!!!", 0, 0, 1, 0, 0)
    return digests
