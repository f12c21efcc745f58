"""Generate a large fat shared library for bench/split_speed.py when no real one is at hand.

The device code is ``bundles`` offload bundles (one per "translation unit"), each
with a host entry and one code object per target: an AMDGPU ELF header whose
e_flags match the target, then ELF-like bytes (runs of random bytes and of
repeated instruction-like words, so zstd compresses them about 4x, like real
code objects). ``objcopy`` turns the bundles into a ``.hip_fatbin`` section,
a small C file holds one ``__CudaFatBinaryWrapper`` per bundle, and ``gcc
-shared`` links them: the wrappers get R_X86_64_RELATIVE relocations exactly
as in a hipcc-built library.

    python bench/fat_library.py OUT.so [--megabytes 500]
"""

from __future__ import annotations

import argparse
import random
import struct
import subprocess
import tempfile
from pathlib import Path

from gfxpack.fatbin.targets import MACH

TARGETS = {"gfx90a": 0, "gfx942": 0, "gfx1100": 0, "gfx906:xnack-": 0x200}
PAGE = 4096


def code_object(processor: str, flags: int, size: int, rng: random.Random) -> bytes:
    ident = b"\x7fELF" + bytes([2, 1, 1, 64, 2]) + bytes(7)
    header = struct.pack(
        "<16sHHIQQQIHHHHHH", ident, 3, 224, 1, 0, 0, 0, MACH[processor] | flags,
        64, 56, 0, 64, 0, 0,
    )  # fmt: skip
    body = bytearray(header)
    while len(body) < size:
        if rng.random() < 0.3:
            body += rng.randbytes(rng.randint(64, 512))
        else:
            body += rng.randbytes(8) * rng.randint(8, 64)
    return bytes(body[:size])


def bundle(objects: list[tuple[str, bytes]]) -> bytes:
    entries = [("host-x86_64-unknown-linux", b""), *objects]
    head_size = 32 + sum(24 + len(t) for t, _ in entries)
    position = -(-head_size // PAGE) * PAGE
    table, body = b"", bytearray()
    for triple, code in entries:
        table += struct.pack("<QQQ", position + len(body), len(code), len(triple)) + triple.encode()
        body += code + bytes(-len(code) % PAGE)
    head = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries)) + table
    return head + bytes(position - len(head)) + bytes(body)


def generate(out: Path, megabytes: int, bundles: int = 64, seed: int = 7) -> Path:
    rng = random.Random(seed)
    per_object = megabytes * 1_000_000 // (bundles * len(TARGETS))
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        blob = scratch / "fatbin.bin"
        offsets = []
        with open(blob, "wb") as handle:
            for _ in range(bundles):
                offsets.append(handle.tell())
                data = bundle(
                    [
                        (f"hipv4-amdgcn-amd-amdhsa--{target}",
                         code_object(target.split(":")[0], flags, per_object, rng))
                        for target, flags in TARGETS.items()
                    ]
                )  # fmt: skip
                handle.write(data + bytes(-len(data) % PAGE))
        subprocess.run(
            ["objcopy", "-I", "binary", "-O", "elf64-x86-64", "--rename-section",
             ".data=.hip_fatbin,alloc,load,readonly,data,contents",
             "--set-section-alignment", ".data=4096", "fatbin.bin", "fatbin.o"],
            check=True, cwd=scratch,
        )  # fmt: skip
        wrappers = ",\n".join(
            f"  {{0x48495046, 1, _binary_fatbin_bin_start + {o}, 0}}" for o in offsets
        )
        (scratch / "wrappers.c").write_text(
            # Hidden: the wrappers get R_X86_64_RELATIVE relocations, as hipcc's do.
            'extern const char _binary_fatbin_bin_start[] __attribute__((visibility("hidden")));\n'
            "struct wrapper { unsigned magic, version; const void *binary; void *reserved; };\n"
            '__attribute__((section(".hipFatBinSegment"), used))\n'
            f"struct wrapper fat_binary_wrappers[] = {{\n{wrappers}\n}};\n"
            "int answer(void) { return 42; }\n"
        )
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-Wl,-z,noexecstack", "-o", str(out.resolve()),
             "wrappers.c", "fatbin.o"],
            check=True, cwd=scratch,
        )  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--megabytes", type=int, default=500)
    args = parser.parse_args()
    print(generate(args.out, args.megabytes))


if __name__ == "__main__":
    main()
