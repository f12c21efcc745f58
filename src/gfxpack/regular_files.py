"""Opening input files that must be regular files, never FIFOs, devices or sockets.

Opening a FIFO for reading blocks until a writer appears, and opening a device
can have side effects, so a path is checked with ``stat`` before it is opened.
The open itself is non-blocking and checked again with ``fstat``: a path
swapped for a FIFO between the two calls still cannot hang the reader. A
directory walk that has already classified its entries skips the first check
(see :func:`read_regular`).

A small input file a user names (package.json, a waiver file, a kernel list, a
changelog...) is read by :func:`read_small_file` or :func:`read_small_text`, the one
reader of such files: size cap, regular files only, UTF-8, one error naming the file.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from gfxpack.errors import GfxpackError

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
    """The path names something other than a regular file; ``strerror`` says what,
    ``kind`` names it in words ('a FIFO')."""

    kind = "not a regular file"


def file_kind(mode: int) -> str:
    """What a ``st_mode`` describes, in words: 'a FIFO', 'a directory'..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: str | os.PathLike[str], mode: int) -> NotARegularFile:
    refused = NotARegularFile(
        errno.EINVAL, f"not a regular file ({file_kind(mode)})", os.fspath(path)
    )
    refused.kind = file_kind(mode)
    return refused


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


def same_bytes(one: str | os.PathLike[str], other: str | os.PathLike[str]) -> bool:
    """Whether two regular files hold the same bytes, compared a chunk at a time
    (bounded memory, however large); a symlink is not followed, so one swapped in
    since a walk classified the path is refused (an OSError, as any read error)."""
    with (
        os.fdopen(open_regular(one, follow_symlinks=False), "rb") as a,
        os.fdopen(open_regular(other, follow_symlinks=False), "rb") as b,
    ):
        while True:
            chunk = a.read(_CHUNK)
            if chunk != b.read(_CHUNK):
                return False
            if not chunk:
                return True


class UnreadableFile(GfxpackError, ValueError):
    """A small input file gfxpack cannot take: missing, not a regular file, larger than
    its cap or not UTF-8. ``problem`` says which without the path, for a caller that
    shows the path its own way; the message is ``<path>: <problem>``. ``missing``: there
    is no such file (for a caller that says what a missing file means)."""

    def __init__(self, path: str | os.PathLike[str], problem: str, missing: bool = False) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        self.missing = missing
        super().__init__(f"{printable(self.path)}: {problem}")


def size_in_words(size: int) -> str:
    """A cap as people write it: '1 MiB', '64 KiB', '1,000 bytes'."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size:,} bytes"


def read_small_file(
    path: str | os.PathLike[str], limit: int, what: str, follow_symlinks: bool = True
) -> bytes:
    """The bytes of a small input file a user names, at most ``limit`` of them; one
    :class:`UnreadableFile` naming the file when it is missing, not a regular file (a
    FIFO or device is never opened, so never waited on), a symlink and
    ``follow_symlinks`` is False, unreadable or larger. ``what`` names the file in
    messages: 'waiver file' gives "cannot read the waiver file: ..." and "a waiver
    file of at most 1 MiB is expected"."""
    try:
        fd = open_regular(path, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        raise UnreadableFile(path, "file not found", missing=True) from None
    except NotARegularFile as e:
        raise UnreadableFile(path, _refusal(e.kind)) from None
    except OSError as e:
        # ELOOP: a symlink swapped in between the check and the (O_NOFOLLOW) open.
        problem = _refusal("a symlink") if e.errno == errno.ELOOP else _unreadable(what, e)
        raise UnreadableFile(path, problem) from None
    return read_capped(fd, path, limit, what)


def read_capped(fd: int, path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """At most ``limit`` bytes of the regular file open as ``fd`` (closed here), for a
    caller that opened it its own way; UnreadableFile when it holds more or a read
    fails."""
    with os.fdopen(fd, "rb") as file:
        try:
            data = file.read(limit + 1)
        except OSError as e:
            raise UnreadableFile(path, _unreadable(what, e)) from None
    if len(data) > limit:
        article = "an" if what[:1].lower() in ("a", "e", "i", "o", "u") else "a"
        raise UnreadableFile(
            path, f"{article} {what} of at most {size_in_words(limit)} is expected"
        )
    return data


def read_small_text(
    path: str | os.PathLike[str], limit: int, what: str, follow_symlinks: bool = True
) -> str:
    """:func:`read_small_file`, decoded as UTF-8; UnreadableFile naming the first byte
    that is not."""
    return utf8_text(read_small_file(path, limit, what, follow_symlinks), path)


def utf8_text(data: bytes, path: str | os.PathLike[str]) -> str:
    """``data`` read from ``path``, decoded as UTF-8; UnreadableFile when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnreadableFile(path, f"not UTF-8 text (byte {e.start})") from None


def _refusal(kind: str) -> str:
    if kind == "a symlink":
        return "is a symlink; gfxpack does not follow it"
    return f"is {kind}, expected a regular file"


def _unreadable(what: str, error: OSError) -> str:
    return f"cannot read the {what}: {error.strerror or error}"
