"""Rewrite one fat ELF file into the host part ROCm's kpack runtime loads.

What changes (and nothing else):

1. the first full page of ``.hip_fatbin`` becomes a new read-only PT_LOAD
   holding the program header table (moved there, two entries longer) and the
   new section ``.rocm_kpack_ref``: MessagePack ``{"kernel_name": ...,
   "kpack_search_paths": [...]}``;
2. the following full pages of ``.hip_fatbin`` are cut out of the file: its
   PT_LOAD is split around them, later offsets move down, ``.hip_fatbin``
   becomes NOBITS (its head and tail bytes stay where they were);
3. every wrapper's magic becomes ``HIPK``, its ``binary`` (and the addend of the
   relocation that sets it) points at ``.rocm_kpack_ref``, ``reserved1`` holds
   the runtime's ``co_index``: the wrapper's index, or, for wrappers sharing one
   bundle, the index of the first of them (the bundle's code objects are stored
   once, under that index);
4. the section name table and section header table, one entry longer, are
   appended at the end of the file (the old ones stay, unreferenced).

Every PT_LOAD keeps ``p_offset % 4096 == p_vaddr % 4096``: the cut starts and
ends on page boundaries of both the file and the address space, and the
removed address range stays reserved as a hole between two segments.

The output is the input with one range replaced, a few bytes patched and a
tail appended, so the original comes back from the host file, the code
objects and a small :class:`Recipe` (see :mod:`gfxpack.fatbin.join`), whose
:class:`OriginalDigest` join checks: it takes each code object by the sha256
the archive writer computed anyway, so a split hashes no byte twice.

Why not LIEF or pyelftools: LIEF's writer rebuilds the file its own way (it
relocates the segment table and pads sections), so the result cannot be
mapped back to the input byte for byte, and it cannot drop pages from the
middle of a segment; pyelftools only reads. The surgery needs exact control
of every offset, and reading a few header tables by hand keeps every error
in gfxpack's own words.

One module, past 500 lines, because the four changes above are one computation of
offsets: each step moves what the next one patches, and the recipe records them all.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

import msgpack

from gfxpack.errors import GfxpackError
from gfxpack.fatbin import InvalidFatBinary, elf
from gfxpack.fatbin.bundle import CodeObject
from gfxpack.fatbin.reader import HIPK, WRAPPER, Device, FatBinary

PAGE = elf.PAGE
REF_SECTION = ".rocm_kpack_ref"
COPY_CHUNK = 1 << 22
ZERO_RUN = re.compile(rb"\x00{256,}")
INLINE_LITERAL = 4096  # longer literals go to the split's data file
OBJECT_ENTRY = struct.Struct("<QQ")  # a whole code object's offset and size in the digest
DIGEST_DOMAIN = b"gfxpack split: original digest 2\0"
# (archive label, target id, toc key) -> (size, sha256) of a code object already hashed
CodeDigests = Mapping[tuple[str, str, str], tuple[int, bytes]]


class NotWorthSplitting(GfxpackError, ValueError):
    """Device code smaller than the page the reference itself needs."""


@dataclass
class Recipe:
    """How to get the original file back from the host file and the code objects.

    ``pieces`` rebuild the removed range ``[start, end)`` of the original:
    ``[0, n]`` n zero bytes, ``[1, bytes]`` literal bytes, ``[2, archive,
    target, key, skip, n]`` n bytes of a code object from ``skip`` on, ``[3,
    offset, n]`` n bytes of the split's data file. ``patches`` are the
    original bytes at each patched offset.
    """

    original_size: int
    sha256: str  # the original's :class:`OriginalDigest`
    start: int
    end: int
    page: int
    pieces: list[list[Any]] = field(default_factory=list)
    patches: list[tuple[int, bytes]] = field(default_factory=list)

    def to_msgpack(self) -> dict[str, Any]:
        return {
            "original_size": self.original_size,
            "sha256": self.sha256,
            "removed": [self.start, self.end],
            "page": self.page,
            "pieces": self.pieces,
            "patches": [[offset, data] for offset, data in self.patches],
        }

    @classmethod
    def from_msgpack(cls, raw: dict[str, Any]) -> Recipe:
        start, end = raw["removed"]
        return cls(
            raw["original_size"],
            raw["sha256"],
            start,
            end,
            raw["page"],
            raw["pieces"],
            [(offset, bytes(data)) for offset, data in raw["patches"]],
        )


class OriginalDigest:
    """The digest of an original file that join checks, fed in file order.

    A sha256 of the original in which every whole code object stands for its own
    sha256, the one the archive writer records (and join recomputes from what it
    reads back). Two running hashes: one over the bytes that are no whole code
    object, concatenated in file order (so how they are chunked does not matter),
    one over each whole code object's offset, size and sha256. Together with the
    total size they fix every byte of the file: the objects' places and contents,
    and the rest in between; changing any byte, or moving a boundary, changes it.
    """

    def __init__(self) -> None:
        self._bytes = hashlib.sha256()
        self._objects = hashlib.sha256()
        self.position = 0

    def update(self, data: bytes | memoryview) -> None:
        """Bytes that are not a whole code object."""
        for chunk_start in range(0, len(data), COPY_CHUNK):
            self._bytes.update(data[chunk_start : chunk_start + COPY_CHUNK])
        self.position += len(data)

    def code_object(self, size: int, sha256: bytes) -> None:
        """A whole code object of ``size`` bytes at the current position."""
        self._objects.update(OBJECT_ENTRY.pack(self.position, size) + sha256)
        self.position += size

    def hexdigest(self) -> str:
        whole = hashlib.sha256(DIGEST_DOMAIN + OBJECT_ENTRY.pack(self.position, 0))
        whole.update(self._bytes.digest() + self._objects.digest())
        return whole.hexdigest()


def zero_runs(pieces: list[list[Any]]) -> int:
    """The bytes a recipe's zero runs add."""
    return sum(piece[1] for piece in pieces if piece[0] == 0)


