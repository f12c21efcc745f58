"""Find the device code of one ELF file: ``.hip_fatbin``, its wrappers, its bundles.

``.hipFatBinSegment`` holds one 24-byte ``__CudaFatBinaryWrapper`` per bundle:
u32 magic (``HIPF``; ``HIPK`` once split), u32 version 1, u64 ``binary`` (the
bundle's address) and u64 ``reserved1``. In a position-independent file the
``binary`` field is set at load time by an ``R_X86_64_RELATIVE`` relocation
whose addend is the bundle's address, so that addend is what counts.

The file is memory-mapped: bundles are views of it, nothing is copied until a
code object is written out.

What one file costs to read is bounded by its size, whatever it claims:

- each bundle is parsed once however many wrappers point at it, and bundles
  may not overlap, so uncompressed ones add up to at most the section;
- a compressed bundle may decompress to at most ``max_object_size`` bytes (see
  :mod:`~gfxpack.fatbin.bundle`), and all of a file's compressed bundles
  together to at most ``max(max_object_size, EXPANSION * file size)``: real
  bundles compress by a single-digit factor, a zstd bomb by thousands, and a
  file of a hundred bombs each under the limit would otherwise cost a hundred
  times the limit in work;
- wrappers that share a bundle share its code objects (:attr:`Device.co_index`),
  so a split stores them once, not once per wrapper;
- a wrapper record must lie outside the ELF header and the program and section
  header tables: rewriting it there would corrupt the host file.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from gfxpack.fatbin import InvalidFatBinary, bundle, elf
from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE

FATBIN = ".hip_fatbin"
WRAPPERS = ".hipFatBinSegment"
WRAPPER = struct.Struct("<IIQQ")
HIPF, HIPK = 0x48495046, 0x4B504948
BINARY_FIELD = 8  # offset of ``binary`` in a wrapper
# How many times its size a file's compressed bundles may expand to, in all (see above).
EXPANSION = 256


@dataclass(frozen=True)
class Wrapper:
    index: int
    offset: int  # file offset of the record
    magic: int
    binary: int  # the address it points at
    reserved: int
    relocation: int | None  # file offset of the RELA entry that sets ``binary``


@dataclass(frozen=True)
class Device:
    """A wrapper with the bundle it points at. ``co_index`` is the index of the first
    wrapper pointing at that bundle: the bundle's code objects are stored under it
    once, and every wrapper sharing the bundle asks for them by it."""

    wrapper: Wrapper
    bundle: bundle.Bundle
    co_index: int

    @property
    def first(self) -> bool:
        """Whether this wrapper is the first to point at its bundle."""
        return self.co_index == self.wrapper.index


class FatBinary:
    """One ELF file mapped read-only. ``devices`` is empty when it carries no device
    code; ``unsplittable`` says why a ``.hip_fatbin`` cannot be split (no wrappers).
    With ``split=True`` only the wrappers of an already split binary are read.
    ``max_object_size`` bounds each decompressed bundle and code object (see above).
    With ``bundles=False`` the wrappers are read but not the bundles they point at
    (nothing is decompressed): ``devices`` stays empty, ``wrappers`` says whether
    the file carries device code.
    ``file``: the file already open (by a caller that opens through directory
    descriptors, see :mod:`gfxpack.safe_tree`), closed with the FatBinary; ``path``
    then only names it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        split: bool = False,
        max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
        file: BinaryIO | None = None,
        bundles: bool = True,
    ):
        self.path = Path(path)
        self._split = split  # a split binary: read its wrappers only
        self._bundles = bundles
        self.max_object_size = max_object_size
        self._file = file if file is not None else open(self.path, "rb")  # noqa: SIM115
        self._map: mmap.mmap | None = None
        self.elf: elf.ElfFile | None = None
        self.fatbin: elf.Section | None = None
        self.wrappers: list[Wrapper] = []
        self.devices: list[Device] = []
        self.unsplittable: str | None = None
        try:
            self._read()
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        size = os.fstat(self._file.fileno()).st_size
        if size < elf.EHDR.size or self._file.read(4) != elf.ELFMAG:
            return
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            self.elf = elf.ElfFile(self._map)
        except elf.OtherElf:
            return  # another kind of ELF file: carries no HIP device code
        except elf.ElfError as e:
            raise InvalidFatBinary(self.path, str(e)) from None
        if self._split:
            self.wrappers = self.read_wrappers()
            return
        try:
            self.fatbin = self.elf.section(FATBIN)
        except elf.ElfError as e:
            raise InvalidFatBinary(self.path, str(e)) from None
        if self.fatbin is None:
            return
        if self._bundles and hasattr(mmap, "MADV_WILLNEED"):
            # Splitting reads every byte (digest, code objects): start reading ahead now.
            self._map.madvise(mmap.MADV_WILLNEED)
        if self.elf.header.machine != elf.EM_X86_64:
            raise InvalidFatBinary(
                self.path,
                f"e_machine {self.elf.header.machine}: only x86-64 host binaries can be split",
            )
        if self.fatbin.type == elf.SHT_NOBITS:
            raise InvalidFatBinary(
                self.path, f"{FATBIN} holds no bytes: already split (see 'gfxpack join')"
            )
        self.wrappers = self.read_wrappers()
        if any(w.magic == HIPK for w in self.wrappers):
            raise InvalidFatBinary(
                self.path, "its wrappers are marked HIPK: already split (see 'gfxpack join')"
            )
        if not self.wrappers:
            self.unsplittable = f"{FATBIN} has no {WRAPPERS} wrappers pointing at it"
            return
        if self._bundles:
            self.devices = self._read_bundles()

    @property
    def view(self) -> memoryview:
        assert self.elf is not None
        return self.elf.data

    def read_wrappers(self) -> list[Wrapper]:
        """Every wrapper record, HIPF or HIPK, with the address it points at."""
        if self.elf is None:
            return []
        try:
            section = self.elf.section(WRAPPERS)
        except elf.ElfError as e:
            raise InvalidFatBinary(self.path, str(e)) from None
        if section is None or section.size == 0:
            return []
        if section.size % WRAPPER.size:
            raise InvalidFatBinary(
                self.path, f"{WRAPPERS} is {section.size} bytes, not a multiple of {WRAPPER.size}"
            )
        if section.type == elf.SHT_NOBITS:
            raise InvalidFatBinary(self.path, f"{WRAPPERS} holds no bytes")
        relocations: dict[int, tuple[int, int, int]] = {}
        end = section.addr + section.size
        try:
            for entry_at, r_offset, r_info, r_addend in self.elf.relocations():
                if section.addr <= r_offset < end:
                    relocations[r_offset] = (entry_at, r_info & 0xFFFFFFFF, r_addend)
        except elf.ElfError as e:
            raise InvalidFatBinary(self.path, str(e)) from None
        headers = self._header_tables()
        wrappers = []
        for index in range(section.size // WRAPPER.size):
            offset = section.offset + index * WRAPPER.size
            magic, version, binary, reserved = WRAPPER.unpack_from(self.view, offset)
            where = f"wrapper {index} of {WRAPPERS}"
            for first, last, what in headers:
                if offset < last and first < offset + WRAPPER.size:
                    raise InvalidFatBinary(
                        self.path,
                        f"{where} (file offset {offset:#x}, {WRAPPER.size} bytes) overlaps "
                        f"{what} ({first:#x}-{last:#x}); a wrapper lies in its own data section",
                    )
            if magic not in (HIPF, HIPK) or version != 1:
                raise InvalidFatBinary(
                    self.path,
                    f"{where}: magic {magic:#x} version {version}, expected "
                    f"{HIPF:#x} ('HIPF') version 1",
                )
            relocation = relocations.get(section.addr + index * WRAPPER.size + BINARY_FIELD)
            entry: int | None = None
            if relocation is not None:
                entry, kind, addend = relocation
                if kind != elf.R_X86_64_RELATIVE:
                    raise InvalidFatBinary(
                        self.path,
                        f"{where}: its pointer is set by relocation type {kind}, "
                        f"expected R_X86_64_RELATIVE ({elf.R_X86_64_RELATIVE})",
                    )
                binary = addend
            wrappers.append(Wrapper(index, offset, magic, binary, reserved, entry))
        return wrappers

    def _header_tables(self) -> list[tuple[int, int, str]]:
        """(first, last) file offsets of the ELF header and the header tables."""
        assert self.elf is not None
        head = self.elf.header
        return [
            (0, elf.EHDR.size, "the ELF header"),
            (head.phoff, head.phoff + head.phnum * elf.PHDR.size, "the program header table"),
            (head.shoff, head.shoff + head.shnum * elf.SHDR.size, "the section header table"),
        ]

    def _read_bundles(self) -> list[Device]:
        assert self.elf is not None and self.fatbin is not None
        fatbin = self.fatbin
        try:
            section = self.elf.range(fatbin.offset, fatbin.size, FATBIN)
        except elf.ElfError as e:
            raise InvalidFatBinary(self.path, str(e)) from None
        devices: list[Device] = []
        parsed: dict[int, tuple[bundle.Bundle, int]] = {}  # start -> (bundle, first wrapper)
        budget = max(self.max_object_size, EXPANSION * self.elf.size)
        expanded = 0  # bytes the compressed bundles decompressed to so far
        for wrapper in self.wrappers:
            start = wrapper.binary - fatbin.addr
            if not 0 <= start < fatbin.size:
                raise InvalidFatBinary(
                    self.path,
                    f"wrapper {wrapper.index} points at {wrapper.binary:#x}, outside {FATBIN} "
                    f"({fatbin.addr:#x}-{fatbin.addr + fatbin.size:#x})",
                    wrapper.index,
                )
            if start not in parsed:
                at = f"the bundle is at file offset {fatbin.offset + start:#x}"
                try:
                    found = bundle.parse(section, start, self.max_object_size)
                except bundle.BundleError as e:
                    raise InvalidFatBinary(self.path, f"{e}; {at}", wrapper.index) from None
                if found.compression is not None:
                    expanded += found.uncompressed_size
                    if expanded > budget:
                        raise InvalidFatBinary(
                            self.path,
                            f"its compressed bundles decompress to more than {budget:,} bytes "
                            f"in all ({EXPANSION} times the file's size, or --max-object-size "
                            f"if larger); refusing to read further; {at}",
                            wrapper.index,
                        )
                parsed[start] = (found, wrapper.index)
            found, co_index = parsed[start]
            devices.append(Device(wrapper, found, co_index))
        ordered = sorted((b for b, _ in parsed.values()), key=lambda b: b.offset)
        for before, after in itertools.pairwise(ordered):
            if before.offset + before.length > after.offset:
                index = next(d.wrapper.index for d in devices if d.bundle is after)
                raise InvalidFatBinary(
                    self.path,
                    f"overlaps the bundle before it (at {before.offset}, {before.length} bytes)",
                    index,
                )
        return devices

    def close(self) -> None:
        self.devices = []
        if self.elf is not None:
            self.elf.data.release()
            self.elf = None
        if self._map is not None:
            # A caller may still hold a view: the map then closes when that is freed.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        self._file.close()

    def __enter__(self) -> FatBinary:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
