"""Write the example descriptor tree: two engines, as a hip-kernel-provider installs them.

    examples/descriptors/
      conv_fwd/        gfxpack:ConvFwd: UED, KMD, UHD, UDD, two UMDs, a pack with two inline
                       kernels and one referenced .ukd.json (runtime-compiled sources)
      pointwise/       gfxpack:Pointwise: UED, KMD, UHD, UDD, the matchers its packs share
      gfx942/, gfx950/ per-arch shards, as the descriptor packager emits them: the three
                       pointwise packs (add, mul, sub) narrowed to the arch, each kernel a
                       `kind: kpack` source naming kpack/hip_kernel_provider_<arch>.kpack,
                       which this script writes with gfxpack's kpack writer

Everything is derived from fixed names (uuid5 ids, seeded code objects), so running it
again reproduces the committed tree byte for byte; tests check that. Symbols the
descriptors name are listed in examples/descriptor-symbols.json.

    python examples/generate_descriptors.py [OUT] [--arches gfx942,gfx950]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import uuid
from pathlib import Path

from gfxpack.kpack import write_kpack

HERE = Path(__file__).resolve().parent
NAMESPACE = uuid.UUID("6c1f8e2a-5d3b-4c7e-9a10-2b4d6f8a0c1e")
GROUP = "hip_kernel_provider"
OPERATIONS = ("ADD", "MUL", "SUB")
VARIANTS = ((64, "FLOAT"), (256, "FLOAT"), (64, "HALF"))
SIGNATURE = [
    {"kind": "global_buffer", "size": 8, "offset": 0, "name": "a"},
    {"kind": "global_buffer", "size": 8, "offset": 8, "name": "b"},
    {"kind": "global_buffer", "size": 8, "offset": 16, "name": "out"},
    {"kind": "by_value", "size": 8, "offset": 24, "name": "count"},
]


def uid(name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, name))


def write(path: Path, document: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def code_object(name: str, arch: str) -> bytes:
    """A stand-in AMDGPU code object: an ELF header and seeded bytes."""
    rng = random.Random(f"{name}@{arch}")
    body = bytes(rng.choice(b"\x00\x00\x01\x02\x7f\xbf\xff") for _ in range(4096))
    return b"\x7fELF\x02\x01\x01@" + arch.encode().ljust(8, b"\0") + body


def generic(out: Path) -> None:
    # gfxpack:Pointwise: everything but its packs, which ship per arch.
    base = out / "pointwise"
    write(
        base / "pointwise.ued.json",
        {
            "version": "1.0",
            "id": uid("pointwise.ued"),
            "name": "gfxpack:Pointwise",
            "heuristic": uid("pointwise.uhd"),
            "metadata": uid("pointwise.kmd"),
            "knobs": ["block_size"],
            "sdk_version": "1.0.0",
            "graph_match": {"native": "gfxpack.pointwise.graph_match"},
        },
    )
    write(
        base / "pointwise.kmd.json",
        {
            "version": "1.0",
            "id": uid("pointwise.kmd"),
            "name": "pointwise variant fields",
            "fields": [
                {"name": "block_size", "type": "int", "default_value": 64},
                {"name": "dtype", "type": "string"},
                {"name": "operation", "type": "string"},
            ],
        },
    )
    write(
        base / "pointwise.uhd.json",
        {
            "version": "1.0",
            "id": uid("pointwise.uhd"),
            "name": "pointwise selector",
            "kind": "native",
            "payload": "gfxpack.pointwise.score",
        },
    )
    write(
        base / "pointwise.udd.json",
        {
            "version": "1.0",
            "id": uid("pointwise.udd"),
            "name": "pointwise dispatch",
            "dispatch_symbol": "gfxpack.pointwise.dispatch",
        },
    )
    write(
        base / "kernel_dtype_matches_graph.umd.json",
        {
            "version": "1.0",
            "id": uid("pointwise.umd.dtype"),
            "name": "kernel dtype matches the graph's dtype",
            "scope": "kernel",
            "match_symbol": "gfxpack.pointwise.kernel_match",
        },
    )
    for operation in OPERATIONS:
        write(
            base / f"operation_is_{operation.lower()}.umd.json",
            {
                "version": "1.0",
                "id": uid(f"pointwise.umd.{operation}"),
                "name": f"the node's operation is {operation}",
                "scope": "graph",
                "match_symbol": f"gfxpack.pointwise.{operation.lower()}_match",
            },
        )
    # gfxpack:ConvFwd: runtime-compiled, arch-independent.
    base = out / "conv_fwd"
    write(
        base / "conv_fwd.ued.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.ued"),
            "name": "gfxpack:ConvFwd",
            "heuristic": uid("conv_fwd.uhd"),
            "metadata": uid("conv_fwd.kmd"),
            "knobs": ["block_size"],
            "behavior_notes": ["runtime_compilation"],
        },
    )
    write(
        base / "conv_fwd.kmd.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.kmd"),
            "name": "conv_fwd variant fields",
            "fields": [
                {"name": "block_size", "type": "int", "default_value": 64},
                {"name": "dtype", "type": "string"},
            ],
        },
    )
    write(
        base / "conv_fwd.uhd.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.uhd"),
            "name": "conv_fwd selector",
            "kind": "native",
            "payload": "gfxpack.conv_fwd.score",
        },
    )
    write(
        base / "conv_fwd.udd.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.udd"),
            "name": "conv_fwd dispatch",
            "dispatch_symbol": "gfxpack.conv_fwd.dispatch",
        },
    )
    write(
        base / "single_node_conv_fwd.umd.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.umd.graph"),
            "name": "one conv_fwd node",
            "scope": "graph",
            "match_symbol": "gfxpack.conv_fwd.graph_match",
        },
    )
    write(
        base / "kernel_dtype_matches_graph.umd.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.umd.dtype"),
            "name": "kernel dtype matches the graph's dtype",
            "scope": "kernel",
            "match_symbol": "gfxpack.conv_fwd.kernel_match",
        },
    )
    source = {"kind": "embedded_source", "source_file": "ConvFwd.cpp", "entry_point": "ConvFwd"}
    write(
        base / "conv_fwd.kdp.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.kdp"),
            "name": "gfxpack:conv_fwd",
            "matchers": [uid("conv_fwd.umd.graph"), uid("conv_fwd.umd.dtype")],
            "engine": uid("conv_fwd.ued"),
            "dispatch": uid("conv_fwd.udd"),
            "kernelDescriptors": [
                {
                    "version": "1.0",
                    "id": uid(f"conv_fwd.{dtype}.{block}"),
                    "name": f"conv_fwd.{dtype.lower()}_block{block}",
                    "kernel_source": source,
                    "metadata": {"block_size": block, "dtype": dtype},
                    "priority": 0,
                }
                for block, dtype in ((64, "FLOAT"), (256, "FLOAT"))
            ]
            + [uid("conv_fwd.HALF.64")],
        },
    )
    write(
        base / "conv_fwd_f16_block64.ukd.json",
        {
            "version": "1.0",
            "id": uid("conv_fwd.HALF.64"),
            "name": "conv_fwd.f16_block64",
            "kernel_source": source,
            "metadata": {"block_size": 64, "dtype": "HALF"},
            "priority": 0,
        },
    )


def shard(out: Path, arch: str) -> None:
    """One arch's pointwise packs, pointing at the arch's kpack archive."""
    kernels = []
    packs = []
    for operation in OPERATIONS:
        entries = []
        for block, dtype in VARIANTS:
            name = f"pointwise_{operation.lower()}.{dtype.lower()}_block{block}"
            code = code_object(name, arch)
            kernels.append((name, code))
            entries.append(
                {
                    "version": "1.0",
                    "id": uid(name),
                    "name": name,
                    "kernel_source": {
                        "kind": "kpack",
                        "library": f"../kpack/{GROUP}_{arch}.kpack",
                        "toc_key": name,
                        "symbol": f"Pointwise{operation.title()}",
                        "sha256": hashlib.sha256(code).hexdigest(),
                        "signature": SIGNATURE,
                    },
                    "metadata": {"block_size": block, "dtype": dtype, "operation": operation},
                    "priority": 1 if block == 256 else 0,
                }
            )
        packs.append((operation, entries))
    archive = out / arch / "kpack" / f"{GROUP}_{arch}.kpack"
    archive.parent.mkdir(parents=True, exist_ok=True)
    write_kpack(archive, sorted(kernels), GROUP, arch)
    for operation, entries in packs:
        write(
            out / arch / "pointwise" / f"pointwise_{operation.lower()}.kdp.json",
            {
                "version": "1.0",
                "id": uid(f"pointwise.kdp.{operation}"),
                "name": f"gfxpack:pointwise_{operation.lower()}",
                "matchers": [uid(f"pointwise.umd.{operation}"), uid("pointwise.umd.dtype")],
                "engine": uid("pointwise.ued"),
                "dispatch": uid("pointwise.udd"),
                "arch": [arch],
                "kernelDescriptors": entries,
            },
        )


def symbols() -> dict:
    return {
        "graph_match": [
            "gfxpack.pointwise.graph_match",
            "gfxpack.conv_fwd.graph_match",
            *(f"gfxpack.pointwise.{op.lower()}_match" for op in OPERATIONS),
        ],
        "kernel_match": ["gfxpack.pointwise.kernel_match", "gfxpack.conv_fwd.kernel_match"],
        "dispatch": ["gfxpack.pointwise.dispatch", "gfxpack.conv_fwd.dispatch"],
        "score": ["gfxpack.pointwise.score", "gfxpack.conv_fwd.score"],
    }


def generate(out: Path, arches: list[str], symbols_file: Path | None = None) -> None:
    if out.exists():
        shutil.rmtree(out)
    generic(out)
    for arch in arches:
        shard(out, arch)
    if symbols_file is not None:
        symbols_file.write_text(json.dumps(symbols(), indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=HERE / "descriptors")
    parser.add_argument("--arches", default="gfx942,gfx950")
    parser.add_argument("--symbols", type=Path, default=HERE / "descriptor-symbols.json")
    args = parser.parse_args()
    generate(args.out, args.arches.split(","), args.symbols)


if __name__ == "__main__":
    main()
