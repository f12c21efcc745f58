""".kpack device-code archives: a streaming writer and a validating reader. One module,
past 600 lines, because the writer and the reader are the two halves of one format:
each layout constant and TOC key is defined once, beside both.

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

Nothing in an archive is trusted to size an allocation: a code object larger
than the reader's ``max_object_size`` is refused before anything is read or
decompressed, a frame is decompressed as a bounded stream when its header
does not declare its size, and digests are computed chunk by chunk, so memory
stays bounded by the largest single object whatever the archive claims.
gfxpack's writer records each object's sha256 in its TOC entry (``sha256``,
another key other readers ignore) so that :meth:`KpackReader.verify` checks
content, not only structure.

Only regular files are opened (a FIFO would block the reader forever).
Every malformed input raises :class:`InvalidKpack` naming the file.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import re
import struct
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, TypeGuard

import msgpack
import zstandard

from gfxpack import amdgpu
from gfxpack._gc import paused_gc
from gfxpack._io import atomic_write
from gfxpack.errors import GfxpackError
from gfxpack.regular_files import open_regular, read_regular

MAGIC = b"KPAK"
CONTAINER_VERSION = 1
FORMAT_VERSION = 1
HEADER = struct.Struct("<4sIQ")  # magic, container version, TOC offset
BLOB_START = 64
U32 = struct.Struct("<I")
SCHEMES = {"none": "none", "zstd": "zstd-per-kernel"}
DEFAULT_LEVEL = 3  # TheRock's level
FRAME_OFFSETS = "zstd_frame_offsets"  # gfxpack's lookup index, optional
DIGEST = "sha256"  # gfxpack's per-entry content digest, optional
# The largest code object a reader decompresses unless told otherwise: far above any
# real HSACO, far below what a forged original_size could make a reader allocate.
DEFAULT_MAX_OBJECT_SIZE = 1 << 30
_CHUNK = 1 << 20  # what one streamed read or decompression step holds
_SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
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
    sha256: str | None = None  # as recorded in the TOC by gfxpack's writer

    @property
    def label(self) -> str:
        return f"{self.toc_key!r} for {self.arch}"


# --- writing -------------------------------------------------------------------------


class KpackWriter:
    """Writes a .kpack to a seekable binary file, one code object at a time.

    Code objects are stored in the order they are added (their ordinals); the
    TOC lists keys and arches sorted, so the same additions give the same bytes.

    >>> import io
    >>> out = io.BytesIO()
    >>> with KpackWriter(out, group="blas_lib", arch="gfx942") as writer:
    ...     digest = writer.add("lib/librocblas.so#0", b"\\x7fELF code object")
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

    def add(self, toc_key: str, code: bytes, arch: str | None = None, metadata: Any = None) -> str:
        """Append one code object under ``(toc_key, arch)``; its sha256 (hex), as
        recorded in the TOC, so callers need not hash the same bytes again."""
        arch = self._new_entry(toc_key, arch)
        if self._compressor is None:
            digest = hashlib.sha256(code).hexdigest()
            self._append(toc_key, arch, metadata, len(code), digest, code)
        else:
            frame, digest = _compress_and_hash(self._compressor, code)
            self._append(toc_key, arch, metadata, len(code), digest, frame)
        return digest

    def add_compressed(
        self,
        toc_key: str,
        compressed: tuple[int, bytes, str],
        arch: str | None = None,
        metadata: Any = None,
    ) -> None:
        """Append one code object that :func:`compress_code` compressed beforehand:
        ``(its size, the zstd frame, its sha256)``. Callers compress on several
        threads and add in a fixed order from one, so the archive's bytes do not
        depend on which thread finished first."""
        arch = self._new_entry(toc_key, arch)
        if self._compressor is None:
            raise ValueError("this archive stores code objects uncompressed")
        size, frame, digest = compressed
        self._append(toc_key, arch, metadata, size, digest, frame)

    def _new_entry(self, toc_key: str, arch: str | None) -> str:
        arch = arch or self._arch
        if arch in self._toc.get(toc_key, {}):
            raise ValueError(f"duplicate code object {toc_key!r} for {arch}")
        return arch

    def _append(
        self,
        toc_key: str,
        arch: str,
        metadata: Any,
        size: int,
        digest: str,
        stored: bytes | memoryview,
    ) -> None:
        entry: dict[str, Any] = {
            "type": "hsaco",
            "ordinal": len(self._locations),
            "original_size": size,
        }
        if metadata is not None:
            entry["metadata"] = metadata
        entry[DIGEST] = digest
        position = self._out.tell()
        if self._compressor is None:
            self._locations.append({"offset": position, "size": size})
        else:
            self._locations.append(position)
            self._out.write(U32.pack(len(stored)))
        self._out.write(stored)
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


