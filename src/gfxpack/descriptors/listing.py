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


def engine_json(candidate: DescriptorSet, device: str | None) -> dict[str, Any]:
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
                        **_source_json(kernel),
                    }
                    for kernel in kernels
                ],
            }
            for pack, kernels in visible_to(candidate, device)
        ],
        "dropped_packs": _dropped_for(candidate, device),
    }


def _source_json(kernel: KernelDescriptor) -> dict[str, Any]:
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


def _dropped_for(candidate: DescriptorSet, device: str | None) -> list[dict[str, Any]]:
    """Packs a device does not see because they are built for other arches only."""
    if not device:
        return []
    base = device_base(device)
    return [
        {"name": pack.descriptor.name, "id": pack.descriptor.id, "arch": list(pack.arch)}
        for pack in candidate.packs
        if pack.arch and base not in pack.arch
    ]


def engines_json(sets: Iterable[DescriptorSet], device: str | None) -> list[dict[str, Any]]:
    """Every engine, by UUID."""
    return [engine_json(s, device) for s in sorted(sets, key=lambda s: s.engine.id)]
