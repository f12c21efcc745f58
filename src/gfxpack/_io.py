"""The two file-writing helpers every writer shares: atomic replacement and hashing
on the way through.

A file that readers may see is first written to a hidden ``.<name>.<pid>.partial``
sibling and renamed over the target only once complete, so an error or an
interrupt leaves the old file (or none), never half of a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol, cast

# The modes of everything gfxpack writes for others to read, whatever the umask.
FILE_MODE = 0o644
DIRECTORY_MODE = 0o755


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


class HashingReader:
    """Reads through from ``file``, hashing what it returns with ``algorithm``; on
    ``hasher``'s thread when one is given (then read ``hash`` once it has finished)."""

    def __init__(self, file: BinaryIO, algorithm: str, hasher: BackgroundHasher | None = None):
        self._file = file
        self.hash = hashlib.new(algorithm, usedforsecurity=False)
        self._hasher = hasher

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size)
        if self._hasher is None:
            self.hash.update(data)
        else:
            self._hasher.update(self.hash, data)
        return data


class BackgroundHasher:
    """Hashes chunks on a second thread while the caller goes on feeding a compressor.

    hashlib releases the GIL on large buffers, so a package's file digests (MD5 for
    DEB md5sums runs at under 1 GB/s) overlap compression instead of adding to it.
    Small chunks are hashed on the caller's thread: a hand-off costs more than
    hashing them. At most ``depth`` chunks wait, so memory stays bounded. Use as a
    context manager: leaving it waits until every chunk is hashed.
    """

    SMALL = 64 << 10

    def __init__(self, depth: int = 8) -> None:
        self._queue: queue.Queue[tuple[Any, bytes] | None] = queue.Queue(depth)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def update(self, digest: Any, data: bytes) -> None:
        if len(data) < self.SMALL and self._thread is None:
            digest.update(data)
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gfxpack-hash", daemon=True)
            self._thread.start()
        self._queue.put((digest, data))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is None:
                try:
                    item[0].update(item[1])
                except BaseException as error:  # re-raised on the caller's thread
                    self._error = error

    def __enter__(self) -> BackgroundHasher:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error


def file_digests(path: str | os.PathLike[str], *algorithms: str) -> tuple[int, list[str]]:
    """Size and hex digests of a file, read once in 1 MiB chunks."""
    sink = HashingWriter(_Discard(), *algorithms)
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            sink.write(chunk)
    return sink.size, [digest.hexdigest() for digest in sink.hashes]


class _Discard:
    def write(self, data: bytes, /) -> int:
        return len(data)
