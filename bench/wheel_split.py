"""gfxpack split of a fat wheel against the floor: the same work by standard tools.

The wheel: jax_rocm7_pjrt-0.10.2 (its 503 MB .so carries 27 arches x 43 code
objects in zstd-compressed bundles), from --wheel-dir (download it with
``pip download --no-deps -d DIR jax-rocm7-pjrt==0.10.2``).

- gfxpack: ``gfxpack split WHEEL --out OUT`` in a child process (all cores);
- floor, on the same bytes: ``unzip`` of the wheel, ``zstd -d`` of every
  compressed bundle's payload, ``zstd -3 -T0`` of each arch's code objects
  (concatenated, one file per arch) and ``zip`` of the host wheel's tree. The
  payloads, the per-arch files and the host tree are prepared beforehand with
  gfxpack's own bundle reader and split (not timed).

With ``--join``, the join is measured instead: the wheel is split once (not
timed), then ``gfxpack join SPLIT --out OUT`` of the host wheel, its
``.gfxpack-join`` and every device wheel runs against its floor, what join has to
do by standard tools: ``unzip`` of every split wheel, ``cp`` of the
``.gfxpack-join`` (the original bundles, kept as they were: nothing is
recompressed) and ``zip`` (deflate, level 6: the level the fat wheel's members
are stored at) of the fat wheel's tree, unpacked beforehand. Target: join within
1.2x of its floor.

With ``--before SRC`` (a gfxpack source tree, such as an older checkout's ``src``),
that tree's split runs too, beside this one: the same wheel, the same machine load.

Floor and split alternate, ``--repeat`` times each, best of each kept; wall time,
CPU time (user + system of every process) and peak resident memory (the largest
single process) are printed with the ratios. Targets: split within 1.3x of the
floor; peak memory within 1.5x of the wheel's largest member.

    python bench/wheel_split.py [--wheel-dir /tmp/jax] [--repeat 3] [--join] [--before SRC]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path

from gfxpack.fatbin.reader import FatBinary
from gfxpack.wheels.split import JOIN_DATA

# Runs argv[1:] as one shell command; prints the children's peak RSS (KiB) and CPU seconds.
MEASURE = (
    "import resource, subprocess, sys; "
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(r.ru_maxrss, r.ru_utime + r.ru_stime)"
)


def measured(command: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak bytes of ``command`` in a fresh parent."""
    start = time.perf_counter()
    report = subprocess.run(
        [sys.executable, "-c", MEASURE, *command], check=True, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    peak_kb, cpu = report.stdout.split()[-2:]
    return wall, float(cpu), int(peak_kb) * 1024


def unpack_and_split(wheel: Path, scratch: Path) -> tuple[Path, Path, int]:
    """The wheel unpacked, its split (by this gfxpack) and its largest member's size."""
    unpacked = scratch / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
        largest = max(i.file_size for i in archive.infolist())
    split = scratch / "split"
    subprocess.run(
        [sys.executable, "-m", "gfxpack", "split", str(wheel), "--out", str(split)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return unpacked, split, largest


def prepare(wheel: Path, scratch: Path) -> tuple[Path, Path, Path, int]:
    """The split floor's inputs (bundle payloads, per-arch code objects, the host
    tree) and the size of the wheel's largest member."""
    unpacked, split, largest = unpack_and_split(wheel, scratch)
    payloads, arches = scratch / "payloads", scratch / "arches"
    payloads.mkdir()
    arches.mkdir()
    objects: dict[str, list[bytes]] = defaultdict(list)
    for path in sorted(unpacked.rglob("*.so*")):
        with FatBinary(path) as fat:
            for number, device in enumerate(fat.devices):
                if not device.first:
                    continue
                found = device.bundle
                if found.compression == "zstd":
                    stream = found.stored[found.payload_start :]
                    (payloads / f"{path.name}-{number}.zst").write_bytes(stream)
                contents = found.contents()
                for obj in found.code_objects:
                    code = contents[obj.offset : obj.offset + obj.size]
                    objects[obj.target.processor].append(bytes(code))
    for arch, codes in objects.items():
        (arches / arch).write_bytes(b"".join(codes))
    host = scratch / "host"
    with zipfile.ZipFile(split / wheel.name) as archive:
        archive.extractall(host)
    return payloads, arches, host, largest


def split_scripts(wheel: Path, scratch: Path) -> tuple[str, str, int]:
    """The split floor's and gfxpack split's shell commands, the largest member's size."""
    payloads, arches, host, largest = prepare(wheel, scratch)
    work, out = scratch / "work", scratch / "out"
    floor = (
        f"set -e; rm -rf {work}; mkdir -p {work}/bundles {work}/kpack; "
        f"unzip -q {wheel} -d {work}/unzipped; "
        f"zstd -d -q -f --output-dir-flat {work}/bundles {payloads}/*; "
        f"zstd -3 -T0 -q -f --output-dir-flat {work}/kpack {arches}/*; "
        f"cd {host} && zip -q -r {work}/host.whl ."
    )
    return floor, f"rm -rf {out}; {sys.executable} -m gfxpack split {wheel} --out {out}", largest


def join_scripts(wheel: Path, scratch: Path) -> tuple[str, str, int]:
    """The join floor's and gfxpack join's shell commands, the largest member's size."""
    unpacked, split, largest = unpack_and_split(wheel, scratch)
    work, out = scratch / "work", scratch / "out"
    # Every split wheel unpacked, the kept bundles copied, the fat wheel zipped at the
    # level its members are stored at (zip's default, 6).
    floor = (
        f"set -e; rm -rf {work}; mkdir -p {work}/unzipped; "
        f"for w in {split}/*.whl; do unzip -q -o $w -d {work}/unzipped; done; "
        f"cp {split}/*{JOIN_DATA} {work}/; "
        f"cd {unpacked} && zip -q -r -6 {work}/fat.whl ."
    )
    return floor, f"rm -rf {out}; {sys.executable} -m gfxpack join {split} --out {out}", largest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel-dir", type=Path, default=Path("/tmp/jax"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scratch", type=Path, default=None, help="default: the system's")
    parser.add_argument("--before", type=Path, default=None, help="another gfxpack's src")
    parser.add_argument("--join", action="store_true", help="measure join, not split")
    args = parser.parse_args()
    name, target = ("join", 1.2) if args.join else ("split", 1.3)
    wheels = sorted(args.wheel_dir.glob("jax_rocm7_pjrt-0.10.2-*.whl"))
    if not wheels:
        sys.exit(f"no jax_rocm7_pjrt-0.10.2 wheel in {args.wheel_dir} (see the docstring)")
    wheel = wheels[0]
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch_name:
        scratch = Path(scratch_name)
        scripts = join_scripts if args.join else split_scripts
        floor_script, script, largest = scripts(wheel, scratch)
        load_before = os.getloadavg()[0]
        runs: dict[str, list[tuple[float, float, int]]] = {"floor": [], name: []}
        if args.before is not None:
            runs["before"] = []
            before_script = f"PYTHONPATH={args.before.resolve()} {script}"
        for _ in range(args.repeat):  # alternating: all see the same machine load
            runs["floor"].append(measured(["sh", "-c", floor_script]))
            runs[name].append(measured(["sh", "-c", script]))
            if args.before is not None:
                runs["before"].append(measured(["sh", "-c", before_script]))
        load_after = os.getloadavg()[0]
    best = {
        name: (min(r[0] for r in rs), min(r[1] for r in rs), max(r[2] for r in rs))
        for name, rs in runs.items()
    }
    mb = 1 << 20
    print(f"wheel: {wheel.name} ({wheel.stat().st_size / mb:,.0f} MB, largest member "
          f"{largest / mb:,.0f} MB); {os.cpu_count()} cores; best of {args.repeat}")  # fmt: skip
    print(f"{'':8} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    for name, (wall, cpu, peak) in best.items():
        print(f"{name:8} {wall:8.1f} {cpu:8.1f} {peak / mb:8.0f}")
    (fw, fc, _), (sw, sc, sp) = best["floor"], best[name]
    print(f"{name} / floor: wall {sw / fw:.2f}x, CPU {sc / fc:.2f}x (target {target}x); "
          f"peak / largest member {sp / largest:.2f}x (target 1.5x)")  # fmt: skip
    if "before" in best:
        (bw, bc, bp) = best["before"]
        print(f"{name} / before: wall {sw / bw:.2f}x, CPU {sc / bc:.2f}x, peak {sp / bp:.2f}x")
    print(f"load average {load_before:.1f} before, {load_after:.1f} after")


if __name__ == "__main__":
    main()
