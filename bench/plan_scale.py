"""How planning scales: 250, 500 and 1,000 base packages x 32 targets.

Prints, per size, the packages planned, the best-of-N wall time, packages per
second and the peak memory the planner allocates (tracemalloc, measured in a
separate run so it does not slow the timed one), then the time per
base-target pair relative to the smallest size: flat means linear in
packages x targets. The synthetic release mirrors upstream's package.json
mix (about 45% gfxarch, one metapackage in eight, a quarter -devel).

    python bench/plan_scale.py [--repeat 3] [--sizes 250,500,1000] [--targets 32]
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc

from gfxpack.config import PackageSpec, Relations
from gfxpack.plan import Kind, plan
from gfxpack.relations import parse_deb, parse_rpm

TARGETS = [
    "gfx900", "gfx902", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx904", "gfx1013",
    "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031", "gfx1032",
    "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103",
    "gfx1150", "gfx1151", "gfx1152", "gfx1153", "gfx1200", "gfx1201", "gfx1250",
]  # fmt: skip


def synthetic_release(bases: int, seed: int = 1) -> list[PackageSpec]:
    rng = random.Random(seed)
    specs: list[PackageSpec] = []
    for i in range(bases):
        kind = rng.random()
        meta = i >= 10 and kind < 0.125
        devel = not meta and i > 0 and kind > 0.75
        name = f"amdrocm-lib{i}" + ("-devel" if devel else "")
        earlier = [s.name for s in specs]
        deps = rng.sample(earlier, min(len(earlier), 20 if meta else rng.randint(1, 5)))
        system = [] if meta else ["libc6", "libstdc++6|libstdc++8"]
        specs.append(
            PackageSpec(
                name=name,
                index=i,
                gfxarch=rng.random() < 0.45,
                metapackage=meta,
                deb=Relations(depends=tuple(parse_deb(d) for d in system + deps)),
                rpm=Relations(depends=tuple(parse_rpm(d) for d in deps)),
            )
        )
    return specs


def measure(bases: int, targets: list[str], repeat: int) -> dict:
    specs = synthetic_release(bases)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = plan(specs, targets, "8.2.0")
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    plan(specs, targets, "8.2.0")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    edges = sum(len(dep) for p in result.packages for dep in p.deb.depends)
    return {
        "bases": bases,
        "packages": len(result.packages),
        "devices": sum(p.kind is Kind.DEVICE for p in result.packages),
        "edges": edges,
        "seconds": best,
        "peak_mib": peak / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250,500,1000")
    parser.add_argument("--targets", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"plan scale: best of {args.repeat}; time per package flat = linear")
    print(
        f"{'bases':>6} {'targets':>7} {'packages':>9} {'DEB edges':>10} {'seconds':>8} "
        f"{'packages/s':>11} {'us/package':>11} {'us/edge':>8} {'peak MiB':>9}"
    )
    # Linear in packages: more bases at full width, then more targets at full size.
    runs = [(size, args.targets) for size in sizes]
    runs += [(sizes[-1], n) for n in (args.targets // 4, args.targets // 2) if n]
    rows = []
    for bases, width in runs:
        row = measure(bases, TARGETS[:width], args.repeat)
        rows.append((width, row))
        print(
            f"{row['bases']:>6} {width:>7} {row['packages']:>9} {row['edges']:>10} "
            f"{row['seconds']:>8.3f} {row['packages'] / row['seconds']:>11,.0f} "
            f"{1e6 * row['seconds'] / row['packages']:>11.1f} "
            f"{1e6 * row['seconds'] / row['edges']:>8.2f} {row['peak_mib']:>9.1f}"
        )
    largest = next(
        row for width, row in rows if width == args.targets and row["bases"] == sizes[-1]
    )
    verdict = "PASS" if largest["seconds"] < 2.0 else "FAIL"
    print(
        f"{verdict}: {largest['bases']} x {args.targets} planned in {largest['seconds']:.2f} s "
        "(target < 2 s)"
    )


if __name__ == "__main__":
    main()
