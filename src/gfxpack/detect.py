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
from gfxpack.regular_files import UnreadableFile, open_regular, printable, read_capped
from gfxpack.safe_tree import Tree, TreeError

NODES = Path("sys/class/kfd/kfd/topology/nodes")
HSA_CAP_SRAM_EDCSUPPORTED = 0x04000000
AMD_VENDOR_ID = 4098  # PCI vendor 0x1002
# A properties file is about 40 short lines; anything far longer is not one.
MAX_PROPERTIES_SIZE = 64 << 10
# The kernel prints every property as a u32, u64 or int (kfd_topology.c): 20 digits
# at most, below 2**64. ASCII digits only: Python's int() also takes '١' and refuses
# numbers past 4,300 digits with a ValueError.
MAX_PROPERTY = 2**64 - 1
_LINE = re.compile(rb"([a-z_][a-z0-9_]{0,63}) (-?[0-9]{1,20})")
# Node ids as the kernel names the directories (%d): no sign, no leading zero.
_NODE = re.compile(r"0|[1-9][0-9]{0,8}")
EXPECTED_LINE = (
    "expected a 'name number' line of a KFD node's properties (a lowercase name, a "
    "space, a decimal number of at most 20 digits, below 2**64)"
)


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


def read_properties(path: Path, root: Path | None = None) -> dict[str, int]:
    """The ``name value`` lines of one properties file; DetectError naming the file
    and line when it is not one. Its content is never quoted: a file that does not
    parse may be anything (a link to /proc/self/environ holds the environment).

    ``root``: the tree the file must stay in; the links on the way are followed (in
    sysfs /sys/class is links) only to a place inside it."""
    fd = _open_inside(root, path) if root is not None else _open(path)
    try:
        data = read_capped(fd, path, MAX_PROPERTIES_SIZE, "KFD node's properties file")
    except UnreadableFile as e:
        raise DetectError(str(e)) from None
    properties: dict[str, int] = {}
    # Split at newlines only: splitlines() also splits at \x1c or \x85, which would
    # number the lines differently from an editor.
    for number, line in enumerate(data.split(b"\n"), 1):
        line = line.strip()
        if not line:
            continue
        match = _LINE.fullmatch(line)
        if match is None or abs(int(match[2])) > MAX_PROPERTY:
            raise DetectError(f"{printable(str(path))}:{number}: {EXPECTED_LINE}")
        properties[match[1].decode("ascii")] = int(match[2])
    return properties


def _open(path: Path) -> int:
    try:
        return open_regular(path)
    except OSError as e:
        raise DetectError(f"{printable(str(path))}: cannot read: {e.strerror or e}") from None


def _inside(root: Path, path: Path) -> tuple[Path, tuple[str, ...]]:
    """``root`` and ``path`` with their links resolved, and the parts of ``path``
    below ``root``; DetectError when the links lead out of ``root``."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real != real_root and real_root not in real.parents:
        raise DetectError(
            f"{printable(str(path))}: leads out of {printable(str(root))} (a symlink to "
            f"{printable(str(real))}); expected a KFD topology inside the tree"
        )
    return real_root, real.relative_to(real_root).parts


def _open_inside(root: Path, path: Path) -> int:
    """A descriptor of the regular file ``path``, whose links resolve inside ``root``.
    It is opened through a Tree (no link followed), so a link swapped in after the
    check is refused, not followed out."""
    real_root, parts = _inside(root, path)
    try:
        with Tree(real_root, shown=root) as tree:
            return tree.open_file(parts)
    except TreeError as e:
        raise DetectError(str(e)) from None


def _node_names(root: Path, nodes: Path) -> list[str]:
    """The node directories of the topology ``nodes``, by number; none when it does not
    exist. DetectError for any other name: the kernel names them by number alone."""
    if not os.path.lexists(nodes):
        return []
    real_root, parts = _inside(root, nodes)
    try:
        with Tree(real_root, shown=root) as tree:
            names = tree.names(parts)
    except TreeError as e:
        raise DetectError(str(e)) from None
    for name in names:
        if not _NODE.fullmatch(name):
            raise DetectError(
                f"{printable(str(nodes / name))}: expected a node directory named by "
                "its number in ASCII digits (0, 1, 2 ...)"
            )
    return sorted(names, key=int)


def detect(root: Path = Path("/")) -> list[Gpu]:
    """Every GPU node under ``root``'s KFD topology, by node number; DetectError
    "no AMD GPU found" when there is none (no topology, or CPU nodes only)."""
    nodes = root / NODES
    gpus = []
    for name in _node_names(root, nodes):
        path = nodes / name / "properties"
        if not os.path.lexists(path):
            continue  # a node being added or removed (hot plug)
        properties = read_properties(path, root)
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