# Zero bytes a recipe may add for each other byte of the original (see zero_problem).
ZERO_RATIO = 15
MOSTLY_ZEROS = "its device code is almost all zero bytes"


def zero_problem(original_size: int, zeros: int) -> str | None:
    """Why a recipe whose zero runs add ``zeros`` bytes to an original of
    ``original_size`` bytes is refused, or None.

    Zero runs are the one piece of a recipe nothing in the split holds, so a forged
    record could claim any number of them. They may add at most ZERO_RATIO bytes for
    each other byte of the original: every other byte comes from the host file, an
    archive or the data file, which join reads once each, so joining writes at most
    ZERO_RATIO + 1 times what the split holds. In a fat binary, zero runs are the
    padding that aligns bundles and code objects: about a fifth of the file in
    hipcc's output, more where small compressed bundles are padded to a page, far
    from 15 times the rest. split keeps whole a binary with more, so every split it
    writes meets the rule join checks."""
    if zeros > ZERO_RATIO * (original_size - zeros):
        return (
            f"{zeros:,} zero bytes in an original of {original_size:,}, more than "
            f"{ZERO_RATIO} for each other byte"
        )
    return None


def too_small(fat: FatBinary) -> str | None:
    """Why splitting would not pay (the reference itself takes a page), or None."""
    start, end = _removed(fat)
    if end - start < 2 * PAGE:
        return f"device code spans {max(0, end - start) // PAGE} full pages, fewer than 2"
    return None


def reference(kernel_name: str, search_paths: list[str]) -> bytes:
    packed: bytes = msgpack.packb(
        {"kernel_name": kernel_name, "kpack_search_paths": search_paths}, use_bin_type=True
    )
    return packed


def split_binary(
    fat: FatBinary,
    out: BinaryIO,
    kernel_name: str,
    search_paths: list[str],
    archive_of: Any,
    known: CodeDigests | None = None,
    literals: BinaryIO | None = None,
) -> Recipe:
    """Write the host part of ``fat`` to ``out``; return how to undo it.

    ``archive_of(target)`` names the archive a target's code objects go to (it
    only labels the recipe); ``known`` holds the sha256 of code objects the
    caller already hashed (the others are hashed here); long literal bytes of the recipe (compressed
    bundles) go to ``literals`` when given. Raises :class:`NotWorthSplitting` when the device
    code spans fewer than two full pages, InvalidFatBinary when the layout
    cannot be rewritten.
    """
    try:
        return _split_binary(fat, out, kernel_name, search_paths, archive_of, known or {}, literals)
    except struct.error:
        # A header field the rewrite moved no longer fits its width (a corrupt input).
        raise _fail(fat, "a header field is out of range once moved") from None