_PARALLEL_HASH = 1 << 20  # below this, a second thread costs more than it saves


def _compress_and_hash(
    compressor: zstandard.ZstdCompressor, code: bytes | memoryview
) -> tuple[bytes, str]:
    """The zstd frame and sha256 of one object. Both release the GIL, so a large object
    is hashed on a second thread while it compresses: recording digests costs the
    writer little on a machine with a spare core. A thread per object, not a pool: a
    pool created before a fork would leave a forked worker waiting on a dead thread."""
    if len(code) < _PARALLEL_HASH:
        return compressor.compress(code), hashlib.sha256(code).hexdigest()
    digest = hashlib.sha256()
    hasher = threading.Thread(target=digest.update, args=(code,), name="kpack-sha256")
    hasher.start()
    try:
        frame = compressor.compress(code)
    finally:
        hasher.join()
    return frame, digest.hexdigest()


_compressors = threading.local()  # one per thread and level: a compressor is not shareable


def compress_code(code: bytes | memoryview, level: int = DEFAULT_LEVEL) -> tuple[int, bytes, str]:
    """(size, zstd frame, sha256) of one code object, for
    :meth:`KpackWriter.add_compressed`; safe to call from any number of threads."""
    name = f"level{level}"
    compressor: zstandard.ZstdCompressor | None = getattr(_compressors, name, None)
    if compressor is None:
        compressor = zstandard.ZstdCompressor(level=level)
        setattr(_compressors, name, compressor)
    frame, digest = _compress_and_hash(compressor, code)
    return len(code), frame, digest


class InvalidCodeObject(GfxpackError, ValueError):
    """A file filed under an arch it is not a code object for; names the file."""


def read_code_object(
    path: str | os.PathLike[str], arch: str | None = None, claimed: str = "the archive's arch"
) -> bytes:
    """A code-object file's bytes (a regular file only: a FIFO would block the writer).
    With ``arch`` it must be an AMDGPU code object for that arch (see
    :func:`check_code_object`); ``claimed`` names what says so, for the message."""
    code = read_regular(path)
    if arch is not None:
        problem = check_code_object(code, arch, claimed)
        if problem:
            raise InvalidCodeObject(f"{path}: {problem}")
    return code


def check_code_object(code: bytes | memoryview, arch: str, claimed: str) -> str | None:
    """Why ``code`` is not an AMDGPU code object for ``arch`` (an archive's or a
    kernel's arch), or None: ELF64, EM_AMDGPU, HSA and e_flags naming its processor,
    as ``split`` checks a bundle entry. A bare processor holds any of its xnack/sramecc
    variants; an arch with features (``gfx90a:xnack+``) must match them."""
    target = amdgpu.TargetId.parse(arch)
    return amdgpu.code_object_problem(code, target, exact=False, claimed=claimed)


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
            w.add(toc_key, code if isinstance(code, bytes) else read_code_object(code))
    return path


# --- reading ---------------------------------------------------------------------------


