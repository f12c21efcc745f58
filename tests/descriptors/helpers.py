"""Descriptor trees for tests: the canonical seven-file set and ways to bend it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from gfxpack.descriptors import EngineNames, Level, SymbolRegistry, load_validated

KMD, UHD, UED, UMD_GRAPH, UMD_KERNEL, UDD, KDP, K1, K2, K3, UKD = range(1, 12)


def uid(tag: str, role: int) -> str:
    """``<tag><role>000000-0000-4000-8000-000000000000`` (spec section 14)."""
    return f"{tag}{role:x}000000-0000-4000-8000-000000000000"


def kernel(tag: str, role: int, name: str, block: int, dtype: str, **extra) -> dict:
    document = {
        "version": "1.0",
        "id": uid(tag, role),
        "name": name,
        "kernel_source": {"kind": "embedded_source", "source_file": "K.cpp", "entry_point": "K"},
        "metadata": {"block_size": block, "dtype": dtype},
        "priority": 0,
    }
    document.update(extra)
    return document


def make_set_documents(tag: str = "a", engine: str | None = None) -> dict[str, dict]:
    """The canonical set: KMD (block_size int default 64; dtype string), a native UHD, a UED
    (knobs [block_size], behavior_notes [runtime_compilation]), graph and kernel UMDs, a UDD
    and a KDP with three inline kernels (64/FLOAT, 256/FLOAT, 64/HALF)."""
    engine = engine or f"test:Engine{tag.upper()}"
    return {
        f"{tag}.kmd.json": {
            "version": "1.0",
            "id": uid(tag, KMD),
            "name": f"{tag} fields",
            "fields": [
                {"name": "block_size", "type": "int", "default_value": 64},
                {"name": "dtype", "type": "string"},
            ],
        },
        f"{tag}.uhd.json": {
            "version": "1.0",
            "id": uid(tag, UHD),
            "name": f"{tag} selector",
            "kind": "native",
            "payload": f"{tag}.score",
        },
        f"{tag}.ued.json": {
            "version": "1.0",
            "id": uid(tag, UED),
            "name": engine,
            "heuristic": uid(tag, UHD),
            "metadata": uid(tag, KMD),
            "knobs": ["block_size"],
            "behavior_notes": ["runtime_compilation"],
        },
        f"{tag}_graph.umd.json": {
            "version": "1.0",
            "id": uid(tag, UMD_GRAPH),
            "name": f"{tag} graph",
            "scope": "graph",
            "match_symbol": f"{tag}.graph",
        },
        f"{tag}_kernel.umd.json": {
            "version": "1.0",
            "id": uid(tag, UMD_KERNEL),
            "name": f"{tag} kernel",
            "scope": "kernel",
            "match_symbol": f"{tag}.kernel",
        },
        f"{tag}.udd.json": {
            "version": "1.0",
            "id": uid(tag, UDD),
            "name": f"{tag} dispatch",
            "dispatch_symbol": f"{tag}.dispatch",
        },
        f"{tag}.kdp.json": {
            "version": "1.0",
            "id": uid(tag, KDP),
            "name": f"{tag}:pack",
            "matchers": [uid(tag, UMD_GRAPH), uid(tag, UMD_KERNEL)],
            "engine": uid(tag, UED),
            "dispatch": uid(tag, UDD),
            "kernelDescriptors": [
                kernel(tag, K1, f"{tag}.f32_64", 64, "FLOAT"),
                kernel(tag, K2, f"{tag}.f32_256", 256, "FLOAT"),
                kernel(tag, K3, f"{tag}.f16_64", 64, "HALF"),
            ],
        },
    }


def symbols_for(*tags: str) -> SymbolRegistry:
    return SymbolRegistry(
        {
            "graph_match": [f"{t}.graph" for t in tags],
            "kernel_match": [f"{t}.kernel" for t in tags],
            "dispatch": [f"{t}.dispatch" for t in tags],
            "score": [f"{t}.score" for t in tags],
        }
    )


def write_tree(root: Path, documents: dict[str, object]) -> Path:
    """Write ``{relative path: document or raw text}`` under root."""
    for name, document in documents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = document if isinstance(document, str) else json.dumps(document, indent=2)
        path.write_text(text, encoding="utf-8")
    return root


def edited(documents: dict, file: str, /, **changes) -> dict:
    """A deep copy with top-level keys of one document changed (None deletes)."""
    result = copy.deepcopy(documents)
    for key, value in changes.items():
        if value is None:
            result[file].pop(key, None)
        else:
            result[file][key] = value
    return result


def load(*roots: Path, registry=None, disabled=None, names=None):
    return load_validated(list(roots), registry, disabled, names or EngineNames())


def summary(result) -> dict[str, dict[str, list[str]]]:
    """engine name -> pack name -> kernel names, for what survived."""
    return {
        s.name: {p.descriptor.name: [k.name for k in p.kernels] for p in s.packs}
        for s in result.sets
    }


def found(result, code: str) -> list[str]:
    """Messages of every diagnostic with this code."""
    return [d.message for d in result.diagnostics.items if d.code == code]


def problems(result, at_least: Level = Level.WARN) -> list[str]:
    return [d.code for d in result.diagnostics.items if d.severity >= at_least]


CANONICAL = {"test:EngineA": {"a:pack": ["a.f32_64", "a.f32_256", "a.f16_64"]}}
