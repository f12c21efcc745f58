"""A directory tree reached through descriptors: no symlink on the way is ever followed.

Checking a path with ``lstat`` and opening it by name later leaves a window: a
directory on the way swapped for a symlink in between sends the open elsewhere (to
``/etc``, say). A :class:`Tree` closes it: each part of a path below the root is
opened with ``O_NOFOLLOW``, one at a time, relative to the descriptor of the
directory above, so no symlink is followed, one swapped in after a walk or made
earlier in the same run included. Files are read only when they are regular (never
a FIFO or a device, see :mod:`gfxpack.regular_files`) and created only new
(``O_EXCL``), so nothing is written twice or through a link.

``join`` reads the split and writes OUT through trees; ``split`` reads its input
through one, after the walk that checked it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from gfxpack.errors import GfxpackError
from gfxpack.regular_files import NotARegularFile, file_kind, open_regular, printable

# Directories below a root a tree goes down: far deeper than any install tree, and
# within the open-file limit (one descriptor per level).
MAX_DEPTH = 256
COPY_CHUNK = 1 << 22
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeError(GfxpackError, ValueError):
    """A path of a tree that cannot be used; the message names it."""


class Refused(TreeError):
    """Something in the tree that is refused: a symlink on the way, a FIFO, a missing
    entry, one already written."""


class Failed(TreeError):
    """What the system refused: a full disk, a read-only file system, a permission."""


def _kind(mode: int) -> str:
    return "a regular file" if stat.S_ISREG(mode) else file_kind(mode)


class Tree:
    """The tree below ``root``, named ``shown`` in messages. ``writing``: a tree being
    written, which starts empty (so whatever is already there was written earlier in
    the run); otherwise a tree being read, whose root itself may be a symlink (the one
    a user named), nothing below it.

    The descriptors of the last directory's parts stay open: paths mostly come in tree
    order, so most of the next path is already open."""

    def __init__(self, root: Path, shown: Path | None = None, writing: bool = False) -> None:
        self.shown, self.writing = shown if shown is not None else root, writing
        try:
            self.fd = os.open(root, _DIRECTORY if writing else _DIRECTORY & ~os.O_NOFOLLOW)
        except OSError as e:
            raise self.failure((), e) from None
        self._open: list[tuple[str, int]] = []

    def close(self) -> None:
        for _, fd in reversed(self._open):
            os.close(fd)
        self._open.clear()
        os.close(self.fd)

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def name(self, parts: Sequence[str]) -> str:
        return printable(str(self.shown.joinpath(*parts)))

    def failure(self, parts: Sequence[str], error: OSError) -> Failed:
        """What the system refused (a full disk, a read-only file system, a permission)."""
        cause = error.strerror or str(error)
        if self.writing:
            where = f" {printable('/'.join(parts))}" if parts else " in it"
            return Failed(f"{printable(str(self.shown))}: cannot write{where}: {cause}")
        return Failed(f"{self.name(parts)}: cannot read: {cause}")

    def _refusal(self, parent: int, parts: Sequence[str], error: OSError, wanted: str) -> TreeError:
        """What refusing to open ``parts`` as ``wanted`` means, in words."""
        if error.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT, errno.EEXIST, errno.EINVAL):
            try:
                mode = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
            except FileNotFoundError:
                return Refused(f"{self.name(parts)}: does not exist")
            except OSError:
                return self.failure(parts, error)
            if stat.S_ISLNK(mode):
                return Refused(f"{self.name(parts)}: is a symlink; gfxpack does not follow it")
            return Refused(f"{self.name(parts)}: is {_kind(mode)}, expected {wanted}")
        return self.failure(parts, error)

    def directory(self, parts: Sequence[str], create: bool = False) -> int:
        """The descriptor of the directory ``parts`` (made, with its parents, when
        ``create``); refused when any part is a symlink or not a directory."""
        if len(parts) > MAX_DEPTH:
            raise Refused(f"{self.name(parts[:2])}/...: more than {MAX_DEPTH} directories deep")
        kept = 0
        while kept < min(len(parts), len(self._open)) and self._open[kept][0] == parts[kept]:
            kept += 1
        for _, fd in reversed(self._open[kept:]):
            os.close(fd)
        del self._open[kept:]
        for depth in range(kept, len(parts)):
            parent = self._open[-1][1] if self._open else self.fd
            try:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(parts[depth], dir_fd=parent)
                fd = os.open(parts[depth], _DIRECTORY, dir_fd=parent)
            except OSError as e:
                raise self._refusal(parent, parts[: depth + 1], e, "a directory") from None
            self._open.append((parts[depth], fd))
        return self._open[-1][1] if self._open else self.fd

    # -- reading --

    def open_file(self, parts: Sequence[str]) -> int:
        """A read-only descriptor of the regular file ``parts``."""
        parent = self.directory(parts[:-1])
        try:
            return open_regular(parts[-1], follow_symlinks=False, dir_fd=parent)
        except NotARegularFile as e:
            raise Refused(f"{self.name(parts)}: {e.strerror}") from None
        except OSError as e:
            raise self._refusal(parent, parts, e, "a regular file") from None

    def open_if_present(self, parts: Sequence[str]) -> int | None:
        """:meth:`open_file`, or None when nothing is there."""
        parent = self.directory(parts[:-1])
        try:
            os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise self.failure(parts, e) from None
        return self.open_file(parts)

    def status(self, parts: Sequence[str]) -> os.stat_result:
        """The status of ``parts`` itself (a symlink is not followed)."""
        parent = self.directory(parts[:-1])
        try:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except OSError as e:
            raise self._refusal(parent, parts, e, "an entry") from None

    def read_link(self, parts: Sequence[str]) -> str:
        parent = self.directory(parts[:-1])
        try:
            return os.readlink(parts[-1], dir_fd=parent)
        except OSError as e:
            raise self._refusal(parent, parts, e, "a symlink") from None

    def names(self, parts: Sequence[str]) -> list[str]:
        """The names in the directory ``parts``, sorted."""
        fd = self.directory(parts)
        try:
            return sorted(os.listdir(fd))
        except OSError as e:
            raise self.failure(parts, e) from None

    def link(self, parts: Sequence[str], destination: Path) -> bool:
        """Hard-link the regular file ``parts`` to the new path ``destination``: True,
        or False where no hard link can be made (another file system, links not
        allowed), for the caller to copy it. The entry itself is linked, never what a
        symlink swapped in leads to; anything but a regular file is removed again and
        refused. An existing ``destination`` raises FileExistsError."""
        parent = self.directory(parts[:-1])
        try:
            os.link(parts[-1], destination, src_dir_fd=parent, follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError as e:
            if e.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                return False
            if e.errno == errno.ENOENT:  # the caller made the destination's directory
                raise self._refusal(parent, parts, e, "a regular file") from None
            raise
        mode = os.lstat(destination).st_mode
        if not stat.S_ISREG(mode):
            os.unlink(destination)
            raise Refused(f"{self.name(parts)}: is {_kind(mode)}, expected a regular file")
        return True

    # -- writing --

    def create_file(self, parts: Sequence[str]) -> int:
        """A new file ``parts``, open for writing; refused when anything is there."""
        parent = self.directory(parts[:-1], create=True)
        try:
            return os.open(parts[-1], _CREATE, 0o600, dir_fd=parent)
        except OSError as e:
            raise self._creation_refused(parts, e) from None

    def make_directory(self, parts: Sequence[str]) -> None:
        """The directory ``parts`` and its parents; one already made is kept."""
        self.directory(parts, create=True)

    def make_symlink(self, target: str, parts: Sequence[str]) -> None:
        parent = self.directory(parts[:-1], create=True)
        try:
            os.symlink(target, parts[-1], dir_fd=parent)
        except OSError as e:
            raise self._creation_refused(parts, e) from None

    def _creation_refused(self, parts: Sequence[str], error: OSError) -> TreeError:
        if error.errno == errno.EEXIST:
            return Refused(f"{self.name(parts)}: already written by an earlier entry")
        return self.failure(parts, error)


def copy_bytes(source: int, destination: int) -> None:
    """Copy a whole file between descriptors: in the kernel where it can (a reflink on
    file systems that share blocks), by reads and writes elsewhere."""
    try:
        while os.copy_file_range(source, destination, COPY_CHUNK):
            pass
        return
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    os.lseek(source, 0, os.SEEK_SET)
    os.lseek(destination, 0, os.SEEK_SET)
    os.ftruncate(destination, 0)
    while chunk := os.read(source, COPY_CHUNK):
        write_all(destination, chunk)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def entries_under(root: Path) -> Iterator[tuple[str, os.DirEntry[str], os.stat_result]]:
    """``('/relative/path', entry, its lstat)`` of every entry under ``root``, depth
    first, never following a symlink (a link in an installed root may point at this
    machine's files)."""
    pending = [(str(root), "")]
    while pending:
        directory, relative = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                path = f"{relative}/{entry.name}"
                info = entry.stat(follow_symlinks=False)
                yield path, entry, info
                if stat.S_ISDIR(info.st_mode):
                    pending.append((entry.path, path))
