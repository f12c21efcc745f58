"""gfxpack split speed on the largest fat binary at hand, against the floor on the same bytes.

The binary: Debian's librocsparse.so (1.31 GB, from ``make realworld``'s download
under --work) when present, else the largest fat library found under --work.

- gfxpack: ``gfxpack split`` of a tree holding only that binary (-j = cores), in
  a child process whose peak resident memory is reported;
- floor: reading the file once plus ``zstd -3 -T0`` of its device code (the
  ``.hip_fatbin`` section, dumped beforehand so the dump is not timed);
- ROCm's way: one ``clang-offload-bundler --unbundle`` per bundle and target
  (how ROCm's splitter extracts code objects), code objects only, no archive.

Target: gfxpack within 1.3x of the floor; peak memory below 1.2x the file.

    python bench/split_speed.py [--work build/realworld] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gfxpack.fatbin.reader import FatBinary
from timing import best_of

BUNDLER = "clang-offload-bundler-15"
MEASURE = (
    "import resource, subprocess, sys; "
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def largest_fat_binary(work: Path) -> Path:
    candidates = []
    for path in work.rglob("*.so*"):
        if path.is_file() and not path.is_symlink() and "/tree/" in str(path):
            candidates.append(path)
    for path in sorted(candidates, key=lambda p: p.stat().st_size, reverse=True):
        with FatBinary(path) as fat:
            if fat.devices:
                return path
    sys.exit(f"no fat binary under {work}: run 'make realworld' first")


def read_file(path: Path) -> None:
    with open(path, "rb") as handle:
        while handle.read(1 << 24):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("build/realworld"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    binary = largest_fat_binary(args.work)
    size = binary.stat().st_size
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(dir=args.work) as scratch_name:
        scratch = Path(scratch_name)
        tree = scratch / "tree"
        tree.mkdir()
        os.link(binary, tree / binary.name)
        section = scratch / "device-code"
        subprocess.run(
            [
                "objcopy",
                "--dump-section",
                f".hip_fatbin={section}",
                str(binary),
                str(scratch / "x"),
            ],
            check=True,
        )
        read_file(binary)  # warm the page cache for every contender alike

        def floor() -> None:
            read_file(binary)
            subprocess.run(
                ["zstd", "-3", "-T0", "-q", "-f", "-o", os.devnull, str(section)], check=True
            )

        peaks: list[int] = []

        def split() -> None:
            out = scratch / "out"
            shutil.rmtree(out, ignore_errors=True)
            command = [sys.executable, "-m", "gfxpack", "split", str(tree), "--out", str(out),
                       "--name", "bench_lib", "-j", str(cores), "--json"]  # fmt: skip
            # A fresh parent whose only child is the split: its peak is the split's alone.
            report = subprocess.run(
                [sys.executable, "-c", MEASURE, *command],
                check=True,
                capture_output=True,
                text=True,
            )
            peaks.append(int(report.stdout.split()[-1]) * 1024)

        floor_time = best_of(args.repeat, floor)
        split_time = best_of(args.repeat, split)
        peak = max(peaks)

        with FatBinary(binary) as fat:
            jobs = [
                (d.bundle.offset, d.bundle.length, o.triple)
                for d in fat.devices
                for o in d.bundle.code_objects
            ]
        bundle = scratch / "bundle"
        start = time.perf_counter()
        with open(section, "rb") as dumped:
            current = None
            for offset, length, triple in jobs:
                if current != offset:
                    dumped.seek(offset)
                    bundle.write_bytes(dumped.read(length))
                    current = offset
                subprocess.run(
                    [BUNDLER, "--unbundle", "--type=o", f"--input={bundle}",
                     f"--output={scratch / 'code'}", f"--targets={triple}"],
                    check=True,
                )  # fmt: skip
        bundler_time = time.perf_counter() - start

    print(f"{binary.name}: {size / 1e6:,.0f} MB, {len(jobs)} code objects, {cores} cores")
    print("| contender | wall time | vs floor |")
    print("|---|---:|---:|")
    print(f"| floor: read + zstd -3 -T0 of the device code | {floor_time:.1f} s | 1.00x |")
    print(f"| gfxpack split -j {cores} | {split_time:.1f} s | {split_time / floor_time:.2f}x |")
    print(
        f"| clang-offload-bundler --unbundle per bundle and target (extraction only) | "
        f"{bundler_time:.1f} s | {bundler_time / floor_time:.2f}x |"
    )
    print(
        f"peak resident memory of gfxpack split: {peak / 1e6:,.0f} MB ({peak / size:.2f}x the file)"
    )


if __name__ == "__main__":
    main()