def _split_binary(
    fat: FatBinary,
    out: BinaryIO,
    kernel_name: str,
    search_paths: list[str],
    archive_of: Any,
    known: CodeDigests,
    literals: BinaryIO | None,
) -> Recipe:
    assert fat.elf is not None and fat.fatbin is not None
    image, fatbin, data = fat.elf, fat.fatbin, fat.view
    reason = too_small(fat)
    if reason:
        raise NotWorthSplitting(reason)
    start, end = _removed(fat)
    if (fatbin.addr - fatbin.offset) % PAGE:
        raise _fail(fat, f"{fatbin.name}'s address and file offset differ modulo {PAGE}")
    removed = end - start - PAGE  # bytes the file shrinks by
    page_address = fatbin.addr + (start - fatbin.offset)

    # Program headers: split the fatbin's PT_LOAD around the cut, add the reference page.
    segments: list[elf.Segment] = []
    holder = None
    for seg in image.segments:
        if seg.type == elf.PT_LOAD and seg.offset <= fatbin.offset < seg.offset + seg.filesz:
            holder = seg
            if fatbin.offset + fatbin.size > seg.offset + seg.filesz:
                raise _fail(fat, f"{fatbin.name} runs past the end of its PT_LOAD")
            if seg.memsz < seg.filesz:
                raise _fail(fat, "the PT_LOAD of .hip_fatbin maps less memory than file bytes")
            if seg.vaddr - seg.offset != fatbin.addr - fatbin.offset:
                raise _fail(fat, f"{fatbin.name} is not mapped where its PT_LOAD says")
            head = start - seg.offset
            if head:
                segments.append(replace(seg, filesz=head, memsz=head))
            segments.append(
                elf.Segment(
                    elf.PT_LOAD, elf.PF_R, start, page_address, page_address, PAGE, PAGE, PAGE
                )
            )
            tail = seg.offset + seg.filesz - end
            if tail or seg.memsz > seg.filesz:
                delta = end - seg.offset
                segments.append(
                    replace(
                        seg,
                        offset=end - removed,
                        vaddr=seg.vaddr + delta,
                        paddr=seg.paddr + delta,
                        filesz=tail,
                        memsz=seg.memsz - delta,
                    )
                )
            continue
        segments.append(_moved_segment(fat, seg, start, end, removed))
    if holder is None:
        raise _fail(fat, f"{fatbin.name} is in no PT_LOAD segment")
    table_size = len(segments) * elf.PHDR.size
    ref = reference(kernel_name, search_paths)
    ref_at = _align_up(table_size, 16)
    if ref_at + len(ref) > PAGE:
        raise _fail(fat, f"{len(segments)} program headers and the reference do not fit a page")
    segments = [
        replace(
            s,
            offset=start,
            vaddr=page_address,
            paddr=page_address,
            filesz=table_size,
            memsz=table_size,
        )
        if s.type == elf.PT_PHDR
        else s
        for s in segments
    ]
    page = bytearray(PAGE)
    for i, seg in enumerate(segments):
        page[i * elf.PHDR.size : (i + 1) * elf.PHDR.size] = seg.pack()
    page[ref_at : ref_at + len(ref)] = ref
    ref_address = page_address + ref_at

    # Patches of the original bytes: wrappers and their relocation addends, listed (not
    # keyed by offset) so that two at one offset are refused below, not merged.
    listed: list[tuple[int, bytes]] = []
    for device in fat.devices:
        wrapper = device.wrapper
        listed.append((wrapper.offset, WRAPPER.pack(HIPK, 1, ref_address, device.co_index)))
        if wrapper.relocation is not None:
            addend = ref_address.to_bytes(8, "little", signed=True)
            listed.append((wrapper.relocation + 16, addend))

    # Sections: later ones move, .hip_fatbin holds no bytes, the reference is appended.
    names = next(s for i, s in enumerate(image.sections) if i == image.header.shstrndx)
    new_names = bytes(data[names.offset : names.offset + names.size]) + REF_SECTION.encode() + b"\0"
    body_end = image.size - removed
    names_at = body_end
    table_at = _align_up(names_at + len(new_names), 8)
    sections = []
    for index, section in enumerate(image.sections):
        if section is fatbin:
            sections.append(replace(section, type=elf.SHT_NOBITS))
        elif index == image.header.shstrndx:
            sections.append(replace(section, offset=names_at, size=len(new_names)))
        else:
            sections.append(_moved_section(fat, section, start, end, removed))
    sections.append(
        elf.Section(names.size, 1, elf.SHF_ALLOC, ref_address, start + ref_at, len(ref), 0, 0, 1, 0)
    )
    header = replace(
        image.header,
        phoff=start,
        phnum=len(segments),
        shoff=table_at,
        shnum=len(sections),
    )
    listed.append((0, header.pack()))
    for offset, patch in listed:
        if offset < end and offset + len(patch) > start:
            raise _fail(fat, f"bytes to patch at {offset} lie inside {fatbin.name}")
    # Two patches over the same bytes (a wrapper or relocation over the ELF header or
    # over each other) would write a file whose parts do not fit: refuse it.
    listed.sort(key=lambda item: item[0])
    for (before, patch), (after, _) in itertools.pairwise(listed):
        if before + len(patch) > after:
            raise _fail(fat, f"bytes to patch at {before} and at {after} overlap")
    patches = dict(listed)

    _write_patched(out, data, 0, start, patches)
    out.write(page)
    _write_patched(out, data, end, image.size, patches)
    out.write(new_names)
    out.write(bytes(table_at - names_at - len(new_names)))
    for section in sections:
        out.write(section.pack())

    digest = OriginalDigest()
    digest.update(data[:start])
    pieces = list(_pieces(fat, start, end, kernel_name, archive_of, (known, digest), literals))
    problem = zero_problem(image.size, zero_runs(pieces))
    if problem:
        raise NotWorthSplitting(f"{MOSTLY_ZEROS}: {problem}")
    digest.update(data[end : image.size])
    recipe = Recipe(image.size, digest.hexdigest(), start, end, PAGE, pieces)
    recipe.patches = sorted(
        (offset, bytes(data[offset : offset + len(p)])) for offset, p in patches.items()
    )
    return recipe


