"""Opening input files that must be regular files, never FIFOs, devices or sockets.

Opening a FIFO for reading blocks until a writer appears, and opening a device
can have side effects, so a path is checked with ``stat`` before it is opened.
The open itself is non-blocking and checked again with ``fstat``: a path
swapped for a FIFO between the two calls still cannot hang the reader.
"""

from __future__ import annotations

import errno
import os
import stat

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_CHUNK = 1 << 16

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotARegularFile(OSError):
    """The path names something other than a regular file; ``strerror`` says what."""


def file_kind(mode: int) -> str:
    """What a ``st_mode`` describes, in words: 'a FIFO', 'a directory'..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: str | os.PathLike[str], mode: int) -> NotARegularFile:
    return NotARegularFile(errno.EINVAL, f"not a regular file ({file_kind(mode)})", os.fspath(path))


def open_regular(path: str | os.PathLike[str], checked: bool = False) -> int:
    """A read-only descriptor of ``path``, which must be a regular file (symlinks to one
    count). ``checked=True`` skips the first ``stat`` when the caller already knows the
    path named a regular file (a directory walk's entry); the ``fstat`` stays."""
    if not checked:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], checked: bool = False) -> bytes:
    """The whole content of a regular file, read through the os layer (a third faster
    than ``open().read()`` for the many small files a descriptor tree holds)."""
    fd = open_regular(path, checked)
    try:
        chunks = [os.read(fd, _CHUNK)]
        # A short read of a regular file is its end: most small files need one read.
        while len(chunks[-1]) == _CHUNK:
            chunks.append(os.read(fd, _CHUNK))
    finally:
        os.close(fd)
    return b"".join(chunks) if len(chunks) > 1 else chunks[0]
