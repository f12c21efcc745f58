""".kpack device-code archives: a streaming writer and a validating reader.

Layout (spec kpack.md): a 16-byte header (``KPAK``, container version, TOC
offset), zero padding to offset 64, the blob, then a MessagePack table of
contents. The blob is either the raw code objects (scheme ``none``, located by
``blobs``) or ``zstd-per-kernel``: a uint32 count, then one uint32-size-prefixed
independent zstd frame per code object, so any one decompresses alone.

Neither side holds the archive in memory: the writer streams one code object
at a time and back-patches the header; the reader keeps only the TOC and
reads one frame per lookup. gfxpack's writer also records where each frame
starts (``zstd_frame_offsets``, a key other readers ignore), so a lookup costs
one TOC parse and one read whatever the archive's size; archives without it
are indexed by walking the size prefixes once, as the spec describes.

Every malformed input raises :class:`InvalidKpack` naming the file.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, TypeGuard

import msgpack
import zstandard

from gfxpack._io import atomic_write
from gfxpack.errors import GfxpackError

MAGIC = b"KPAK"
CONTAINER_VERSION = 1
FORMAT_VERSION = 1
HEADER = struct.Struct("<4sIQ")  # magic, container version, TOC offset
BLOB_START = 64
U32 = struct.Struct("<I")
SCHEMES = {"none": "none", "zstd": "zstd-per-kernel"}
DEFAULT_LEVEL = 3  # TheRock's level
FRAME_OFFSETS = "zstd_frame_offsets"  # gfxpack's lookup index, optional
_REQUIRED = {
    "format_version": int,
    "group_name": str,
    "gfx_arch_family": str,
    "gfx_arches": list,
    "compression_scheme": str,
    "toc": dict,
}


class InvalidKpack(GfxpackError, ValueError):
    """A .kpack file that is not well formed, or a lookup it cannot answer."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True, slots=True)
class Kernel:
    """One code object's TOC entry."""

    toc_key: str
    arch: str
    ordinal: int
    original_size: int
    type: str = "hsaco"
    metadata: Any = None


# --- writing -------------------------------------------------------------------------


class KpackWriter:
    """Writes a .kpack to a seekable binary file, one code object at a time.

    Code objects are stored in the order they are added (their ordinals); the
    TOC lists keys and arches sorted, so the same additions give the same bytes.

    >>> import io
    >>> out = io.BytesIO()
    >>> with KpackWriter(out, group="blas_lib", arch="gfx942") as writer:
    ...     writer.add("lib/librocblas.so#0", b"\\x7fELF code object")
    >>> KpackReader(io.BytesIO(out.getvalue())).read("lib/librocblas.so#0")
    b'\\x7fELF code object'
    """

    def __init__(
        self,
        out: BinaryIO,
        group: str,
        arch: str,
        compression: str = "zstd",
        level: int = DEFAULT_LEVEL,
        arches: Iterable[str] | None = None,
    ):
        if compression not in SCHEMES:
            raise ValueError(f"compression {compression!r}: expected one of {', '.join(SCHEMES)}")
        self._out = out
        self._group = group
        self._arch = arch
        self._arches = set(arches or [arch])
        self._scheme = SCHEMES[compression]
        self._compressor = zstandard.ZstdCompressor(level=level) if compression == "zstd" else None
        self._toc: dict[str, dict[str, dict[str, Any]]] = {}
        self._locations: list[Any] = []  # none: {offset, size}; zstd: frame offsets
        self._closed = False
        out.write(HEADER.pack(MAGIC, CONTAINER_VERSION, 0))
        out.write(bytes(BLOB_START - HEADER.size))
        if self._compressor is not None:
            out.write(U32.pack(0))  # the frame count, back-patched on close

    def add(self, toc_key: str, code: bytes, arch: str | None = None, metadata: Any = None) -> None:
        """Append one code object under ``(toc_key, arch)``."""
        arch = arch or self._arch
        if arch in self._toc.get(toc_key, {}):
            raise ValueError(f"duplicate code object {toc_key!r} for {arch}")
        entry: dict[str, Any] = {
            "type": "hsaco",
            "ordinal": len(self._locations),
            "original_size": len(code),
        }
        if metadata is not None:
            entry["metadata"] = metadata
        position = self._out.tell()
        if self._compressor is None:
            self._locations.append({"offset": position, "size": len(code)})
            self._out.write(code)
        else:
            frame = self._compressor.compress(code)
            self._locations.append(position)
            self._out.write(U32.pack(len(frame)))
            self._out.write(frame)
        self._toc.setdefault(toc_key, {})[arch] = entry
        self._arches.add(arch)

    def close(self) -> None:
        """Write the TOC and back-patch the header."""
        if self._closed:
            return
        self._closed = True
        toc: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "group_name": self._group,
            "gfx_arch_family": self._arch,
            "gfx_arches": sorted(self._arches),
            "compression_scheme": self._scheme,
        }
        toc_offset = self._out.tell()
        if self._compressor is None:
            toc["blobs"] = self._locations
        else:
            toc["zstd_offset"] = BLOB_START
            toc["zstd_size"] = toc_offset - BLOB_START
            toc[FRAME_OFFSETS] = self._locations
            self._out.seek(BLOB_START)
            self._out.write(U32.pack(len(self._locations)))
        toc["toc"] = {
            key: {arch: self._toc[key][arch] for arch in sorted(self._toc[key])}
            for key in sorted(self._toc)
        }
        self._out.seek(toc_offset)
        self._out.write(msgpack.packb(toc, use_bin_type=True))
        self._out.seek(8)
        self._out.write(struct.pack("<Q", toc_offset))
        self._out.seek(0, os.SEEK_END)

    def __enter__(self) -> KpackWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()