def _moved_segment(
    fat: FatBinary, seg: elf.Segment, start: int, end: int, removed: int
) -> elf.Segment:
    if seg.offset >= end:
        return replace(seg, offset=seg.offset - removed)
    if seg.filesz and seg.offset < end and seg.offset + seg.filesz > start:
        raise _fail(fat, f"a segment (type {seg.type:#x}) overlaps .hip_fatbin's pages")
    return seg


def _moved_section(
    fat: FatBinary, section: elf.Section, start: int, end: int, removed: int
) -> elf.Section:
    if section.offset >= end:
        return replace(section, offset=section.offset - removed)
    if (
        section.type != elf.SHT_NOBITS
        and section.size
        and section.offset < end
        and section.file_end > start
    ):
        raise _fail(fat, f"section {section.name} overlaps .hip_fatbin's pages")
    return section


def _pieces(
    fat: FatBinary,
    start: int,
    end: int,
    kernel_name: str,
    archive_of: Any,
    digests: tuple[CodeDigests, OriginalDigest],
    literals: BinaryIO | None,
) -> Iterator[list[Any]]:
    """The removed range as zero runs, literal bytes and code-object references,
    fed to the original's digest as they come."""
    known, digest = digests
    data = fat.view
    for clip_from, clip_to, whole in _spans(fat, start, end):
        if whole is None:
            yield from _gap(data, clip_from, clip_to, literals, digest)
            continue
        first, last, device, obj = whole
        ref = [2, archive_of(obj.target), str(obj.target), f"{kernel_name}#{device.co_index}"]
        if (clip_from, clip_to) == (first, last):
            size, sha256 = known.get((ref[1], ref[2], ref[3])) or (0, b"")
            if size != last - first:
                size, sha256 = last - first, hashlib.sha256(data[first:last]).digest()
            digest.code_object(size, sha256)
        else:  # a code object the cut splits: its bytes count one by one
            digest.update(data[clip_from:clip_to])
        yield [*ref, clip_from - first, clip_to - clip_from]


