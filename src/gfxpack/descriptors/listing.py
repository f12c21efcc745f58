"""What ``gfxpack descriptors list-engines`` reports of each loaded engine, as JSON values.

The text output is drawn from the same values, so both always agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gfxpack.descriptors.loader import visible_to
from gfxpack.descriptors.parse import resolved_library
from gfxpack.descriptors.resolve import DescriptorSet, completed_metadata, engine_hex
from gfxpack.descriptors.types import KernelDescriptor, device_base


def engine_as_dict(candidate: DescriptorSet, device: str | None) -> dict[str, Any]:
    """One engine: its ids, and the packs and kernels ``device`` sees (all, without one)."""
    return {
        "name": candidate.name,
        "id": candidate.engine_id,
        "id_hex": engine_hex(candidate.engine_id),
        "uuid": candidate.engine.id,
        "sdk_version": ".".join(map(str, candidate.engine.body.sdk_version)),
        "packs": [
            {
                "name": pack.descriptor.name,
                "id": pack.descriptor.id,
                "arch": list(pack.arch),
                "kernels": [
                    {
                        "name": kernel.name,
                        "id": kernel.id,
                        "arch": list(pack.effective_arch(kernel)),
                        "priority": kernel.priority,
                        "metadata": dict(completed_metadata(kernel, candidate.schema.body)),
                        **_source_as_dict(kernel),
                    }
                    for kernel in kernels
                ],
            }
            for pack, kernels in visible_to(candidate, device)
        ],
        **_not_for(candidate, device),
    }


def _source_as_dict(kernel: KernelDescriptor) -> dict[str, Any]:
    """A kernel's source; a kpack one was verified against its archive while resolving
    (a pack whose archive, toc_key or sha256 fails is dropped before listing)."""
    source = kernel.source
    if source.kind != "kpack":
        return {"source": source.kind}
    return {
        "source": "kpack",
        "library": resolved_library(kernel),
        "toc_key": source.toc_key,
        "symbol": source.symbol,
        "sha256": source.sha256,
        "verified": True,
    }


def _not_for(candidate: DescriptorSet, device: str | None) -> dict[str, list[dict[str, Any]]]:
    """What a device does not load: ``dropped_packs``, packs built for other arches
    only (it gets none of their kernels), and ``other_arch_shards``, the other arches'
    shards of a pack it loads (one pack id, one shard per arch: it gets its own)."""
    if not device:
        return {"dropped_packs": [], "other_arch_shards": []}
    base = device_base(device)
    loaded = {p.descriptor.id for p in candidate.packs if not p.arch or base in p.arch}
    found: dict[str, list[dict[str, Any]]] = {"dropped_packs": [], "other_arch_shards": []}
    for pack in candidate.packs:
        if pack.arch and base not in pack.arch:
            kind = "other_arch_shards" if pack.descriptor.id in loaded else "dropped_packs"
            found[kind].append(
                {"name": pack.descriptor.name, "id": pack.descriptor.id, "arch": list(pack.arch)}
            )
    return found


def engines_as_dicts(sets: Iterable[DescriptorSet], device: str | None) -> list[dict[str, Any]]:
    """Every engine, by UUID."""
    return [engine_as_dict(s, device) for s in sorted(sets, key=lambda s: s.engine.id)]
