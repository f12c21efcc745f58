"""Where a split writes: the :class:`SplitDestination` protocol, and the artifacts tree.

:func:`gfxpack.fatbin.split.split` reads its input (:mod:`gfxpack.fatbin.source`)
and writes only through a destination, by paths relative to the split's top
(``<group>_<target>/<prefix>/...``, :func:`gfxpack.fatbin.split.tree_part`), in
the order it meets them: parents before their children, each path once. A
destination decides where those bytes go; :class:`TreeDestination` writes them as
an artifacts tree under a temporary directory renamed to OUT at the end.

Everything a destination writes is a new path: nothing there is replaced or
written through (an input holding a file where split puts its own is an error,
see :func:`write_error`), and nothing of the input is read through a
symlink (see :class:`~gfxpack.fatbin.source.SplitInput`).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Protocol

from gfxpack._io import DIRECTORY_MODE, replace_directory
from gfxpack.fatbin import SplitError
from gfxpack.fatbin.record import is_split
from gfxpack.fatbin.source import SplitInput
from gfxpack.regular_files import printable
from gfxpack.safe_tree import copy_bytes


class SplitDestination(Protocol):
    """What a split writes, method by method. Paths are relative, ``/``-separated and
    already checked (no ``..``, no absolute path); each is written once."""

    def directory(self, path: str, like: os.stat_result | None = None) -> None:
        """Make the directory ``path`` (and those above it), or keep the one already
        made; ``like``: the input directory whose mode and times it takes."""

    def symlink(self, path: str, target: str) -> None:
        """Make the symlink ``path`` to ``target`` (relative, checked to stay inside its
        tree by the walk)."""

    def copy(self, path: str, reading: SplitInput, source: Path) -> None:
        """Place the input's regular file ``source`` at ``path`` as it is, its mode and
        times kept (a tree hard-links it where it can)."""

    def new_file(self, path: str) -> BinaryIO:
        """A new file ``path``, open for writing (a host binary, an archive); the
        caller closes it."""

    def write(self, path: str, data: bytes) -> None:
        """A new file ``path`` holding ``data`` (a manifest, the split record)."""

    def remove(self, path: str) -> None:
        """Drop the file ``path`` made by :meth:`new_file` (a binary kept whole after
        all)."""

    def size(self, path: str) -> int:
        """The size of the file written at ``path`` (closed)."""

    def finish(self) -> None:
        """Everything is written: make it visible at once (a tree: rename it to OUT)."""

    def discard(self) -> None:
        """Remove whatever was written (on failure, or after :meth:`finish`'s leftovers)."""

    def error(self, error: OSError) -> SplitError | OSError:
        """What the system refused while writing, as one line naming the output."""


def check_out(out: Path, force: bool, source: Path) -> None:
    """OUT must be a new directory (or, with ``force``, the output of an earlier split),
    neither inside the input nor holding it."""
    if out.name in ("", ".", ".."):
        raise SplitError(f"{out}: expected the name of a directory to create")
    if out.exists() or out.is_symlink():
        if not force:
            raise SplitError(f"{out}: already exists (remove it, or replace it with --force)")
        if out.is_symlink() or not out.is_dir() or (any(out.iterdir()) and not is_split(out)):
            raise SplitError(
                f"{out}: not the output of an earlier split; --force will not replace it"
            )
    resolved_out, resolved_source = out.resolve(), source.resolve()
    if resolved_out == resolved_source or resolved_source in resolved_out.parents:
        raise SplitError(f"{out}: must not be inside the input {source}")
    if resolved_out in resolved_source.parents:
        raise SplitError(f"{out}: must not contain the input {source}")


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeDestination:
    """An artifacts tree at OUT, written under a new directory beside it (its mode
    whatever the umask, as every directory gfxpack makes) and renamed to OUT when
    complete; an OUT already there is replaced only with ``force``."""

    def __init__(self, out: Path, force: bool) -> None:
        self.out, self._force = out, force
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            self.top = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
            os.chmod(self.top, DIRECTORY_MODE)
        except OSError as e:
            raise SplitError(f"{out}: cannot write in {out.parent}: {e.strerror or e}") from None

    def directory(self, path: str, like: os.stat_result | None = None) -> None:
        where = self.top / path
        where.parent.mkdir(parents=True, exist_ok=True)
        try:
            where.mkdir()
        except FileExistsError:
            # One already there (the archives' or an arch's, made first) must be a
            # real directory.
            if not stat.S_ISDIR(os.lstat(where).st_mode):
                raise
        if like is not None:
            os.chmod(where, stat.S_IMODE(like.st_mode))
            os.utime(where, ns=(like.st_atime_ns, like.st_mtime_ns))

    def symlink(self, path: str, target: str) -> None:
        where = self.top / path
        where.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, where)

    def copy(self, path: str, reading: SplitInput, source: Path) -> None:
        """Hard-link the input's file, or copy it where no hard link can be made
        (another file system)."""
        where = self.top / path
        where.parent.mkdir(parents=True, exist_ok=True)
        if not reading.link(source, where):
            _copy(reading, source, where)

    def new_file(self, path: str) -> BinaryIO:
        where = self.top / path
        where.parent.mkdir(parents=True, exist_ok=True)
        return open(where, "xb")  # "x": a new file, never one the input put there

    def write(self, path: str, data: bytes) -> None:
        with self.new_file(path) as file:
            file.write(data)

    def remove(self, path: str) -> None:
        (self.top / path).unlink()

    def size(self, path: str) -> int:
        return (self.top / path).stat().st_size

    def finish(self) -> None:
        try:
            replace_directory(self.top, self.out, self._force)
        except OSError as e:
            raise SplitError(f"{self.out}: cannot replace: {e.strerror or e}") from None

    def discard(self) -> None:
        shutil.rmtree(self.top, ignore_errors=True)

    def error(self, error: OSError) -> SplitError | OSError:
        return write_error(error, self.out, self.top)