def write_kpack(
    path: str | os.PathLike[str],
    kernels: Iterable[tuple[str, bytes | Path]],
    group: str,
    arch: str,
    compression: str = "zstd",
    level: int = DEFAULT_LEVEL,
) -> Path:
    """Write an archive atomically: a temporary file renamed into place when complete.

    ``kernels`` yields ``(toc_key, code)`` with ``code`` as bytes or a file path,
    read one at a time.
    """
    path = Path(path)
    with atomic_write(path) as out, KpackWriter(out, group, arch, compression, level) as w:
        for toc_key, code in kernels:
            w.add(toc_key, code if isinstance(code, bytes) else Path(code).read_bytes())
    return path


# --- reading ---------------------------------------------------------------------------


class KpackReader:
    """Reads a .kpack from an open binary file, or from a path via :meth:`open`.

    Opening validates the header and the TOC (keys, types, every ordinal and
    blob range); code objects are read and checked only when asked for.
    """

    def __init__(self, file: BinaryIO, name: str | os.PathLike[str] | None = None):
        self._file = file
        self.name = str(name or getattr(file, "name", "<kpack>"))
        self._size = file.seek(0, os.SEEK_END)
        self._frames: list[int] | None = None
        self._load()

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> KpackReader:
        try:
            file = open(path, "rb")  # noqa: SIM115 - closed by close() / the context manager
        except OSError as e:
            raise InvalidKpack(path, f"cannot open: {e.strerror}") from None
        try:
            return cls(file, path)
        except BaseException:
            file.close()
            raise

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> KpackReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, problem: str) -> InvalidKpack:
        return InvalidKpack(self.name, problem)

    def _pread(self, offset: int, size: int) -> bytes:
        self._file.seek(offset)
        data = self._file.read(size)
        if len(data) != size:
            raise self._fail(f"truncated: wanted {size} bytes at offset {offset}")
        return data

    # The header and TOC, validated once on open.

    def _load(self) -> None:
        if self._size < HEADER.size:
            raise self._fail(f"truncated: {self._size} bytes, a .kpack header needs {HEADER.size}")
        magic, version, toc_offset = HEADER.unpack(self._pread(0, HEADER.size))
        if magic != MAGIC:
            raise self._fail(f"bad magic {magic!r} (expected {MAGIC!r}): not a .kpack file")
        if version != CONTAINER_VERSION:
            raise self._fail(f"unsupported container version {version} (expected 1)")
        if not BLOB_START <= toc_offset < self._size:
            raise self._fail(
                f"TOC offset {toc_offset} is outside the file "
                f"(the blob starts at {BLOB_START}, the file has {self._size} bytes)"
            )
        self.toc_offset = toc_offset
        try:
            toc = msgpack.unpackb(self._pread(toc_offset, self._size - toc_offset), raw=False)
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise self._fail(f"TOC at offset {toc_offset} is not MessagePack ({e})") from None
        if not isinstance(toc, dict):
            raise self._fail(f"TOC is a {type(toc).__name__}, expected a map")
        for key, kind in _REQUIRED.items():
            if key not in toc:
                raise self._fail(f"TOC has no {key!r}")
            if not isinstance(toc[key], kind) or isinstance(toc[key], bool):
                raise self._fail(f"TOC {key!r} is {toc[key]!r}, expected a {kind.__name__}")
        if toc["format_version"] != FORMAT_VERSION:
            raise self._fail(f"unsupported format_version {toc['format_version']} (expected 1)")
        self.group = toc["group_name"]
        self.arch_family = toc["gfx_arch_family"]
        if not all(isinstance(arch, str) for arch in toc["gfx_arches"]):
            raise self._fail(
                f"TOC 'gfx_arches' is {toc['gfx_arches']!r}, expected a list of strings"
            )
        self.arches = list(toc["gfx_arches"])
        self.compression = toc["compression_scheme"]
        if self.compression == "none":
            count = self._load_blobs(toc)
        elif self.compression == "zstd-per-kernel":
            count = self._load_zstd(toc)
        else:
            raise self._fail(
                f"unknown compression_scheme {self.compression!r} "
                "(expected 'none' or 'zstd-per-kernel')"
            )
        self.kernels = self._load_entries(toc["toc"], count)
        self._by_key: dict[str, dict[str, Kernel]] = {}
        for kernel in self.kernels:
            self._by_key.setdefault(kernel.toc_key, {})[kernel.arch] = kernel

    def _load_blobs(self, toc: dict[str, Any]) -> int:
        blobs = toc.get("blobs")
        if not isinstance(blobs, list):
            raise self._fail("TOC has no 'blobs' list (scheme 'none')")
        self._blobs: list[tuple[int, int]] = []
        for ordinal, blob in enumerate(blobs):
            offset = blob.get("offset") if isinstance(blob, dict) else None
            size = blob.get("size") if isinstance(blob, dict) else None
            if not (_is_count(offset) and _is_count(size)):
                raise self._fail(f"blobs[{ordinal}] is {blob!r}, expected {{offset, size}}")
            if offset < BLOB_START or offset + size > self.toc_offset:
                raise self._fail(
                    f"blob {ordinal} (offset {offset}, size {size}) lies outside the blob area "
                    f"({BLOB_START}..{self.toc_offset})"
                )
            self._blobs.append((offset, size))
        return len(self._blobs)

    def _load_zstd(self, toc: dict[str, Any]) -> int:
        start, size = toc.get("zstd_offset"), toc.get("zstd_size")
        if not (_is_count(start) and _is_count(size)):
            raise self._fail("TOC needs integer 'zstd_offset' and 'zstd_size' (zstd-per-kernel)")
        if start < BLOB_START or size < U32.size or start + size > self.toc_offset:
            raise self._fail(
                f"zstd blob (offset {start}, size {size}) lies outside the blob area "
                f"({BLOB_START}..{self.toc_offset})"
            )
        self._zstd_start, self._zstd_end = start, start + size
        count: int = U32.unpack(self._pread(start, U32.size))[0]
        hint = toc.get(FRAME_OFFSETS)
        if isinstance(hint, list) and len(hint) == count and all(map(_is_count, hint)):
            self._frames = hint
        self._decompressor = zstandard.ZstdDecompressor()
        return count

    def _load_entries(self, entries: dict[str, Any], count: int) -> list[Kernel]:
        kernels = []
        for toc_key, arches in entries.items():
            if not isinstance(toc_key, str) or not isinstance(arches, dict):
                raise self._fail(f"TOC entry {toc_key!r} is not a map of arches")
            for arch, entry in arches.items():
                where = f"TOC entry {toc_key!r} for {arch!r}"
                if not isinstance(entry, dict):
                    raise self._fail(f"{where} is {entry!r}, expected a map")
                for key in ("type", "ordinal", "original_size"):
                    if key not in entry:
                        raise self._fail(f"{where} has no {key!r}")
                ordinal, size = entry["ordinal"], entry["original_size"]
                if not (_is_count(ordinal) and _is_count(size)):
                    raise self._fail(f"{where}: ordinal and original_size must be integers >= 0")
                if ordinal >= count:
                    raise self._fail(
                        f"{where}: ordinal {ordinal} is past the blob ({count} code objects)"
                    )
                kernels.append(
                    Kernel(toc_key, arch, ordinal, size, entry["type"], entry.get("metadata"))
                )
        kernels.sort(key=lambda k: (k.toc_key, k.arch))
        return kernels

    # Lookups.

    def find(self, toc_key: str, arch: str | None = None) -> Kernel:
        """The entry for a key, and an arch unless the key has only one."""
        arches = self._by_key.get(toc_key)
        if arches is None:
            raise self._fail(f"no code object {toc_key!r} (see 'gfxpack kpack list')")
        if arch is None:
            if len(arches) != 1:
                raise self._fail(
                    f"{toc_key!r} exists for {', '.join(sorted(arches))}: give an arch"
                )
            return next(iter(arches.values()))
        if arch not in arches:
            raise self._fail(
                f"no code object {toc_key!r} for {arch} (has {', '.join(sorted(arches))})"
            )
        return arches[arch]

    def read(self, toc_key: str, arch: str | None = None) -> bytes:
        """One code object, decompressed alone and checked against original_size."""
        return self.read_kernel(self.find(toc_key, arch))

    def read_kernel(self, kernel: Kernel) -> bytes:
        if self.compression == "none":
            offset, size = self._blobs[kernel.ordinal]
            data = self._pread(offset, size)
        else:
            data = self._decompress(kernel, self._frame(kernel.ordinal))
        if len(data) != kernel.original_size:
            raise self._fail(
                f"{kernel.toc_key!r} for {kernel.arch}: {len(data)} bytes, "
                f"original_size says {kernel.original_size}"
            )
        return data

    def _frame(self, ordinal: int) -> bytes:
        if self._frames is None:
            self._frames = list(self._walk_frames())
        prefix = self._frames[ordinal]
        if not self._zstd_start + U32.size <= prefix <= self._zstd_end - U32.size:
            raise self._fail(f"frame {ordinal} starts at {prefix}, outside the zstd blob")
        (size,) = U32.unpack(self._pread(prefix, U32.size))
        if prefix + U32.size + size > self._zstd_end:
            raise self._fail(
                f"frame {ordinal} (offset {prefix}, size {size}) overruns the zstd blob, which "
                f"ends at {self._zstd_end}"
            )
        return self._pread(prefix + U32.size, size)

    def _walk_frames(self) -> Iterator[int]:
        """The offset of each frame's size prefix, read in one pass over the prefixes."""
        (count,) = U32.unpack(self._pread(self._zstd_start, U32.size))
        position = self._zstd_start + U32.size
        for ordinal in range(count):
            if position + U32.size > self._zstd_end:
                raise self._fail(f"frame {ordinal} starts past the zstd blob ({count} declared)")
            yield position
            (size,) = U32.unpack(self._pread(position, U32.size))
            position += U32.size + size
            if position > self._zstd_end:
                raise self._fail(
                    f"frame {ordinal} (size {size}) overruns the zstd blob, which ends at "
                    f"{self._zstd_end}"
                )

    def _decompress(self, kernel: Kernel, frame: bytes) -> bytes:
        label = f"{kernel.toc_key!r} for {kernel.arch}"
        try:
            declared = zstandard.frame_content_size(frame)
        except zstandard.ZstdError as e:
            raise self._fail(f"{label}: not a zstd frame ({e})") from None
        # Check the declared size first: a frame's header decides the allocation.
        if declared not in (-1, kernel.original_size):
            raise self._fail(
                f"{label}: frame decompresses to {declared} bytes, "
                f"original_size says {kernel.original_size}"
            )
        try:
            return self._decompressor.decompress(frame, max_output_size=kernel.original_size)
        except zstandard.ZstdError as e:
            raise self._fail(f"{label}: corrupt zstd frame ({e})") from None

    def verify(self) -> list[tuple[Kernel, str]]:
        """Decompress every code object; each with the sha256 of its bytes."""
        if self.compression == "zstd-per-kernel":
            walked = list(self._walk_frames())
            if self._frames is not None and self._frames != walked:
                raise self._fail(f"{FRAME_OFFSETS} disagrees with the frame size prefixes")
            self._frames = walked
        return [
            (kernel, hashlib.sha256(self.read_kernel(kernel)).hexdigest())
            for kernel in self.kernels
        ]


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
