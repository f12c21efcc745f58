"""The file-writing helpers every writer shares: atomic replacement, hashing on the
way through, and a spool for what must be complete before its container's header.

A file that readers may see is first written to a hidden ``.<name>.<pid>.partial``
sibling and renamed over the target only once complete, so an error or an
interrupt leaves the old file (or none), never half of a new one.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, BinaryIO, Protocol, cast

# The modes of everything gfxpack writes for others to read, whatever the umask.
FILE_MODE = 0o644
DIRECTORY_MODE = 0o755
# A spool stays in memory up to this many bytes: most packages' archives are small, and
# creating a temporary file costs more than compressing one of them.
SPOOL_LIMIT = 8 << 20


class Writable(Protocol):
    """Where bytes go: a file, or a writer in front of one (HashingWriter)."""

    def write(self, data: bytes, /) -> int: ...


class Readable(Protocol):
    """Where bytes come from: a file, or a decompressing reader in front of one."""

    def read(self, size: int = -1, /) -> bytes: ...


def as_binary_file(stream: Writable | Readable) -> IO[bytes]:
    """``stream`` for a library whose type stubs ask for a whole binary file although,
    used on a stream, it only calls ``write`` and ``flush`` or ``read`` (tarfile in
    ``w|`` or ``r|`` mode, zstandard's stream_writer, lzma.LZMAFile, gzip.GzipFile)."""
    return cast(IO[bytes], stream)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary sibling of ``path`` to create; renamed onto ``path`` when the block
    completes, removed when it raises."""
    target = Path(path)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        yield partial
        os.replace(partial, target)
    finally:
        with contextlib.suppress(OSError):  # nothing was created where nothing can be
            partial.unlink()


@contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """An open binary file whose contents replace ``path`` when the block completes."""
    with atomic_path(path) as partial, open(partial, "wb") as file:
        yield file


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_write(path) as file:
        file.write(data)


def replace_directory(temporary: Path, out: Path, force: bool) -> None:
    """Rename the complete directory ``temporary`` to ``out``, its sibling. An ``out``
    already there is FileExistsError unless ``force``: it is then moved aside first
    (into a new hidden directory beside it, so no name is guessed), put back if the
    rename fails, and removed once the rename succeeded. What the system refuses is
    an OSError; if the old ``out`` cannot be put back either, its message says where
    it is."""
    if not os.path.lexists(out):
        os.rename(temporary, out)  # replaces only an empty directory made meanwhile
        return
    if not force:
        raise FileExistsError(errno.EEXIST, "already exists", str(out))
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    old = aside / "old"
    try:
        os.rename(out, old)
    except OSError:
        os.rmdir(aside)
        raise
    try:
        os.rename(temporary, out)
    except OSError as e:
        try:
            os.rename(old, out)
        except OSError:
            raise OSError(e.errno, f"{e.strerror}; the old one is kept at {old}", str(out)) from e
        os.rmdir(aside)
        raise
    shutil.rmtree(aside, ignore_errors=True)


class HashingWriter:
    """Writes through to ``out``, counting the bytes and hashing them with each of
    ``algorithms`` (none: counting only)."""

    def __init__(self, out: Writable, *algorithms: str) -> None:
        self._out = out
        self.size = 0
        self.hashes = [hashlib.new(name, usedforsecurity=False) for name in algorithms]

    def write(self, data: bytes) -> int:
        for digest in self.hashes:
            digest.update(data)
        self.size += len(data)
        return self._out.write(data)

    def flush(self) -> None:
        flush = getattr(self._out, "flush", None)
        if flush is not None:
            flush()

    def hexdigest(self, index: int = 0) -> str:
        return self.hashes[index].hexdigest()


def hasher(*algorithms: str) -> HashingWriter:
    """A HashingWriter that keeps nothing: the size and digests of what it is given."""
    return HashingWriter(_Discard(), *algorithms)


def file_digests(path: str | os.PathLike[str], *algorithms: str) -> tuple[int, list[str]]:
    """Size and hex digests of a file, read once in 1 MiB chunks."""
    sink = hasher(*algorithms)
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            sink.write(chunk)
    return sink.size, [digest.hexdigest() for digest in sink.hashes]


class _Discard:
    def write(self, data: bytes, /) -> int:
        return len(data)


def spool(directory: str | None = None) -> tempfile.SpooledTemporaryFile[bytes]:
    """A scratch file for an archive that must be complete before the header in front
    of it can be written (a .deb member's size, an RPM payload's digest): in memory up
    to SPOOL_LIMIT bytes, beyond that an anonymous temporary file in ``directory``
    (default: the system's temporary directory)."""
    return tempfile.SpooledTemporaryFile(max_size=SPOOL_LIMIT, dir=directory)