class KpackReader:
    """Reads a .kpack from an open binary file, or from a path via :meth:`open`.

    Opening validates the header and the TOC (keys, types, every ordinal and
    blob range); code objects are read and checked only when asked for, and
    none larger than ``max_object_size`` bytes is read at all.
    """

    def __init__(
        self,
        file: BinaryIO,
        name: str | os.PathLike[str] | None = None,
        max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
    ):
        self._file = file
        self.name = str(name or getattr(file, "name", "<kpack>"))
        self.max_object_size = max_object_size
        self._size = file.seek(0, os.SEEK_END)
        self._frames: list[int] | None = None
        self._digests: dict[int, tuple[int, str]] = {}  # ordinal -> (size, sha256)
        with paused_gc():  # a TOC of 10^5 entries is as many small acyclic values
            self._load()

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], max_object_size: int = DEFAULT_MAX_OBJECT_SIZE
    ) -> KpackReader:
        """Open a regular file (a FIFO or device is refused without being opened)."""
        try:
            file = os.fdopen(open_regular(path), "rb")
        except OSError as e:
            raise InvalidKpack(path, f"cannot open: {e.strerror or e}") from None
        try:
            return cls(file, path, max_object_size)
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
        toc, entries = self._read_toc(toc_offset)
        if not isinstance(toc, dict):
            raise self._fail(f"TOC is a {type(toc).__name__}, expected a map")
        for key, kind in _REQUIRED.items():
            if key not in toc:
                raise self._fail(f"TOC has no {key!r}")
            if not isinstance(toc[key], kind) or isinstance(toc[key], bool):
                raise self._fail(f"TOC {key!r} is {toc[key]!r}, expected a {kind.__name__}")
        if toc["format_version"] != FORMAT_VERSION:
            raise self._fail(f"unsupported format_version {toc['format_version']} (expected 1)")
        self.group: str = toc["group_name"]
        self.arch_family: str = toc["gfx_arch_family"]
        if not all(isinstance(arch, str) for arch in toc["gfx_arches"]):
            raise self._fail(
                f"TOC 'gfx_arches' is {toc['gfx_arches']!r}, expected a list of strings"
            )
        self.arches: list[str] = list(toc["gfx_arches"])
        self.compression: str = toc["compression_scheme"]
        if self.compression == "none":
            count = self._load_blobs(toc)
        elif self.compression == "zstd-per-kernel":
            count = self._load_zstd(toc)
        else:
            raise self._fail(
                f"unknown compression_scheme {self.compression!r} "
                "(expected 'none' or 'zstd-per-kernel')"
            )
        for kernel in entries:
            if kernel.ordinal >= count:
                raise self._fail(
                    f"TOC entry {kernel.toc_key!r} for {kernel.arch!r}: ordinal "
                    f"{kernel.ordinal} is past the blob ({count} code objects)"
                )
        entries.sort(key=lambda k: (k.toc_key, k.arch))
        self.kernels = entries  # sorted: a key's entries are found by bisection

    def _read_toc(self, toc_offset: int) -> tuple[Any, list[Kernel]]:
        """The TOC's fields, with its ``toc`` map turned into kernels one key at a time:
        the decoded map of a large archive is never held whole beside its kernels."""
        self._file.seek(toc_offset)
        unpacker = msgpack.Unpacker(self._file, raw=False, read_size=_CHUNK)
        toc: dict[str, Any] = {}
        entries: list[Kernel] = []
        try:
            try:
                fields = unpacker.read_map_header()
            except ValueError:  # not a map: decode one value to say what it is
                self._file.seek(toc_offset)
                return msgpack.Unpacker(self._file, raw=False, read_size=_CHUNK).unpack(), []
            for _ in range(fields):
                key = unpacker.unpack()
                if not isinstance(key, str):
                    raise ValueError(f"a map key is {key!r}, expected a string")
                if key in toc:
                    raise self._fail(f"TOC repeats the key {key!r}")
                if key != "toc":
                    toc[key] = unpacker.unpack()
                    continue
                try:
                    count = unpacker.read_map_header()
                except ValueError:
                    raise self._fail("TOC 'toc' is not a map of keys") from None
                for _ in range(count):
                    toc_key = unpacker.unpack()
                    self._add_entries(toc_key, unpacker.unpack(), entries)
                toc[key] = {}
            if unpacker.tell() != self._size - toc_offset:
                raise ValueError(f"{self._size - toc_offset - unpacker.tell()} bytes after it")
        except InvalidKpack:
            raise
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise self._fail(f"TOC at offset {toc_offset} is not MessagePack ({e})") from None
        return toc, entries

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
        return int(count)

    def _add_entries(self, toc_key: Any, arches: Any, into: list[Kernel]) -> None:
        """The entries of one TOC key, checked, appended to ``into``."""
        if not isinstance(toc_key, str) or not isinstance(arches, dict):
            raise self._fail(f"TOC entry {toc_key!r} is not a map of arches")
        for arch, entry in arches.items():
            if not isinstance(arch, str):
                raise self._fail(f"TOC entry {toc_key!r}: arch {arch!r} is not a string")
            if not isinstance(entry, dict):
                raise self._fail(f"TOC entry {toc_key!r} for {arch!r} is {entry!r}, expected a map")
            try:
                kind, ordinal, size = entry["type"], entry["ordinal"], entry["original_size"]
            except KeyError as e:
                raise self._fail(
                    f"TOC entry {toc_key!r} for {arch!r} has no {e.args[0]!r}"
                ) from None
            if not (_is_count(ordinal) and _is_count(size)):
                raise self._fail(
                    f"TOC entry {toc_key!r} for {arch!r}: ordinal and original_size must be "
                    "integers >= 0"
                )
            digest = entry.get(DIGEST)
            if digest is not None and not (type(digest) is str and _SHA256.match(digest)):
                raise self._fail(
                    f"TOC entry {toc_key!r} for {arch!r}: {DIGEST} must be 64 lowercase hex digits"
                )
            # Arches and types repeat on every entry: share one string of each.
            into.append(
                Kernel(
                    toc_key,
                    _shared(arch),
                    ordinal,
                    size,
                    _shared(kind) if type(kind) is str else kind,
                    entry.get("metadata"),
                    digest,
                )
            )

    # Lookups.

    def find(self, toc_key: str, arch: str | None = None) -> Kernel:
        """The entry for a key, and an arch unless the key has only one."""
        found = self._entries_of(toc_key)
        if not found:
            raise self._fail(f"no code object {toc_key!r} (see 'gfxpack kpack list')")
        if arch is None:
            if len(found) != 1:
                raise self._fail(
                    f"{toc_key!r} exists for {', '.join(k.arch for k in found)}: give an arch"
                )
            return found[0]
        for kernel in found:
            if kernel.arch == arch:
                return kernel
        raise self._fail(
            f"no code object {toc_key!r} for {arch} (has {', '.join(k.arch for k in found)})"
        )

    def arches_of(self, toc_key: str) -> list[str]:
        """The arches a key is stored for, sorted; empty when the key is absent."""
        return [k.arch for k in self._entries_of(toc_key)]

    def _entries_of(self, toc_key: str) -> list[Kernel]:
        """A key's entries, by arch: a bisection of the sorted kernels, no index to hold."""
        start = bisect.bisect_left(self.kernels, toc_key, key=_key_of)
        end = start
        while end < len(self.kernels) and self.kernels[end].toc_key == toc_key:
            end += 1
        return self.kernels[start:end]

    @property
    def has_digests(self) -> bool:
        """Whether every entry carries a recorded sha256 (gfxpack's writer records them)."""
        return bool(self.kernels) and all(k.sha256 is not None for k in self.kernels)

    def read(self, toc_key: str, arch: str | None = None) -> bytes:
        """One code object, decompressed alone and checked against original_size."""
        return self.read_kernel(self.find(toc_key, arch))

    def read_kernel(self, kernel: Kernel) -> bytes:
        if self.compression == "none":  # one read, no pieces to join
            offset, size = self._raw_blob(kernel)
            return self._pread(offset, size)
        return b"".join(self._chunks(kernel))  # one piece when the frame declares its size

    def digest(self, kernel: Kernel) -> str:
        """The sha256 of one object's bytes, streamed; remembered per ordinal, so a frame
        is decompressed once however many entries share it."""
        return self._digest(kernel, remember=True)

    def _digest(self, kernel: Kernel, remember: bool) -> str:
        known = self._digests.get(kernel.ordinal)
        if known is not None:
            if known[0] != kernel.original_size:
                raise self._size_differs(kernel, known[0])
            return known[1]
        sha = hashlib.sha256()
        size = 0
        for chunk in self._chunks(kernel):
            sha.update(chunk)
            size += len(chunk)
        if remember:
            self._digests[kernel.ordinal] = (size, sha.hexdigest())
        return sha.hexdigest()

    def _size_differs(self, kernel: Kernel, actual: int) -> InvalidKpack:
        return self._fail(
            f"{kernel.label}: {actual} bytes, original_size says {kernel.original_size}"
        )

    def _chunks(self, kernel: Kernel) -> Iterator[bytes]:
        """One object's bytes in pieces, checked against original_size and the size
        limit before anything is read."""
        if self.compression == "none":
            offset, size = self._raw_blob(kernel)
            end = offset + size
            while offset < end:
                step = min(_CHUNK, end - offset)
                yield self._pread(offset, step)
                offset += step
        else:
            self._check_limit(kernel)
            yield from self._decompress(kernel, self._frame(kernel))

    def _check_limit(self, kernel: Kernel) -> None:
        if kernel.original_size > self.max_object_size:
            raise self._fail(
                f"{kernel.label}: original_size {kernel.original_size:,} bytes exceeds the "
                f"limit of {self.max_object_size:,} bytes per code object; refusing to read "
                "it (raise the limit if the object is genuine)"
            )

    def _raw_blob(self, kernel: Kernel) -> tuple[int, int]:
        """Where a stored object lies (scheme none), checked against its entry first."""
        self._check_limit(kernel)
        offset, size = self._blobs[kernel.ordinal]
        if size != kernel.original_size:
            raise self._size_differs(kernel, size)
        return offset, size

    def _frame(self, kernel: Kernel) -> bytes:
        ordinal = kernel.ordinal
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
        # zstd never needs much more than the input to store it: a larger frame cannot
        # hold what original_size says, and reading it would cost memory for nothing.
        bound = _frame_bound(kernel.original_size)
        if size > bound:
            raise self._fail(
                f"{kernel.label}: frame {ordinal} has {size:,} bytes, more than a zstd frame "
                f"of original_size {kernel.original_size:,} can need ({bound:,})"
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

    def _decompress(self, kernel: Kernel, frame: bytes) -> Iterator[bytes]:
        label = kernel.label
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
        produced = 0
        try:
            if declared != -1:  # known and within the limit: one call, one exact buffer
                yield self._decompressor.decompress(frame)
                return
            # No declared size: a bounded stream, stopped as soon as it says too much.
            with self._decompressor.stream_reader(frame) as stream:
                while chunk := stream.read(min(_CHUNK, kernel.original_size - produced + 1)):
                    produced += len(chunk)
                    if produced > kernel.original_size:
                        raise self._fail(
                            f"{label}: frame decompresses to more than original_size "
                            f"({kernel.original_size} bytes)"
                        )
                    yield chunk
        except zstandard.ZstdError as e:
            raise self._fail(f"{label}: corrupt zstd frame ({e})") from None
        if produced != kernel.original_size:
            raise self._fail(
                f"{label}: frame decompresses to {produced} bytes, "
                f"original_size says {kernel.original_size}"
            )

    def verified(self) -> Iterator[tuple[Kernel, str]]:
        """Every code object with the sha256 of its bytes, streamed in key order; each
        frame decompressed once. Content that differs from a digest the TOC records is
        raised after the last object, naming every object and arch concerned."""
        if self.compression == "zstd-per-kernel":
            walked = list(self._walk_frames())
            if self._frames is not None and self._frames != walked:
                raise self._fail(f"{FRAME_OFFSETS} disagrees with the frame size prefixes")
            self._frames = walked
        # Remember only the digests of frames several entries share: memory for the
        # listing of a large archive stays at its TOC.
        ordinals = sorted(kernel.ordinal for kernel in self.kernels)
        shared = {a for a, b in itertools.pairwise(ordinals) if a == b}
        del ordinals
        differing: list[tuple[Kernel, str]] = []
        for kernel in self.kernels:
            digest = self._digest(kernel, remember=kernel.ordinal in shared)
            if kernel.sha256 is not None and kernel.sha256 != digest:
                differing.append((kernel, digest))
            yield kernel, digest
        if differing:
            shown = "; ".join(
                f"{k.label} has sha256 {digest}, the TOC records {k.sha256}"
                for k, digest in differing[:5]
            )
            more = f"; and {len(differing) - 5} more" if len(differing) > 5 else ""
            raise self._fail(
                f"content differs from the recorded digest for {len(differing)} code "
                f"object(s): {shown}{more}"
            )

    def verify(self) -> list[tuple[Kernel, str]]:
        """Decompress every code object; each with the sha256 of its bytes (see
        :meth:`verified`)."""
        return list(self.verified())


def _frame_bound(size: int) -> int:
    """An upper bound on the zstd frame of ``size`` bytes: ZSTD_compressBound (the size,
    1/256 of it, and at most 64 bytes more for small inputs) plus 1 KiB of slack."""
    return size + (size >> 8) + 64 + 1024


_shared = sys.intern


def _key_of(kernel: Kernel) -> str:
    return kernel.toc_key


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
