"""Clang offload bundles: the uncompressed layout and the ``CCOB`` compressed one.

Uncompressed: the 24-byte magic ``__CLANG_OFFLOAD_BUNDLE__``, a u64 entry count,
then per entry u64 offset (from the bundle start), u64 size, u64 triple length
and the triple. One entry is the host's (empty); every other one is an AMDGPU
code object for the target id at the end of its triple.

Compressed: ``CCOB``, u16 version, u16 method (0 zlib, 1 zstd), then version 1:
u32 uncompressed size and u64 hash; version 2: u32 total size, u32 uncompressed
size, u64 hash; version 3: the same with u64 sizes. The payload decompresses
to an uncompressed bundle. Versions 2 and 3 say how long they are; version 1
ends where its one zlib/zstd stream ends, which the decompressor reports (the
magic is never searched for: ``CCOB`` can occur inside compressed data).

Everything is bounds-checked; a problem raises :class:`BundleError` with a
sentence the caller prefixes with the file and bundle index.

Nothing a header states sizes an allocation. A bundle may hold nothing larger
than ``max_size`` (the limit a .kpack reader applies to one code object, the
same ``--max-object-size``): a CCOB header stating more is refused before a
byte is decompressed, and what it does state is only the most the stream may
produce. The stream is decompressed a few input bytes at a time, so output
grows with what the data really holds and stops as soon as it passes the
stated size; one that ends short of it is refused too.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import zstandard

from gfxpack.amdgpu import TargetId, code_object_problem
from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB = b"CCOB"
U64 = struct.Struct("<Q")
ENTRY = struct.Struct("<QQQ")  # offset, size, triple length
CCOB_HEAD = struct.Struct("<4sHH")
CCOB_SIZES = {1: struct.Struct("<IQ"), 2: struct.Struct("<IIQ"), 3: struct.Struct("<QQQ")}
METHODS = {0: "zlib", 1: "zstd"}
DEVICE_PREFIX = "amdgcn-amd-amdhsa-"
MAX_TRIPLE = 1024
CHUNK = 1 << 20
# No zstd or zlib block expands more than this many times (zstd RLE blocks are the
# worst): feeding at most (room left / MAX_RATIO) input bytes per call bounds the
# output of a hostile stream to a little past the size the header states.
MAX_RATIO = 1 << 16


class BundleError(ValueError):
    """A bundle that does not parse; the message says what was expected."""


@dataclass(frozen=True)
class CodeObject:
    """One device entry: where its bytes lie in the (uncompressed) bundle."""

    triple: str
    target: TargetId
    offset: int
    size: int


@dataclass(frozen=True)
class Bundle:
    """One bundle: its place in the section, how it was stored, its device entries.

    A compressed bundle is decompressed to be checked, then dropped: only
    :meth:`contents` decompresses it again, so a file of many compressed
    bundles never holds more than the ones in use.
    """

    offset: int  # in the section
    length: int  # bytes it occupies in the section
    compression: str | None  # None, "zlib" or "zstd"
    ccob_version: int | None
    host_triples: tuple[str, ...]
    code_objects: tuple[CodeObject, ...]
    stored: memoryview  # its bytes in the section
    uncompressed_size: int
    payload_start: int = 0  # where a CCOB bundle's compressed stream starts in ``stored``

    def contents(self) -> memoryview:
        """The uncompressed bundle: a view of the file, or freshly decompressed bytes."""
        if self.compression is None:
            return self.stored
        data, _ = _decompress(
            self.compression, self.stored[self.payload_start :], self.uncompressed_size, True
        )
        return memoryview(data)

    def code(self, obj: CodeObject, contents: memoryview | None = None) -> memoryview:
        """One code object's bytes, from ``contents`` when the caller already has them."""
        data = self.contents() if contents is None else contents
        return data[obj.offset : obj.offset + obj.size]


def parse(section: memoryview, offset: int, max_size: int = DEFAULT_MAX_OBJECT_SIZE) -> Bundle:
    """The bundle starting ``offset`` bytes into ``section``; neither it (decompressed)
    nor any of its code objects may exceed ``max_size`` bytes."""
    if offset < 0 or offset >= len(section):
        raise BundleError(f"starts at {offset}, outside the section ({len(section)} bytes)")
    view = section[offset:]
    if bytes(view[:4]) == CCOB:
        return _parse_compressed(view, offset, max_size)
    if bytes(view[: len(MAGIC)]) != MAGIC:
        raise BundleError(f"bad magic {bytes(view[:24])!r}, expected {MAGIC.decode()} or CCOB")
    length, hosts, objects = _parse_uncompressed(view, max_size)
    return Bundle(offset, length, None, None, hosts, objects, view[:length], length)


