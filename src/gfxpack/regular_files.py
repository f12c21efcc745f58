"""Opening input files that must be regular files, never FIFOs, devices or sockets.

Opening a FIFO for reading blocks until a writer appears, and opening a device
can have side effects, so a path is checked with ``stat`` before it is opened.
The open itself is non-blocking and checked again with ``fstat``: a path
swapped for a FIFO between the two calls still cannot hang the reader. A
directory walk that has already classified its entries skips the first check
(see :func:`read_regular`).
"""

from __future__ import annotations

import errno
import os
import re
import stat

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_CHUNK = 1 << 16
# C0 and C1 control characters and DEL.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

_KINDS = (
    (stat.S_ISLNK, "a symlink"),  # only an lstat mode says so
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def printable(path: str) -> str:
    """A path as one printable line: bytes that are not UTF-8 as ``\\xff``, control
    characters as ``\\x0a``.

    >>> printable("lib/a\\nb"), printable(os.fsdecode(b"lib/\\xff"))
    ('lib/a\\\\x0ab', 'lib/\\\\xff')
    """
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class NotARegularFile(OSError):
    """The path names something other than a regular file; ``strerror`` says what."""


def file_kind(mode: int) -> str:
    """What a ``st_mode`` describes, in words: 'a FIFO', 'a directory'..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: str | os.PathLike[str], mode: int) -> NotARegularFile:
    return NotARegularFile(errno.EINVAL, f"not a regular file ({file_kind(mode)})", os.fspath(path))


def _fd_of_regular(fd: int, path: str | os.PathLike[str]) -> int:
    """``fd`` when it is a regular file; otherwise closed, and refused."""
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(
    path: str | os.PathLike[str], follow_symlinks: bool = True, dir_fd: int | None = None
) -> int:
    """A read-only descriptor of ``path``, which must be a regular file (symlinks to one
    count, unless ``follow_symlinks`` is False): checked before the open, so a FIFO or
    device is never opened, and after it, so a path swapped in between is refused too.
    ``dir_fd``: ``path`` is relative to that open directory."""
    mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(path, mode)
    flags = _FLAGS if follow_symlinks else _FLAGS | os.O_NOFOLLOW
    return _fd_of_regular(os.open(path, flags, dir_fd=dir_fd), path)


def read_regular(path: str | os.PathLike[str], checked: bool = False) -> bytes:
    """The whole content of a regular file, read through the os layer (a third faster
    than ``open().read()`` for the many small files a descriptor tree holds).

    ``checked=True`` is for paths a directory walk has just classified as regular
    files: the checks are then made only before a second read. A path swapped for
    something else in between still cannot hang the reader: the open does not
    block, a FIFO's read returns what is there, and anything that streams more than
    one read's worth is refused before the next read."""
    if not checked:
        fd = open_regular(path)
        return _read_all(fd, path, verified=True)
    return _read_all(os.open(path, _FLAGS), path, verified=False)


def _read_all(fd: int, path: str | os.PathLike[str], verified: bool) -> bytes:
    try:
        chunks = [os.read(fd, _CHUNK)]
        # A short read of a regular file is its end: most small files need one read.
        if len(chunks[-1]) == _CHUNK and not verified:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise _refuse(path, mode)
        while len(chunks[-1]) == _CHUNK:
            chunks.append(os.read(fd, _CHUNK))
    finally:
        os.close(fd)
    return b"".join(chunks) if len(chunks) > 1 else chunks[0]
