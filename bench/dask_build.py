"""The example release built by a Dask cluster against the local process pool.

Both build the example (examples/package.json, generated artifacts for gfx1100,
gfx942 and gfx950, both formats) with the same number of processes: the local
pool with -j N, a dask.distributed LocalCluster of N single-threaded worker
processes through --scheduler. What is timed, each side, is one whole
``gfxpack build`` as a library call (build_release: scan, plan, route, write every
package, index): the local side starts and stops its process pool inside that
call, as the command does; the Dask side connects a client to the scheduler,
submits and collects inside it. The cluster is started once, before timing, as a
real cluster runs before a build is submitted to it, and its workers preload
gfxpack's build code (``dask worker --preload gfxpack.dask_executor``, as the
README tells a cluster to); the very first build on it is timed and reported
apart (cold). Then the two sides alternate, --repeat times each, so that the
machine's other load falls on both alike; best of each. The packages of both are
checked to be the same bytes. --scale (larger artifact files) shows the
cluster's per-task cost shrink against the work.

    python bench/dask_build.py [--workers 2] [--repeat 5] [--scale 1.0]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

from distributed import LocalCluster

from gfxpack.build import BuildOptions
from gfxpack.release import ReleaseOptions, build_release

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.conftest import EXAMPLE_CONFIG, generate_example  # noqa: E402

from timing import best_of  # noqa: E402


def digests(out: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in out.iterdir()
        if p.suffix in (".deb", ".rpm")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0, help="artifact file sizes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        artifacts = generate_example(work / "artifacts", scale=args.scale)
        local = ReleaseOptions("8.2.0", build=BuildOptions(jobs=args.workers))
        with LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            preload=["gfxpack.dask_executor"],
        ) as cluster:
            remote = ReleaseOptions(
                "8.2.0", build=BuildOptions(scheduler=cluster.scheduler_address)
            )

            def pool_build() -> None:
                build_release(EXAMPLE_CONFIG, artifacts, work / "local", local)

            def dask_build() -> None:
                build_release(EXAMPLE_CONFIG, artifacts, work / "dask", remote)

            cold = best_of(1, dask_build)
            pool, dask = [], []
            for _ in range(args.repeat):
                pool.append(best_of(1, pool_build))
                dask.append(best_of(1, dask_build))
        same = digests(work / "local") == digests(work / "dask")
        files = len(digests(work / "local"))
    print(
        f"example release, {files} packages, {args.workers} processes, "
        f"alternating, best of {args.repeat}"
    )
    print(f"  local process pool  {min(pool):6.2f} s")
    print(f"  Dask LocalCluster   {min(dask):6.2f} s  ({min(dask) / min(pool):.2f}x the pool)")
    print(f"  Dask, first build on the fresh cluster {cold:6.2f} s")
    print(f"  same bytes: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
