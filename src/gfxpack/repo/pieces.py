"""Indexes made of pieces: each run's share compressed once, the whole concatenated.

An index (apt's Packages, rpm-md's primary...) lists every package a repository holds,
so writing it is work in proportion to the repository. Compressing it is most of that
work, and it need not be repeated: a gzip file may be several members one after the
other, which every reader of these indexes decompresses as one (zlib's gzread, used by
apt, libsolv for dnf and zypper, and createrepo_c). So each run's share of an index (a
*piece*, repo/state.py) is compressed once, when its packages are added, and a publish
writes the index by copying the pieces in order, hashing as it goes: the digests the
top file (Release, repomd.xml) needs, with one piece in memory at a time.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gfxpack._io import FILE_MODE, HashingWriter, hasher
from gfxpack.repo.state import Piece

# gzip's best: a piece is compressed once, whatever the number of publishes after it.
LEVEL = 9


def piece(plain: bytes) -> Piece:
    """A piece of ``plain`` text; an empty one has no member (nothing to decompress)."""
    return Piece(plain, gzip.compress(plain, LEVEL, mtime=0) if plain else b"")


def packed(text: bytes) -> bytes:
    """``text`` as one gzip member (a header or footer around the pieces)."""
    return gzip.compress(text, LEVEL, mtime=0)


@dataclass
class Written:
    """An index file written under a temporary name, with its digests (and, when it is
    compressed, those of the text it holds)."""

    path: Path
    digests: HashingWriter  # its size, and a hexdigest per algorithm in the order given
    plain: HashingWriter | None = None


class IndexWriter:
    """Writes one index file (``packed``: the gzip members; else the plain text) and
    hashes it, and the plain text too when ``packed``; :meth:`close` gives the result."""

    def __init__(self, path: Path, algorithms: tuple[str, ...], packed: bool) -> None:
        self.path = path
        self._packed = packed
        # Open across add() calls and closed by close() or discard(): a writer object.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        self._file = open(fd, "wb")  # noqa: SIM115
        os.fchmod(self._file.fileno(), FILE_MODE)
        self.digests = HashingWriter(self._file, *algorithms)
        self.plain = hasher(*algorithms) if packed else None

    def add(self, part: Piece) -> None:
        self.digests.write(part.packed if self._packed else part.plain)
        if self.plain is not None:
            self.plain.write(part.plain)

    def add_text(self, text: bytes) -> None:
        """Text of the index's own around the pieces (an XML header)."""
        self.add(Piece(text, packed(text) if self._packed else b""))

    def close(self) -> Written:
        self._file.close()
        return Written(self.path, self.digests, self.plain)

    def discard(self) -> None:
        self._file.close()
        self.path.unlink(missing_ok=True)


def write_index(
    path: Path, parts: Iterable[Piece], algorithms: tuple[str, ...], packed: bool
) -> Written:
    """One index file at the new path ``path`` made of ``parts`` (see IndexWriter)."""
    writer = IndexWriter(path, algorithms, packed)
    try:
        for part in parts:
            writer.add(part)
    except BaseException:
        writer.discard()
        raise
    return writer.close()
