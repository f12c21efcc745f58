"""How fast descriptor trees load, against the floor of reading and parsing them with json.

Generates trees of 1,000 and 10,000 descriptor files (100 and 1,000 engines of ten
files each: UED, KMD, UHD, UDD, two UMDs, and per-arch shards for gfx942 and
gfx950 of one pack and one standalone kernel). Prints, per size, the full load
(walk, parse, catalog, resolve, validate) against the floor in the same process:
walking the tree and ``json.loads`` of every file. Target: <= 2x at 10,000 files;
time per file flat means linear.

    python bench/descriptor_load.py [--sizes 1000,10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from gfxpack.descriptors import EngineNames, load_validated
from timing import best_of

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.descriptors.helpers import kernel, make_set_documents, uid  # noqa: E402

ARCHES = ("gfx942", "gfx950")


def engine_files(index: int) -> dict[str, dict]:
    """Ten files for one engine: the canonical set with ids and name of its own, its pack
    split into gfx942 and gfx950 shards that each also reference a standalone kernel."""
    tag = f"{index:07x}"
    files = {}
    for name, document in make_set_documents("e").items():
        text = json.dumps(document)
        for role in range(1, 16):
            text = text.replace(uid("e", role), f"{role:x}{tag}-0000-4000-8000-000000000000")
        files[name] = json.loads(text)
    files["e.ued.json"]["name"] = f"bench:Engine{index}"
    pack = files.pop("e.kdp.json")
    shards = {}
    for arch in ARCHES:
        standalone = kernel("e", 12, f"k{index}.{arch}", 512, "HALF", arch=[arch])
        standalone["id"] = f"c{tag}-0000-4000-8000-000000000000"
        shards[f"{arch}/e{index}.kdp.json"] = {
            **pack,
            "arch": [arch],
            "kernelDescriptors": [*pack["kernelDescriptors"], standalone["id"]],
        }
        shards[f"{arch}/k{index}.ukd.json"] = standalone
    return {**{f"generic/e{index}/{n}": d for n, d in files.items()}, **shards}


def make_tree(root: Path, engines: int) -> int:
    count = 0
    for index in range(engines):
        for name, document in engine_files(index).items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(document, indent=2))
            count += 1
    return count


def floor(root: Path) -> int:
    parsed = 0
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            with open(os.path.join(directory, name), "rb") as file:
                json.loads(file.read())
            parsed += 1
    return parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"descriptor load: best of {args.repeat}")
    print(
        f"{'files':>7} {'engines':>8} {'loaded':>7} {'json floor s':>13} {'gfxpack s':>10} "
        f"{'ratio':>6} {'us/file':>8}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="descriptor-bench-") as tmp:
            root = Path(tmp)
            files = make_tree(root, size // 10)
            floor(root)  # warm the page cache
            t_floor = best_of(args.repeat, lambda root=root: floor(root))
            loaded = []

            def load(root=root, loaded=loaded):
                loaded.append(load_validated([root], names=EngineNames()))

            t_load = best_of(args.repeat, load)
            engines = len(loaded[-1].sets)
            ratio = t_load / t_floor
            print(
                f"{files:>7} {size // 10:>8} {engines:>7} {t_floor:>13.3f} {t_load:>10.3f} "
                f"{ratio:>5.2f}x {1e6 * t_load / files:>8.1f}"
                + ("  PASS (<= 2x)" if ratio <= 2 else "  FAIL (> 2x)")
                * (size >= 10000)
            )


if __name__ == "__main__":
    main()
