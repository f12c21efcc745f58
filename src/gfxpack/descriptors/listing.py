"""What ``gfxpack descriptors list-engines`` reports of each loaded engine, as JSON values.

The text output is drawn from the same values, so both always agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gfxpack.descriptors.loader import visible_to
from gfxpack.descriptors.resolve import DescriptorSet, completed_metadata, engine_hex


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
                        "source": kernel.source.kind,
                    }
                    for kernel in kernels
                ],
            }
            for pack, kernels in visible_to(candidate, device)
        ],
    }


def engines_json(sets: Iterable[DescriptorSet], device: str | None) -> list[dict[str, Any]]:
    """Every engine, by UUID."""
    return [engine_json(s, device) for s in sorted(sets, key=lambda s: s.engine.id)]
