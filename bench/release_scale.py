"""A full-size release, simulated: TheRock's package.json for 3, 6 and 12 GPU targets.

For each target count: generate an artifacts tree for TheRock's own package.json
(examples/generate_artifacts.py --config: generic and per-arch artifacts, host
libraries 200-1500 KiB, per-arch code-object databases 100-600 KiB and kpack
archives of 2 x 16-256 KiB per library, per-arch sizes times --arch-scale so that
device code is most of the bytes as in a real release, every size times --scale),
then in a fresh process per stage, so each stage's peak memory is its own:

* prepare: scan the tree, plan, route every file;
* build deb, build rpm: gfxpack build, one format each (local process pool);
* publish: gfxpack repo of both builds;
* verify: gfxpack verify of the repository (every package resolved, every rule).

Printed: seconds, peak resident memory (the largest process of the stage, pool
workers included) and, for the builds, nanoseconds per artifact byte; then how
each grows from the smallest target count to the largest. Streaming keeps peak
memory flat while bytes grow; time per byte stays flat.

    python bench/release_scale.py [--targets 3,6,12] [--scale 1.0] [--arch-scale 8]
        [--work DIR] [-j 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THEROCK = ROOT.parent / "shared" / "fixtures" / "therock" / "package.json"
# Twelve targets TheRock builds (its CDNA, RDNA and APU families), in the order a
# release grows: the first 3, then 6, then all 12.
TARGETS = (
    "gfx942",
    "gfx950",
    "gfx1100",
    "gfx90a",
    "gfx1101",
    "gfx1201",
    "gfx908",
    "gfx1030",
    "gfx1102",
    "gfx1150",
    "gfx1151",
    "gfx1200",
)
VERSION = "8.2.0"

# Runs one stage in this (fresh) process and prints its measurements as JSON.
STAGE = """
import json, resource, sys, time
HIGH_WATER
started = time.perf_counter()
from gfxpack.cli import main
sys.argv = ["gfxpack", *sys.argv[1:]]
code = 0
try:
    main()
except SystemExit as e:
    code = e.code or 0
seconds = time.perf_counter() - started
peak = max(high_water_kib(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"seconds": seconds, "peak_kib": peak, "exit": code}), file=sys.stderr)
"""

PREPARE = """
import json, resource, sys, time
HIGH_WATER
started = time.perf_counter()
from gfxpack.release import ReleaseOptions, prepare
release = prepare(sys.argv[1], sys.argv[2], ReleaseOptions(sys.argv[3], detect_mode=True))
seconds = time.perf_counter() - started
peak = high_water_kib()
print(json.dumps({"seconds": seconds, "peak_kib": peak, "packages": len(release.plan.packages)}),
      file=sys.stderr)
"""


# This process's own peak: /proc's VmHWM starts afresh at exec, where getrusage's
# ru_maxrss keeps the parent's peak across fork and exec.
HIGH_WATER = """
def high_water_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""
STAGE = STAGE.replace("HIGH_WATER", HIGH_WATER)
PREPARE = PREPARE.replace("HIGH_WATER", HIGH_WATER)

# Generates the tree in its own process, so this one stays small (its children would
# otherwise start with its size).
GENERATE = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from generate_artifacts import generate
generate(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4].split(","), float(sys.argv[5]),
         seed=2026, arch_scale=float(sys.argv[6]))
