"""gfxpack image: what building more arches costs once the host install is shared,
and what each layer's compression costs against ``tar | gzip -6`` (or ``tar | zstd -3``)
of its files.

Two releases, each generated, built (deb) and published by gfxpack, made into images
over a stand-in Debian base (tests/image/conftest.py's), installed by apt-get in the
sandbox:

* the example release (its 3 arches: gfx942, gfx950, gfx1100);
* TheRock's own package.json (../shared/fixtures/therock; skipped, saying so, when
  absent) at its 6 targets, ``amdrocm-core8.2-{arch}`` per image.

For each: one arch's image against every arch's in one run (DESIGN's goal: 6 arches
within 1.5x one), the layers' compressed and unpacked sizes, one arch's image against
the whole layout; then each distinct layer of the all-arch layout unpacked and written
again by gfxpack's layer writer, timed against ``tar -c | gzip -6`` of the same
directory (the floor), with the sizes each gives. Each table is made for gzip layers
and for zstd layers (``--compression``; ``tar | zstd -3 -T0`` is zstd's floor).

    python bench/image_arches.py [--repeat 3] [--scale 0.2] [--therock-scale 1.0]
        [--only example|therock] [--compression gzip|zstd]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import build_example, generate_example, load_generator  # noqa: E402
from tests.image.conftest import BASE_TAG, EPOCH, stand_in_root, write_base  # noqa: E402

from gfxpack.build import BuildOptions  # noqa: E402
from gfxpack.formats import DEB  # noqa: E402
from gfxpack.image.layer import COMPRESSIONS, GZIP_LEVEL, ZSTD_LEVEL, write_layer  # noqa: E402
from gfxpack.image.layers import snapshot  # noqa: E402
from gfxpack.image.layout import start  # noqa: E402
from gfxpack.image.report import Images  # noqa: E402
from gfxpack.image.workflow import build_images  # noqa: E402
from gfxpack.release import ReleaseOptions, build_release  # noqa: E402
from gfxpack.repo import publish  # noqa: E402

EXAMPLE_TARGETS = ["gfx942", "gfx950", "gfx1100"]
THEROCK = ROOT.parent / "shared" / "fixtures" / "therock" / "package.json"
# The targets TheRock's fixture README names for its release.
THEROCK_TARGETS = ["gfx942", "gfx90a", "gfx950", "gfx1100", "gfx1151", "gfx1201"]
PACKAGES = ["amdrocm-core8.2-{arch}"]
MIB = 1 << 20


def timed(run: Callable[[], Images]) -> tuple[float, Images]:
    started = time.perf_counter()
    made = run()
    return time.perf_counter() - started, made


# The command line that is each compression's floor: the same level, no name, no time.
FLOORS = {
    "gzip": (f"gzip -{GZIP_LEVEL} -n", "--gzip"),
    "zstd": (f"zstd -{ZSTD_LEVEL} -T0 -q", "--zstd"),
}


def images(repo: Path, base: Path, out: Path, targets: list[str], compression: str) -> Images:
    shutil.rmtree(out, ignore_errors=True)  # an earlier turn's, not timed
    return build_images(repo, PACKAGES, f"oci:{base}:{BASE_TAG}", out, targets, client="apt",
                        compression=compression)  # fmt: skip


def arches_table(name: str, repo: Path, base: Path, work: Path, targets: list[str],
                 repeat: int, compression: str) -> tuple[Images, Images]:  # fmt: skip
    """One arch against every arch, in turns (a slow spell of the machine stretches
    both alike); best of ``repeat``, and the median of each turn's ratio (the steadier
    figure on a shared machine)."""
    one_times, every_times = [], []
    for _ in range(repeat):
        seconds, one = timed(lambda: images(repo, base, work / "one", targets[:1], compression))
        one_times.append(seconds)
        seconds, every = timed(lambda: images(repo, base, work / "all", targets, compression))
        every_times.append(seconds)
    ratios = sorted(e / o for o, e in zip(one_times, every_times, strict=True))
    print(f"\n{name}, {compression} layers: seconds, best of {repeat}\n")
    print("| arches | seconds | x one arch (best) | x one arch (median of turns) |")
    print("|---:|---:|---:|---:|")
    print(f"| 1 | {min(one_times):.2f} | 1.00 | 1.00 |")
    print(
        f"| {len(targets)} | {min(every_times):.2f} | {min(every_times) / min(one_times):.2f} "
        f"| {statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f}) |"
    )
    return one, every


def sizes_table(name: str, one: Images, every: Images) -> None:
    """Each layer's size in one arch's image, and the whole layout of every arch's
    (a layer shared by every image, as the host layer is, counted once)."""
    print(f"\n{name} layers: compressed MiB (unpacked MiB)\n")
    print("| layer | one-arch image | all-arch layout (distinct blobs) |")
    print("|---|---:|---:|")
    kinds: dict[str, dict[str, tuple[int, int]]] = {}
    for image in every.images:
        for layer in image.layers:
            kind = "device (each arch)" if layer.what.startswith("device") else layer.what
            if kind == "top":
                kind = "top (each arch)"
            kinds.setdefault(kind, {})[layer.digest] = (layer.size, layer.unpacked_size)
    ones: dict[str, tuple[int, int]] = {}
    for layer in one.images[0].layers:
        kind = "device (each arch)" if layer.what.startswith("device") else layer.what
        ones["top (each arch)" if kind == "top" else kind] = (layer.size, layer.unpacked_size)
    total_one = total_every = (0, 0)
    for kind, blobs in kinds.items():
        size = sum(s for s, _ in blobs.values()), sum(u for _, u in blobs.values())
        mine = ones.get(kind, (0, 0))
        count = f" ({len(blobs)} blobs)" if len(blobs) > 1 else ""
        print(f"| {kind} | {_mib(mine)} | {_mib(size)}{count} |")
        total_one = (total_one[0] + mine[0], total_one[1] + mine[1])
        total_every = (total_every[0] + size[0], total_every[1] + size[1])
    print(f"| **total** | {_mib(total_one)} | {_mib(total_every)} |")


def _mib(sizes: tuple[int, int]) -> str:
    return f"{sizes[0] / MIB:.1f} ({sizes[1] / MIB:.1f})"


def compression_table(name: str, every: Images, work: Path, repeat: int,
                      compression: str) -> None:  # fmt: skip
    """Each distinct new layer of the all-arch layout (the first device and top layer
    stand for the others) unpacked into a directory, then written again by gfxpack's
    layer writer and by ``tar -c | gzip -6`` (``zstd -3``), in turns, best of ``repeat``."""
    tool, flag = FLOORS[compression]
    print(f"\n{name}: each layer written by gfxpack against tar | {tool}, best of {repeat}\n")
    print(f"| layer | unpacked MiB | gfxpack s | {tool} s | time / floor | gfxpack MiB "
          f"| {tool} MiB |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    layout = Path(every.out)
    seen: set[str] = set()
    for layer in every.images[0].layers:
        if layer.what == "base" or layer.digest in seen:
            continue
        seen.add(layer.digest)
        tree = work / f"layer-{compression}-{len(seen)}"
        tree.mkdir()
        blob = layout / "blobs" / "sha256" / layer.digest.removeprefix("sha256:")
        subprocess.run(["tar", flag, "-xf", str(blob), "-C", str(tree), "--same-owner"], check=True)
        paths = list(snapshot(tree))
        scratch = work / f"layout-{compression}-{len(seen)}"
        start(scratch)
        floor_file = work / f"floor-{compression}-{len(seen)}.tar.{compression}"
        floor_command = f"tar -cf - -C {tree} --sort=name . | {tool} > {floor_file}"
        ours = floor = float("inf")
        written = None
        for _ in range(repeat):
            started = time.perf_counter()
            written = write_layer(tree, paths, EPOCH, scratch, layer.what, (), compression)
            ours = min(ours, time.perf_counter() - started)
            started = time.perf_counter()
            subprocess.run(floor_command, shell=True, check=True)
            floor = min(floor, time.perf_counter() - started)
        assert written is not None
        print(
            f"| {layer.what} | {written.unpacked_size / MIB:.1f} | {ours:.2f} | {floor:.2f} "
            f"| {ours / floor:.2f} | {written.size / MIB:.2f} "
            f"| {floor_file.stat().st_size / MIB:.2f} |"
        )


def example_repo(work: Path, scale: float) -> Path:
    artifacts = generate_example(work / "artifacts", scale)
    build_example(artifacts, work / "packages", formats=(DEB,))
    publish(work / "packages", work / "repo", "stable", 1_700_000_000)
    return work / "repo"


def therock_repo(work: Path, scale: float) -> Path:
    load_generator().generate(work / "artifacts", THEROCK, THEROCK_TARGETS, scale, seed=2026)
    options = ReleaseOptions("8.2.0", build=BuildOptions(formats=(DEB,), jobs=2))
    build_release(THEROCK, work / "artifacts", work / "packages", options)
    publish(work / "packages", work / "repo", "stable", 1_700_000_000)
    return work / "repo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=float, default=0.2, help="the example's file sizes")
    parser.add_argument("--therock-scale", type=float, default=1.0, help="TheRock's file sizes")
    parser.add_argument("--only", choices=("example", "therock"))
    parser.add_argument("--compression", choices=COMPRESSIONS, help="[default: each in turn]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        base = write_base(stand_in_root(DEB, where / "root", where / "si"), where / "base")
        releases: list[tuple[str, Callable[[Path], Path], list[str]]] = []
        if args.only != "therock":
            releases.append(("example release",
                             lambda w: example_repo(w, args.scale), EXAMPLE_TARGETS))  # fmt: skip
        if args.only != "example":
            if THEROCK.is_file():
                releases.append(("TheRock's config",
                                 lambda w: therock_repo(w, args.therock_scale),
                                 THEROCK_TARGETS))  # fmt: skip
            else:
                print(f"TheRock's config: skipped: {THEROCK} is absent", file=sys.stderr)
        for name, make, targets in releases:
            work = where / name.split()[0].lower().strip("'s")
            work.mkdir()
            repo = make(work)
            for compression in [args.compression] if args.compression else COMPRESSIONS:
                one, every = arches_table(name, repo, base, work, targets, args.repeat,
                                          compression)  # fmt: skip
                sizes_table(f"{name}, {compression}", one, every)
                compression_table(name, every, work, args.repeat, compression)


if __name__ == "__main__":
    main()
