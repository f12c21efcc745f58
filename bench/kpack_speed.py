""".kpack speed: write and read throughput against raw zstd, and lookup cost vs size.

1. Throughput. 1,000 code objects of 64 KiB to 4 MiB (log-uniform, ELF-like
   mixes of random and repetitive bytes). gfxpack's writer (archive on disk)
   against raw zstd at the same level over the same bytes (each object one
   frame, written to one file); gfxpack's reader (open, then every object)
   against decompressing the same frames from a file. Ratio = gfxpack / zstd,
   target <= 1.3.
2. Lookup. Time to open an archive and read one code object, for 100, 1,000
   and 10,000 objects: gfxpack archives (frame index in the TOC) and
   upstream-style archives without it (the reader walks the size prefixes).

    python bench/kpack_speed.py [--objects 1000] [--repeat 3] [--level 3]
"""

from __future__ import annotations

import argparse
import io
import math
import os
import random
import statistics
import struct
import tempfile
import time
from pathlib import Path

import msgpack
import zstandard

from gfxpack.kpack import KpackReader, KpackWriter
from timing import best_of

KiB, MiB = 1024, 1024 * 1024


def code_objects(count: int, seed: int = 7) -> list[bytes]:
    """ELF-like objects: a header, then runs of random bytes (packed constants) and
    repeated instruction-like words, so zstd compresses them about 2-4x."""
    rng = random.Random(seed)
    pool = bytearray()
    while len(pool) < 16 * MiB:
        if rng.random() < 0.4:
            pool += rng.randbytes(rng.randint(256, 8 * KiB))
        else:
            word = rng.randbytes(rng.choice((4, 8, 16)))
            pool += word * rng.randint(16, 512)
    objects = []
    for _ in range(count):
        size = int(math.exp(rng.uniform(math.log(64 * KiB), math.log(4 * MiB))))
        start = rng.randrange(0, len(pool) - size)
        objects.append(b"\x7fELF\x02\x01\x01@" + bytes(pool[start : start + size - 8]))
    return objects


def throughput(objects: list[bytes], level: int, repeat: int, workdir: Path) -> None:
    total = sum(map(len, objects))
    archive = workdir / "bench.kpack"
    raw = workdir / "bench.zst"
    frames: list[tuple[int, int]] = []

    def write_gfxpack():
        with open(archive, "wb") as out, KpackWriter(out, "bench", "gfx942", level=level) as w:
            for i, code in enumerate(objects):
                w.add(f"lib/libbench.so#{i}", code)

    def write_zstd():
        frames.clear()
        compressor = zstandard.ZstdCompressor(level=level)
        with open(raw, "wb") as out:
            for code in objects:
                frame = compressor.compress(code)
                frames.append((out.tell(), len(frame)))
                out.write(frame)

    def read_gfxpack():
        with KpackReader.open(archive) as reader:
            for kernel in reader.kernels:
                reader.read_kernel(kernel)

    def read_zstd():
        decompressor = zstandard.ZstdDecompressor()
        with open(raw, "rb") as file:
            for offset, size in frames:
                file.seek(offset)
                decompressor.decompress(file.read(size))

    rows = []
    for label, ours, theirs in (
        ("write", write_gfxpack, write_zstd),
        ("read all", read_gfxpack, read_zstd),
    ):
        theirs()  # warm the page cache and the frame list
        ours()
        t_ours, t_theirs = best_of(repeat, ours), best_of(repeat, theirs)
        rows.append((label, t_ours, t_theirs))
    print(
        f"throughput: {len(objects)} code objects, {total / MiB:,.0f} MiB, zstd level {level}, "
        f"archive {archive.stat().st_size / MiB:,.0f} MiB; best of {repeat}"
    )
    print(f"{'':10} {'gfxpack':>14} {'raw zstd':>14} {'ratio':>7}")
    for label, t_ours, t_theirs in rows:
        print(
            f"{label:10} {total / MiB / t_ours:>9,.0f} MB/s {total / MiB / t_theirs:>9,.0f} MB/s "
            f"{t_ours / t_theirs:>6.2f}x {'PASS' if t_ours / t_theirs <= 1.3 else 'FAIL'}"
        )


def without_index(data: bytes) -> bytes:
    """The same archive as an upstream writer leaves it: no frame index in the TOC."""
    toc_offset = struct.unpack_from("<Q", data, 8)[0]
    toc = msgpack.unpackb(data[toc_offset:], raw=False)
    del toc["zstd_frame_offsets"]
    return data[:toc_offset] + msgpack.packb(toc, use_bin_type=True)


def lookup(sizes: list[int], workdir: Path, repeat: int) -> None:
    rng = random.Random(3)
    print(f"lookup: open + read one 4 KiB code object (median of {repeat * 10})")
    print(
        f"{'objects':>8} {'gfxpack: open':>14} {'+ read':>9} {'no index: open':>15} {'+ read':>9}"
    )
    for count in sizes:
        out = io.BytesIO()
        with KpackWriter(out, "bench", "gfx942") as writer:
            for i in range(count):
                writer.add(f"lib/libbench.so#{i}", rng.randbytes(1 * KiB) * 4)
        indexed = workdir / f"indexed-{count}.kpack"
        plain = workdir / f"plain-{count}.kpack"
        indexed.write_bytes(out.getvalue())
        plain.write_bytes(without_index(out.getvalue()))
        key = f"lib/libbench.so#{count // 2}"
        cells = []
        for path in (indexed, plain):
            opens, reads = [], []
            for _ in range(repeat * 10):
                start = time.perf_counter()
                reader = KpackReader.open(path)
                opened = time.perf_counter()
                reader.read(key)
                reads.append(time.perf_counter() - opened)
                opens.append(opened - start)
                reader.close()
            cells += [statistics.median(opens), statistics.median(reads)]
        print(
            f"{count:>8} {cells[0] * 1e3:>11.2f} ms {cells[1] * 1e3:>6.2f} ms "
            f"{cells[2] * 1e3:>12.2f} ms {cells[3] * 1e3:>6.2f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lookup-sizes", default="100,1000,10000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kpack-bench-", dir=os.environ.get("TMPDIR")) as tmp:
        workdir = Path(tmp)
        throughput(code_objects(args.objects), args.level, args.repeat, workdir)
        print()
        lookup([int(n) for n in args.lookup_sizes.split(",")], workdir, args.repeat)


if __name__ == "__main__":
    main()