def _over_limit(what: str, size: int, max_size: int) -> BundleError:
    return BundleError(
        f"{what} {size:,} bytes, more than the limit of {max_size:,} bytes per code object "
        "(--max-object-size); refusing to read it"
    )


def _parse_uncompressed(
    view: memoryview, max_size: int
) -> tuple[int, tuple[str, ...], tuple[CodeObject, ...]]:
    """(length, host triples, code objects) of an uncompressed bundle in ``view``."""
    position = len(MAGIC)
    count = _unpack(U64, view, position, "entry count")[0]
    position += U64.size
    if count == 0 or count > (len(view) - position) // ENTRY.size:
        raise BundleError(f"entry count {count} does not fit the bundle")
    end = position
    hosts: list[str] = []
    objects: list[CodeObject] = []
    seen: set[str] = set()
    for number in range(count):
        entry_offset, size, triple_length = _unpack(ENTRY, view, position, f"entry {number}")
        position += ENTRY.size
        if triple_length == 0 or triple_length > MAX_TRIPLE:
            raise BundleError(f"entry {number}: triple length {triple_length}")
        raw = bytes(_slice(view, position, triple_length, f"entry {number} triple"))
        position += triple_length
        try:
            triple = raw.decode("ascii")
        except UnicodeDecodeError:
            raise BundleError(f"entry {number}: triple {raw!r} is not ASCII") from None
        if triple in seen:
            raise BundleError(f"entry {number}: {triple} appears twice")
        seen.add(triple)
        if entry_offset + size > len(view):
            raise BundleError(
                f"entry {number} ({triple}): offset {entry_offset} size {size} runs past the "
                f"section ({len(view)} bytes left)"
            )
        end = max(end, entry_offset + size)
        if triple.startswith("host-"):
            hosts.append(triple)
            continue
        target = _device_target(triple, number)
        if size > max_size:
            # Its archive could not be read back with the same limit.
            raise _over_limit(f"entry {number} ({triple}) is", size, max_size)
        code = view[entry_offset : entry_offset + size]
        check_code_object(code, target, f"entry {number} ({triple})")
        objects.append(CodeObject(triple, target, entry_offset, size))
    end = max(end, position)
    if not objects:
        raise BundleError("no device code object")
    return end, tuple(hosts), tuple(objects)


def _device_target(triple: str, number: int) -> TargetId:
    kind, _, rest = triple.partition("-")
    if not kind.startswith("hip") or not rest.startswith(DEVICE_PREFIX):
        raise BundleError(
            f"entry {number}: triple {triple!r}, expected host-… or "
            f"hipv4-{DEVICE_PREFIX}-<target id>"
        )
    _environment, _, target = rest[len(DEVICE_PREFIX) :].partition("-")
    try:
        return TargetId.parse(target)
    except ValueError as e:
        raise BundleError(f"entry {number}: {e}") from None


def check_code_object(code: memoryview, target: TargetId, where: str) -> None:
    """An AMDGPU code object for exactly ``target``: ELF64 LE, EM_AMDGPU, HSA, matching
    e_flags (the one check kpack and descriptors apply too, :mod:`gfxpack.amdgpu`)."""
    problem = code_object_problem(code, target)
    if problem:
        raise BundleError(f"{where}: {problem}")