def write_error(error: OSError, out: Path, temporary: Path) -> SplitError | OSError:
    """What the system refused while the split was written under ``temporary`` (for
    ``out``), as one line naming ``out`` and the file (or the input file that could not
    be read); anything else as it is."""
    cause = error.strerror or str(error)
    names = [
        Path(os.fsdecode(name))
        for name in (error.filename, error.filename2)
        if isinstance(name, str | bytes | os.PathLike)
    ]
    for path in names:
        if path == temporary:
            return SplitError(f"{out}: cannot write: {cause}")
        if temporary in path.parents:
            where = printable(str(path.relative_to(temporary)))
            if isinstance(error, FileExistsError):
                return SplitError(
                    f"{out}: {where}: written twice; the input holds a file where split "
                    "puts one of its own"
                )
            return SplitError(f"{out}: cannot write {where}: {cause}")
    if names:
        return SplitError(f"{printable(str(names[0]))}: cannot read: {cause}")
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO):
        return SplitError(f"{out}: cannot write: {cause}")
    return error


def _copy(reading: SplitInput, source: Path, destination: Path) -> None:
    """Copy a regular file (never a symlink or a FIFO swapped in) with its mode and
    times to the new file ``destination``."""
    with reading.open(source) as file:
        info = os.fstat(file.fileno())
        try:
            fd = os.open(destination, _NEW_FILE, 0o600)
            try:
                copy_bytes(file.fileno(), fd)
                os.fchmod(fd, stat.S_IMODE(info.st_mode))
                os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
            finally:
                os.close(fd)
        except OSError as e:
            if e.filename is not None:
                raise
            # A failed write (a full disk) names no file: this one.
            raise OSError(e.errno, e.strerror, str(destination)) from None


__all__ = ["SplitDestination", "TreeDestination", "check_out", "write_error"]
