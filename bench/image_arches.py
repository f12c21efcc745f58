"""gfxpack image: what building more arches costs once the host install is shared.

The example release (generated artifacts, built and published by gfxpack) is made
into images over a stand-in Debian base (tests/image/conftest.py's), for 1 arch and
for 3 (the example's gfx942, gfx950, gfx1100), installed by apt-get in the sandbox.
The host packages are installed once into a shared root and each arch's root is a
copy of it, so the target is: N arches cost well under N times one arch (DESIGN's
goal: 6 arches within 1.5x one).

    python bench/image_arches.py [--repeat 3] [--scale 0.2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import build_example, generate_example  # noqa: E402
from tests.image.conftest import BASE_TAG, stand_in_root, write_base  # noqa: E402

from gfxpack.formats import DEB  # noqa: E402
from gfxpack.image.workflow import build_images  # noqa: E402
from gfxpack.repo import publish  # noqa: E402

TARGETS = ["gfx942", "gfx950", "gfx1100"]


def seconds(repo: Path, base: Path, out: Path, targets: list[str], repeat: int) -> float:
    best = float("inf")
    for n in range(repeat):
        start = time.perf_counter()
        build_images(
            repo, ["amdrocm-core8.2-{arch}"], f"oci:{base}:{BASE_TAG}", out / f"{n}",
            targets, client="apt",
        )  # fmt: skip
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=float, default=0.2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        artifacts = generate_example(where / "artifacts", args.scale)
        build_example(artifacts, where / "packages")
        publish(where / "packages", where / "repo", "stable", 1_700_000_000)
        base = write_base(stand_in_root(DEB, where / "root", where / "si"), where / "base")
        one = seconds(where / "repo", base, where / "one", TARGETS[:1], args.repeat)
        three = seconds(where / "repo", base, where / "three", TARGETS, args.repeat)
    print("| arches | seconds | x one arch |")
    print("|---:|---:|---:|")
    print(f"| 1 | {one:.2f} | 1.00 |")
    print(f"| {len(TARGETS)} | {three:.2f} | {three / one:.2f} |")


if __name__ == "__main__":
    main()
