"""Which AMD GPUs this machine has, read from the kernel driver's topology (spec/wheels.md rule 7).

The amdgpu driver (KFD) describes every agent in
``/sys/class/kfd/kfd/topology/nodes/<N>/properties``: one ``name value`` line per
property, values decimal. CPU nodes have ``simd_count 0``; a GPU node's
``gfx_target_version`` is ``major * 10000 + minor * 100 + stepping`` (90402 is
gfx942, 90010 gfx90a), which :func:`gfxpack.amdgpu.processor_of` maps back.

The target id's features: ``sramecc+`` when the node's ``capability`` has
HSA_CAP_SRAM_EDCSUPPORTED (0x04000000; the kernel sets it when the GPU's SRAM ECC is
on). xnack is not in the properties: it is a per-process mode (HSA_XNACK, the
amdgpu.noretry parameter), so the target id leaves it open, which every xnack
variant's code matches. Device packages and wheels are per processor anyway.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from gfxpack.amdgpu import TargetId, processor_of, sort_targets
from gfxpack.errors import GfxpackError
from gfxpack.regular_files import open_regular, printable

NODES = Path("sys/class/kfd/kfd/topology/nodes")
HSA_CAP_SRAM_EDCSUPPORTED = 0x04000000
AMD_VENDOR_ID = 4098  # PCI vendor 0x1002
# A properties file is about 40 short lines; anything far longer is not one.
MAX_PROPERTIES_SIZE = 64 << 10
_LINE = re.compile(r"^([a-z_][a-z0-9_]*) (-?[0-9]+)$")


class DetectError(GfxpackError):
    """A topology that cannot be read, or no AMD GPU in it."""


@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU node of the topology."""

    node: int
    gfx_target_version: int
    processor: str | None  # None: a number no processor gfxpack knows has
    target_id: str | None
    device_id: int | None

    def as_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "gfx_target_version": self.gfx_target_version,
            "processor": self.processor,
            "target_id": self.target_id,
            "device_id": self.device_id,
        }


def read_properties(path: Path) -> dict[str, int]:
    """The ``name value`` lines of one properties file; DetectError naming the file
    and line when it is not one (sysfs links are followed: /sys/class is links)."""
    try:
        fd = open_regular(path)
        with os.fdopen(fd, "rb") as file:
            data = file.read(MAX_PROPERTIES_SIZE + 1)
    except OSError as e:
        raise DetectError(f"{printable(str(path))}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_PROPERTIES_SIZE:
        raise DetectError(
            f"{printable(str(path))}: longer than {MAX_PROPERTIES_SIZE} bytes, "
            "expected a KFD node's properties"
        )
    properties: dict[str, int] = {}
    for number, line in enumerate(data.decode("ascii", "replace").splitlines(), 1):
        match = _LINE.match(line.strip())
        if match is None:
            if line.strip():
                raise DetectError(
                    f"{printable(str(path))}:{number}: {printable(line[:80])!r} is not a "
                    "'name number' line of a KFD node's properties"
                )
            continue
        properties[match[1]] = int(match[2])
    return properties


def detect(root: Path = Path("/")) -> list[Gpu]:
    """Every GPU node under ``root``'s KFD topology, by node number; DetectError
    "no AMD GPU found" when there is none (no topology, or CPU nodes only)."""
    nodes = root / NODES
    try:
        names = [name for name in os.listdir(nodes) if name.isdigit()]
    except FileNotFoundError:
        names = []
    except OSError as e:
        raise DetectError(f"{printable(str(nodes))}: cannot read: {e.strerror or e}") from None
    gpus = []
    for name in sorted(names, key=int):
        path = nodes / name / "properties"
        if not os.path.lexists(path):
            continue  # a node being added or removed (hot plug)
        properties = read_properties(path)
        vendor = properties.get("vendor_id", AMD_VENDOR_ID)
        if properties.get("simd_count", 0) == 0 or vendor != AMD_VENDOR_ID:
            continue  # a CPU node
        version = properties.get("gfx_target_version", 0)
        processor = processor_of(version)
        target = None
        if processor is not None:
            sramecc = properties.get("capability", 0) & HSA_CAP_SRAM_EDCSUPPORTED
            target = str(TargetId(processor, (("sramecc", "+"),) if sramecc else ()))
        gpus.append(Gpu(int(name), version, processor, target, properties.get("device_id")))
    if not gpus:
        raise DetectError(f"no AMD GPU found (no GPU node in {printable(str(nodes))})")
    return gpus


def processors(gpus: list[Gpu]) -> list[str]:
    """The distinct processors of ``gpus``, in processor order."""
    return sort_targets({gpu.processor for gpu in gpus if gpu.processor})
