"""Minimal AMDGPU code objects built byte by byte, for inputs a test needs many of.

What gfxpack checks of a code object (:func:`gfxpack.amdgpu.code_object_problem`) is
its ELF header: 64-bit little-endian, e_machine EM_AMDGPU, OS/ABI HSA and the
processor's EF_AMDGPU_MACH in e_flags; the body is whatever the test wants to
recognise later. tests/fatbin builds real ones with hipcc.
"""

from __future__ import annotations

import struct

import pytest

from gfxpack.amdgpu import MACH

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
ABI_V5 = 3


def code_object(
    processor: str,
    body: bytes = b"",
    flags: int = 0,
    machine: int = EM_AMDGPU,
    osabi: int = ELFOSABI_AMDGPU_HSA,
) -> bytes:
    """An ELF64 header of a code object for ``processor`` (its EF_AMDGPU_MACH | ``flags``,
    code object v5), then ``body``."""
    ident = b"\x7fELF" + bytes([2, 1, 1, osabi, ABI_V5]) + bytes(7)
    header = struct.pack(
        "<16sHHIQQQIHHHHHH", ident, 3, machine, 1, 0, 0, 0, MACH[processor] | flags,
        64, 56, 0, 64, 0, 0,
    )  # fmt: skip
    return header + body


def hipcc_code_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Real code objects, by target id (gfx90a, gfx1030, gfx906:xnack-), cut by gfxpack's
    bundle reader from a library Debian's hipcc built (tests/fatbin, built once per
    session; skips naming hipcc when it is not installed)."""
    from gfxpack.fatbin.reader import FatBinary
    from tests.fatbin.conftest import build_once

    found: dict[str, bytes] = {}
    with FatBinary(build_once(tmp_path_factory).one_file) as fat:
        for device in fat.devices:
            contents = device.bundle.contents()
            for obj in device.bundle.code_objects:
                found[str(obj.target)] = bytes(device.bundle.code(obj, contents))
    return found
