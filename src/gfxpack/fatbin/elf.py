"""Just enough of ELF64 little-endian to find device code and rewrite around it.

Reads from any buffer (an mmap of the file, so nothing is copied): the file
header, program and section headers, section names and RELA entries. Every
field is bounds-checked against the buffer; a malformed header raises
:class:`ElfError`, which callers turn into an error naming their file.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
PHDR = struct.Struct("<IIQQQQQQ")
SHDR = struct.Struct("<IIQQQQIIQQ")
RELA = struct.Struct("<QQq")

ELFMAG = b"\x7fELF"
ELFCLASS64, ELFDATA2LSB = 2, 1
EM_X86_64, EM_AMDGPU = 62, 224
ET_EXEC, ET_DYN = 2, 3
PT_LOAD, PT_PHDR = 1, 6
PF_R = 4
SHT_NOBITS, SHT_RELA = 8, 4
SHF_ALLOC = 2
R_X86_64_RELATIVE = 8
PAGE = 4096


class ElfError(ValueError):
    """A header or table that does not fit the file."""


class OtherElf(ElfError):
    """An ELF file of another class or byte order (32-bit, big-endian)."""


@dataclass(frozen=True)
class Header:
    ident: bytes
    type: int
    machine: int
    version: int
    entry: int
    phoff: int
    shoff: int
    flags: int
    ehsize: int
    phentsize: int
    phnum: int
    shentsize: int
    shnum: int
    shstrndx: int

    def pack(self) -> bytes:
        return EHDR.pack(
            self.ident, self.type, self.machine, self.version, self.entry, self.phoff,
            self.shoff, self.flags, self.ehsize, self.phentsize, self.phnum,
            self.shentsize, self.shnum, self.shstrndx,
        )  # fmt: skip


@dataclass(frozen=True)
class Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int

    def pack(self) -> bytes:
        return PHDR.pack(
            self.type, self.flags, self.offset, self.vaddr, self.paddr, self.filesz,
            self.memsz, self.align,
        )  # fmt: skip


@dataclass(frozen=True)
class Section:
    name_offset: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int
    name: str = ""

    def pack(self) -> bytes:
        return SHDR.pack(
            self.name_offset, self.type, self.flags, self.addr, self.offset, self.size,
            self.link, self.info, self.addralign, self.entsize,
        )  # fmt: skip

    @property
    def file_end(self) -> int:
        return self.offset + (0 if self.type == SHT_NOBITS else self.size)


def header(data: bytes | memoryview) -> Header:
    """The ELF header of a 64-bit little-endian file; ElfError for anything else."""
    if len(data) < EHDR.size or bytes(data[:4]) != ELFMAG:
        raise ElfError("not an ELF file")
    fields = EHDR.unpack_from(data, 0)
    head = Header(*fields)
    if head.ident[4] != ELFCLASS64 or head.ident[5] != ELFDATA2LSB:
        raise OtherElf("not a 64-bit little-endian ELF file")
    return head


class ElfFile:
    """Headers of one ELF64 LE file held in ``data``; raises ElfError when any
    table lies outside the file."""

    def __init__(self, data: bytes | memoryview | object):
        self.data = memoryview(data)  # type: ignore[arg-type]
        self.size = len(self.data)
        self.header = header(self.data)
        raw_segments = self._table(self.header.phoff, self.header.phnum, PHDR, "program")
        raw_sections = self._table(self.header.shoff, self.header.shnum, SHDR, "section")
        self.segments = [Segment(*fields) for fields in raw_segments]
        sections = [Section(*fields) for fields in raw_sections]  # type: ignore[arg-type]
        names = b""
        if sections:
            if self.header.shstrndx >= len(sections):
                raise ElfError(f"section name table index {self.header.shstrndx} out of range")
            names_section = sections[self.header.shstrndx]
            names = bytes(self.range(names_section.offset, names_section.size, "section names"))
        self.sections = [replace(s, name=_cstring(names, s.name_offset)) for s in sections]
        for section in self.sections:
            if section.type != SHT_NOBITS and section.size:
                self.range(section.offset, section.size, f"section {section.name}")

    def _table(
        self, offset: int, count: int, layout: struct.Struct, what: str
    ) -> list[tuple[int, ...]]:
        if count == 0:
            return []
        view = self.range(offset, count * layout.size, f"{what} header table")
        return [layout.unpack_from(view, i * layout.size) for i in range(count)]

    def range(self, offset: int, size: int, what: str) -> memoryview:
        """``size`` bytes at ``offset``, or ElfError naming ``what``."""
        if offset < 0 or size < 0 or offset + size > self.size:
            raise ElfError(
                f"{what} (offset {offset}, size {size}) lies outside the file ({self.size} bytes)"
            )
        return self.data[offset : offset + size]

    def section(self, name: str) -> Section | None:
        found = [s for s in self.sections if s.name == name]
        if len(found) > 1:
            raise ElfError(f"{len(found)} sections named {name}")
        return found[0] if found else None

    def offset_of(self, address: int, size: int) -> int:
        """The file offset of ``size`` bytes at virtual ``address``, from the PT_LOAD
        that maps them; ElfError when none does."""
        for seg in self.segments:
            inside = seg.vaddr <= address and address + size <= seg.vaddr + seg.filesz
            if seg.type == PT_LOAD and inside:
                return seg.offset + address - seg.vaddr
        raise ElfError(f"address {address:#x} is not in the file's loaded contents")

    def relocations(self) -> Iterator[tuple[int, int, int, int]]:
        """(file offset of the entry, r_offset, r_info, r_addend) of every RELA entry."""
        for section in self.sections:
            if section.type != SHT_RELA or section.size == 0:
                continue
            if section.entsize != RELA.size:
                raise ElfError(f"{section.name}: entry size {section.entsize}, expected 24")
            view = self.range(section.offset, section.size, f"section {section.name}")
            for i in range(section.size // RELA.size):
                r_offset, r_info, r_addend = RELA.unpack_from(view, i * RELA.size)
                yield section.offset + i * RELA.size, r_offset, r_info, r_addend


def _cstring(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")
