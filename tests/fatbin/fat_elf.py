"""Fat (and split) x86-64 ELF files built byte by byte, for inputs hipcc cannot make.

The smallest file gfxpack's reader and rewriter accept: an ELF header, two PT_LOADs
(read-only: the header and the payload section; writable: the wrappers and their
relocations), a payload section (``.hip_fatbin`` holding offload bundles, or any
other name, say ``.rocm_kpack_ref``), ``.hipFatBinSegment`` with one 24-byte wrapper
per entry, ``.rela.dyn`` with the R_X86_64_RELATIVE relocation that sets each
wrapper's pointer (as in a shared library), and the section tables. The layout is
returned with the bytes, so a test can forge one field and know where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from gfxpack.fatbin import elf
from gfxpack.fatbin.reader import HIPF, WRAPPER

PAGE = 4096
SHT_PROGBITS, SHT_STRTAB = 1, 3
SHF_WRITE = 1


@dataclass(frozen=True)
class Layout:
    payload: int  # file offset (and address) of the payload section
    wrappers: int  # file offset (and address) of .hipFatBinSegment
    relocations: int | None  # file offset of .rela.dyn
    shoff: int  # file offset of the section header table
    sections: dict[str, int]  # section name -> its index


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def fat_elf(
    payload: bytes,
    wrappers: list[tuple[int, int, int]],
    payload_name: str = ".hip_fatbin",
    relocate: bool = True,
) -> tuple[bytes, Layout]:
    """A shared object whose wrappers ``(magic, offset into the payload, reserved)``
    point into ``payload``; with ``relocate`` each pointer is set by a relocation (the
    field itself holds 0), otherwise the field holds the address."""
    payload_at = PAGE
    wrappers_at = _align(payload_at + len(payload), PAGE)
    rela_at = wrappers_at + WRAPPER.size * len(wrappers)
    rela_size = elf.RELA.size * len(wrappers) if relocate else 0
    names_list = ["", payload_name, ".hipFatBinSegment", ".rela.dyn", ".shstrtab"]
    names = b"\0".join(n.encode() for n in names_list) + b"\0"
    name_at = {n: names.index(n.encode() + b"\0") if n else 0 for n in names_list}
    names_at = rela_at + rela_size
    shoff = _align(names_at + len(names), 8)

    body = bytearray(shoff)
    body[payload_at : payload_at + len(payload)] = payload
    for index, (magic, offset, reserved) in enumerate(wrappers):
        address = payload_at + offset
        at = wrappers_at + index * WRAPPER.size
        WRAPPER.pack_into(body, at, magic, 1, 0 if relocate else address, reserved)
        if relocate:
            entry = rela_at + index * elf.RELA.size
            elf.RELA.pack_into(body, entry, at + 8, elf.R_X86_64_RELATIVE, address)
    body[names_at : names_at + len(names)] = names

    def section(name: str, kind: int, flags: int, at: int, size: int, entsize: int = 0) -> bytes:
        return elf.Section(name_at[name], kind, flags, at, at, size, 0, 0, 8, entsize).pack()

    alloc = elf.SHF_ALLOC
    tables = [
        bytes(elf.SHDR.size),
        section(payload_name, SHT_PROGBITS, alloc, payload_at, len(payload)),
        section(".hipFatBinSegment", SHT_PROGBITS, alloc | SHF_WRITE, wrappers_at,
                WRAPPER.size * len(wrappers)),
    ]  # fmt: skip
    indexes = {payload_name: 1, ".hipFatBinSegment": 2}
    if relocate:
        indexes[".rela.dyn"] = len(tables)
        tables.append(section(".rela.dyn", elf.SHT_RELA, alloc, rela_at, rela_size, 24))
    indexes[".shstrtab"] = len(tables)
    strtab = elf.Section(name_at[".shstrtab"], SHT_STRTAB, 0, 0, names_at, len(names), 0, 0, 1, 0)
    tables.append(strtab.pack())
    segments = [
        elf.Segment(elf.PT_LOAD, elf.PF_R, 0, 0, 0, wrappers_at, wrappers_at, PAGE),
        elf.Segment(elf.PT_LOAD, elf.PF_R | 2, wrappers_at, wrappers_at, wrappers_at,
                    names_at - wrappers_at, names_at - wrappers_at, PAGE),
    ]  # fmt: skip
    header = elf.Header(
        b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8), elf.ET_DYN, elf.EM_X86_64, 1, 0,
        elf.EHDR.size, shoff, 0, elf.EHDR.size, elf.PHDR.size, len(segments),
        elf.SHDR.size, len(tables), indexes[".shstrtab"],
    )  # fmt: skip
    body[: elf.EHDR.size] = header.pack()
    for number, segment in enumerate(segments):
        at = elf.EHDR.size + number * elf.PHDR.size
        body[at : at + elf.PHDR.size] = segment.pack()
    data = bytes(body) + b"".join(tables)
    layout = Layout(payload_at, wrappers_at, rela_at if relocate else None, shoff, indexes)
    return data, layout


def shared_bundle(payload: bytes, count: int) -> bytes:
    """A fat library whose ``count`` wrappers all point at the bundle at the payload's
    start."""
    return fat_elf(payload, [(HIPF, 0, 0)] * count)[0]


def section_offset_field(layout: Layout, name: str) -> int:
    """Where the file offset (``sh_offset``) of section ``name`` is stored."""
    return layout.shoff + layout.sections[name] * elf.SHDR.size + 24


__all__ = ["PAGE", "Layout", "fat_elf", "section_offset_field", "shared_bundle"]
