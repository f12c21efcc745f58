"""The example release built by a Dask cluster against the local process pool.

Both build the example (examples/package.json, generated artifacts for gfx1100,
gfx942 and gfx950, both formats) with the same number of processes: the local
pool with -j N, a dask.distributed LocalCluster of N single-threaded worker
processes through --scheduler. The cluster is started once, before timing, as
a real cluster runs before a build is submitted to it. Best of --repeat each;
the packages of both are checked to be the same bytes. The cluster's cost is
per task (scheduling round trips, worker bookkeeping beside the job): --scale
(larger artifact files) shows it shrink against the work.

    python bench/dask_build.py [--workers 2] [--repeat 3] [--scale 1.0]
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
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="artifact file sizes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        artifacts = generate_example(work / "artifacts", scale=args.scale)
        local = ReleaseOptions("8.2.0", build=BuildOptions(jobs=args.workers))
        pool = best_of(
            args.repeat,
            lambda: build_release(EXAMPLE_CONFIG, artifacts, work / "local", local),
        )
        with LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            remote = ReleaseOptions(
                "8.2.0", build=BuildOptions(scheduler=cluster.scheduler_address)
            )
            dask = best_of(
                args.repeat,
                lambda: build_release(EXAMPLE_CONFIG, artifacts, work / "dask", remote),
            )
        same = digests(work / "local") == digests(work / "dask")
        files = len(digests(work / "local"))
    print(f"example release, {files} packages, {args.workers} processes, best of {args.repeat}")
    print(f"  local process pool  {pool:6.2f} s")
    print(f"  Dask LocalCluster   {dask:6.2f} s  ({dask / pool:.2f}x the pool)")
    print(f"  same bytes: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