"""


def measure(code: str, *args: str) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    try:
        measured: dict[str, float] = json.loads(result.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        sys.exit(f"stage failed: {' '.join(args)}\n{result.stdout}\n{result.stderr}")
    if measured.get("exit") and args[0] != "verify":
        sys.exit(f"stage failed: {' '.join(args)}\n{result.stdout}\n{result.stderr}")
    return measured


def tree_bytes(root: Path) -> int:
    return sum(
        (Path(d) / f).lstat().st_size
        for d, _, files in os.walk(root)
        for f in files
        if not (Path(d) / f).is_symlink()
    )


def one_release(
    work: Path, count: int, scale: float, arch_scale: float, jobs: int
) -> dict[str, object]:
    targets = list(TARGETS[:count])
    artifacts, builds, repo = work / "artifacts", work / "builds", work / "repo"
    for path in (builds, repo):
        shutil.rmtree(path, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            GENERATE,
            str(ROOT / "examples"),
            str(artifacts),
            str(THEROCK),
            ",".join(targets),
            str(scale),
            str(arch_scale),
        ],
        check=True,
    )
    generated = time.perf_counter() - started
    size = tree_bytes(artifacts)
    stages: dict[str, dict[str, float]] = {}
    stages["prepare"] = measure(PREPARE, str(THEROCK), str(artifacts), VERSION)
    common = ["--config", str(THEROCK), "--artifacts", str(artifacts), "--rocm-version", VERSION]
    for fmt in ("deb", "rpm"):
        stages[f"build {fmt}"] = measure(
            STAGE, "build", *common, "--format", fmt, "--out", str(builds / fmt), "-q", "-j",
            str(jobs),
        )  # fmt: skip
        stages[f"build {fmt}"]["ns_per_byte"] = stages[f"build {fmt}"]["seconds"] / size * 1e9
    stages["publish"] = measure(
        STAGE, "repo", "--in", str(builds / "deb"), "--in", str(builds / "rpm"), "--out", str(repo)
    )
    # verify runs in full even when TheRock's package graph breaks a rule (it does: its
    # hpc-tests pull in other targets' packages); the exit status is reported.
    stages["verify"] = measure(STAGE, "verify", "--repo", str(repo), "--quiet")
    packages = len(json.loads((builds / "deb" / "index.json").read_text())["files"])
    built = sum(tree_bytes(builds / fmt) for fmt in ("deb", "rpm"))
    return {
        "targets": count,
        "artifact_bytes": size,
        "generate_seconds": generated,
        "packages_per_format": packages,
        "package_bytes": built,
        "stages": stages,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="3,6,12", help="target counts, up to 12")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every file size")
    parser.add_argument(
        "--arch-scale",
        type=float,
        default=8.0,
        help="multiply per-arch (device code) file sizes once more: device code is most of "
        "a real release's bytes",
    )
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "release-scale")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if not THEROCK.exists():
        sys.exit(f"{THEROCK} is absent (the shared fixtures are not checked out beside the clone)")
    results = []
    for count in (int(c) for c in args.targets.split(",")):
        result = one_release(
            args.work / f"{count}-targets", count, args.scale, args.arch_scale, args.jobs
        )
        results.append(result)
        if not args.json:
            print_release(result)
    if args.json:
        print(json.dumps(results, indent=2))
    elif len(results) > 1:
        print_growth(results[0], results[-1])


def print_release(result: dict[str, object]) -> None:
    stages = result["stages"]
    assert isinstance(stages, dict)
    print(
        f"\n{result['targets']} targets: {result['artifact_bytes'] / 2**20:,.0f} MiB of artifacts "
        f"(generated in {result['generate_seconds']:.0f} s), "
        f"{result['packages_per_format']} packages per format, "
        f"{result['package_bytes'] / 2**20:,.0f} MiB of packages"
    )
    print(f"  {'stage':<10} {'seconds':>8} {'peak MiB':>9} {'ns/byte':>8}")
    for name, stage in stages.items():
        per_byte = f"{stage['ns_per_byte']:8.1f}" if "ns_per_byte" in stage else ""
        failed = "  (exit 1: rules broken)" if stage.get("exit") else ""
        print(
            f"  {name:<10} {stage['seconds']:8.1f} {stage['peak_kib'] / 1024:9.0f} "
            f"{per_byte}{failed}"
        )


def print_growth(first: dict[str, object], last: dict[str, object]) -> None:
    a, b = first["stages"], last["stages"]
    assert isinstance(a, dict) and isinstance(b, dict)
    ratio = int(last["artifact_bytes"]) / int(first["artifact_bytes"])  # type: ignore[call-overload]
    print(
        f"\nfrom {first['targets']} to {last['targets']} targets "
        f"(artifact bytes x{ratio:.1f}): time x, peak memory x"
    )
    for name in a:
        print(
            f"  {name:<10} time x{b[name]['seconds'] / a[name]['seconds']:.2f}  "
            f"peak x{b[name]['peak_kib'] / a[name]['peak_kib']:.2f}"
        )


if __name__ == "__main__":
    main()
