"""Payload compression: zstd (default, every core), xz, gzip or none, with a level.

>>> Compression.parse("zstd:19")
Compression(codec='zstd', level=19)
>>> Compression.parse("xz").level
6
"""

from __future__ import annotations

import gzip
import lzma
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gfxpack._io import Writable, as_binary_file
from gfxpack.errors import GfxpackError

if TYPE_CHECKING:
    import zstandard

DEFAULT_LEVELS = {"zstd": 9, "xz": 6, "gzip": 9, "none": 0}
LEVEL_RANGES = {"zstd": (1, 22), "xz": (0, 9), "gzip": (0, 9), "none": (0, 0)}
DEB_SUFFIX = {"zstd": ".zst", "xz": ".xz", "gzip": ".gz", "none": ""}
# From this many bytes on, zstd compresses on worker threads (every core). They cost
# 5-10% more CPU time (each job's input is copied and handed over), which pays off
# only when one archive would otherwise keep one core busy while the others idle: a
# large package at the end of a build. Smaller archives, most of any release,
# compress on the calling thread, and the build's processes keep the cores busy.
THREADED_FROM = 64 << 20


class InvalidCompression(GfxpackError, ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Compression:
    codec: str = "zstd"
    level: int = DEFAULT_LEVELS["zstd"]

    @classmethod
    def parse(cls, text: str) -> Compression:
        """``codec`` or ``codec:level``: zstd:19, xz:6, gzip:9, none."""
        codec, _, level = text.partition(":")
        if codec not in DEFAULT_LEVELS:
            raise InvalidCompression(
                f"compression {text!r}: expected zstd, xz, gzip or none, optionally with "
                ":LEVEL (zstd:19)"
            )
        low, high = LEVEL_RANGES[codec]
        if not level:
            return cls(codec, DEFAULT_LEVELS[codec])
        if not level.isdigit() or not low <= int(level) <= high:
            raise InvalidCompression(
                f"compression {text!r}: the {codec} level must be {low}..{high}"
            )
        return cls(codec, int(level))

    def __str__(self) -> str:
        return self.codec if self.codec == "none" else f"{self.codec}:{self.level}"


class _Uncompressed:
    def __init__(self, out: Writable):
        self._out = out

    def write(self, data: bytes) -> int:
        return self._out.write(data)

    def flush(self) -> None:
        pass


@contextmanager
def compressing(out: Writable, compression: Compression, size_hint: int) -> Iterator[Writable]:
    """A writable stream compressing into ``out``; closing it leaves ``out`` open.

    zstd runs multi-threaded on every core when ``size_hint`` (the expected input
    size, which must be computed from the inputs alone) is THREADED_FROM or more,
    and on the calling thread below; its output does not depend on the number of
    cores, and the hint lets it size its window so a small package does not pay for
    a large one.
    Nothing depends on time or file names (gzip's header is zeroed), so builds are
    reproducible.
    """
    writer: zstandard.ZstdCompressionWriter | lzma.LZMAFile | gzip.GzipFile
    if compression.codec == "zstd":
        # Imported here, not at the top: every command that names a package format
        # imports this module, and only the writers compress.
        import zstandard

        params = zstandard.ZstdCompressionParameters.from_level(
            compression.level,
            threads=-1 if size_hint >= THREADED_FROM else 0,
            source_size=size_hint,
            write_checksum=True,
        )
        writer = zstandard.ZstdCompressor(compression_params=params).stream_writer(
            as_binary_file(out), closefd=False
        )
    elif compression.codec == "xz":
        sink = as_binary_file(out)
        writer = lzma.LZMAFile(sink, "wb", format=lzma.FORMAT_XZ, preset=compression.level)  # noqa: SIM115
    elif compression.codec == "gzip":
        writer = gzip.GzipFile(
            fileobj=as_binary_file(out),
            mode="wb",
            compresslevel=compression.level,
            filename="",
            mtime=0,
        )
    else:
        yield _Uncompressed(out)
        return
    with writer:
        yield writer