def _spans(
    fat: FatBinary, start: int, end: int
) -> Iterator[tuple[int, int, tuple[int, int, Device, CodeObject] | None]]:
    """The removed range ``[start, end)`` in file order, as ``(from, to, whole)``:
    bytes between code objects (``whole`` None), and the code objects of uncompressed
    bundles, each as much of it as the range holds (``whole``: its own bounds, its
    wrapper and its entry). A compressed bundle is bytes between code objects: it is
    kept as literal bytes."""
    assert fat.fatbin is not None
    base = fat.fatbin.offset
    objects: list[tuple[int, int, Device, CodeObject]] = []
    for device in fat.devices:
        found = device.bundle
        if not device.first or found.compression is not None:
            continue
        for obj in found.code_objects:
            first = base + found.offset + obj.offset
            objects.append((first, first + obj.size, device, obj))
    position = start
    for whole in sorted(objects, key=lambda o: o[0]):
        first, last = whole[0], whole[1]
        if last <= start or first >= end:
            continue
        if max(first, start) > position:
            yield position, max(first, start), None
        clip_from, clip_to = max(first, start), min(last, end)
        yield clip_from, clip_to, whole
        position = clip_to
    if end > position:
        yield position, end, None


def too_many_zeros(fat: FatBinary) -> str | None:
    """Why :func:`split_binary` would refuse ``fat`` for its zero runs (see
    :func:`zero_problem`), known before a code object is stored. Cheap unless the
    bytes between code objects are most of the file: only then are they scanned."""
    assert fat.elf is not None
    start, end = _removed(fat)
    gaps = [(a, b) for a, b, whole in _spans(fat, start, end) if whole is None]
    if zero_problem(fat.elf.size, sum(b - a for a, b in gaps)) is None:
        return None  # not even if every byte between code objects were zero
    view = fat.view
    zeros = sum(len(run[0]) for a, b in gaps for run in ZERO_RUN.finditer(view[a:b]))
    problem = zero_problem(fat.elf.size, zeros)
    return f"{MOSTLY_ZEROS}: {problem}" if problem else None


def _removed(fat: FatBinary) -> tuple[int, int]:
    """The full pages of ``.hip_fatbin``: the range a split takes out (but the page
    the reference replaces it with)."""
    assert fat.fatbin is not None
    start = _align_up(fat.fatbin.offset, PAGE)
    end = (fat.fatbin.offset + fat.fatbin.size) // PAGE * PAGE
    return start, end


def _gap(
    data: memoryview,
    first: int,
    last: int,
    literals: BinaryIO | None,
    digest: OriginalDigest,
) -> Iterator[list[Any]]:
    """Bytes that are no code object: zero runs, short literals inline, long ones
    (compressed bundles) streamed to ``literals`` and referenced by position."""
    if first >= last:
        return
    chunk = data[first:last]
    digest.update(chunk)
    position = 0
    for run in ZERO_RUN.finditer(chunk):
        if run.start() > position:
            yield _literal(chunk[position : run.start()], literals)
        yield [0, run.end() - run.start()]
        position = run.end()
    if position < len(chunk):
        yield _literal(chunk[position:], literals)


def _literal(chunk: memoryview, literals: BinaryIO | None) -> list[Any]:
    if literals is None or len(chunk) <= INLINE_LITERAL:
        return [1, bytes(chunk)]
    offset = literals.tell()
    _copy(literals, chunk, 0, len(chunk))
    return [3, offset, len(chunk)]


def _write_patched(
    out: BinaryIO, data: memoryview, first: int, last: int, patches: dict[int, bytes]
) -> None:
    """Copy ``data[first:last]`` with patches applied."""
    position = first
    for offset in sorted(patches):
        patch = patches[offset]
        if offset + len(patch) <= first or offset >= last:
            continue
        _copy(out, data, position, offset)
        out.write(patch)
        position = offset + len(patch)
    _copy(out, data, position, last)


def _copy(out: BinaryIO, data: memoryview, first: int, last: int) -> None:
    for chunk_start in range(first, last, COPY_CHUNK):
        out.write(data[chunk_start : min(last, chunk_start + COPY_CHUNK)])


def _align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _fail(fat: FatBinary, problem: str) -> InvalidFatBinary:
    return InvalidFatBinary(fat.path, f"cannot rewrite: {problem}")


__all__ = [
    "REF_SECTION",
    "ZERO_RATIO",
    "CodeDigests",
    "NotWorthSplitting",
    "OriginalDigest",
    "Recipe",
    "reference",
    "split_binary",
    "too_many_zeros",
    "zero_problem",
    "zero_runs",
]