def _parse_compressed(view: memoryview, offset: int, max_size: int) -> Bundle:
    _magic, version, method = _unpack(CCOB_HEAD, view, 0, "CCOB header")
    if version not in CCOB_SIZES:
        raise BundleError(f"CCOB version {version}, expected 1, 2 or 3")
    if method not in METHODS:
        raise BundleError(f"CCOB compression method {method}, expected 0 (zlib) or 1 (zstd)")
    sizes = CCOB_SIZES[version]
    fields = _unpack(sizes, view, CCOB_HEAD.size, f"CCOB version {version} header")
    header_size = CCOB_HEAD.size + sizes.size
    if version == 1:
        total, uncompressed = None, fields[0]
    else:
        total, uncompressed = fields[0], fields[1]
        if total < header_size or total > len(view):
            raise BundleError(
                f"CCOB total size {total} does not fit (header {header_size}, "
                f"{len(view)} bytes left in the section)"
            )
    if uncompressed > max_size:
        raise _over_limit("CCOB header states an uncompressed size of", uncompressed, max_size)
    payload = view[header_size : total if total is not None else len(view)]
    data, consumed = _decompress(METHODS[method], payload, uncompressed, total is not None)
    if total is not None and consumed != len(payload):
        raise BundleError(
            f"CCOB total size {total} says {len(payload)} compressed bytes, the stream has "
            f"{consumed}"
        )
    if bytes(data[: len(MAGIC)]) != MAGIC:
        raise BundleError("CCOB payload does not decompress to an offload bundle")
    _length, hosts, objects = _parse_uncompressed(memoryview(data), max_size)
    length = header_size + consumed
    return Bundle(
        offset, length, METHODS[method], version, hosts, objects, view[:length], uncompressed,
        header_size,
    )  # fmt: skip


def _decompress(
    method: str, payload: memoryview, expected: int, exact: bool = False
) -> tuple[bytes | bytearray, int]:
    """The decompressed bytes of the first stream in ``payload`` (exactly ``expected``
    long) and how many payload bytes it used; ``exact``: the stream should fill the
    payload. Output grows only as the stream produces it, by at most a little more
    than ``expected``, except on the fast path below."""
    if method == "zstd" and exact:
        whole = _decompress_frame(payload, expected)
        if whole is not None:
            return whole, len(payload)
    if method == "zstd":
        decoder: zlib._Decompress | zstandard.ZstdDecompressionObj = (
            zstandard.ZstdDecompressor().decompressobj()
        )
    else:
        decoder = zlib.decompressobj()
    out = bytearray()
    position = 0
    try:
        while position < len(payload) and not _finished(decoder):
            step = min(CHUNK, max(64, (expected - len(out)) // MAX_RATIO))
            chunk = bytes(payload[position : position + step])
            position += len(chunk)
            out += decoder.decompress(chunk)
            if len(out) > expected:
                raise BundleError(f"CCOB payload decompresses past its stated {expected} bytes")
    except (zlib.error, zstandard.ZstdError) as e:
        raise BundleError(f"CCOB {method} payload is corrupt ({e})") from None
    if not _finished(decoder):
        raise BundleError(f"CCOB {method} payload is truncated")
    if len(out) != expected:
        raise BundleError(f"CCOB payload decompresses to {len(out)} bytes, header says {expected}")
    return out, position - len(decoder.unused_data)


def _decompress_frame(payload: memoryview, expected: int) -> bytes | None:
    """``payload`` decompressed in one call when it is one zstd frame whose header
    states ``expected`` bytes (as clang-offload-bundler writes them), else None. The
    streamed loop feeds the decoder at most 1/MAX_RATIO of the room left per call:
    for a bundle of tens of MB that is a few hundred bytes a call, and each call
    allocates (maps, faults in, unmaps) a fresh output buffer, which was most of
    a split's time. Here the output buffer is ``expected`` bytes, which the callers
    checked against the object size limit before calling; its pages are only
    resident as the stream fills them, so a lying stream costs no more memory than
    on the streamed path. A stream that does not decompress to exactly that, or
    leaves bytes over, takes the streamed path, which says what is wrong with it."""
    try:
        if zstandard.get_frame_parameters(payload).content_size != expected:
            return None
        return zstandard.ZstdDecompressor().decompress(
            payload, max_output_size=expected, allow_extra_data=False
        )
    except zstandard.ZstdError:
        return None


def _finished(decoder: object) -> bool:
    return bool(getattr(decoder, "eof", False))


def _unpack(layout: struct.Struct, view: memoryview, offset: int, what: str) -> tuple[Any, ...]:
    if offset + layout.size > len(view):
        raise BundleError(f"truncated: {what} runs past the section")
    return layout.unpack_from(view, offset)


def _slice(view: memoryview, offset: int, size: int, what: str) -> memoryview:
    if offset + size > len(view):
        raise BundleError(f"truncated: {what} runs past the section")
    return view[offset : offset + size]
