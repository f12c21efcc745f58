"""gfxpack probe: would each library of an installed root find its device code and
kernel data for a device, by its runtime's own search rule?

:func:`probe_root` lists the root once (:mod:`~gfxpack.probe.tree`: no symlink
followed out of it), runs every family's check of :data:`~gfxpack.probe.rules.CHECKS`
for each device and returns a :class:`~gfxpack.probe.model.ProbeReport`: one
finding per library and device. A root where no family finds a library is an
error ("nothing probed"), never a pass.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from gfxpack.amdgpu import TargetId, processor_problem
from gfxpack.probe.model import Finding, ProbeError, ProbeReport, Rule, Status
from gfxpack.probe.rules import CHECKS, RULES
from gfxpack.probe.tree import InstalledTree
from gfxpack.regular_files import printable

__all__ = [
    "RULES",
    "Finding",
    "ProbeError",
    "ProbeReport",
    "Rule",
    "Status",
    "check_device",
    "probe_root",
]


def check_device(device: str) -> str:
    """The processor of the target id ``device``; ProbeError naming what is expected."""
    problem = processor_problem(device, features=True)
    if problem:
        raise ProbeError(f"--device {problem}")
    return TargetId.parse(device).processor


def probe_root(
    root: str | os.PathLike[str],
    devices: Sequence[str],
    environ: Mapping[str, str] | None = None,
) -> ProbeReport:
    """Every library of ``root`` checked for every device (target ids), in family
    order, then library order. ``environ`` is the runtime's (ROCM_KPACK_PATH...)."""
    environ = os.environ if environ is None else environ
    if not devices:
        raise ProbeError("no device to probe for: give --device")
    processors = {device: check_device(device) for device in dict.fromkeys(devices)}
    tree = InstalledTree(Path(root))
    report = ProbeReport(printable(os.fspath(root)), list(processors))
    for check in CHECKS.values():
        for device, processor in processors.items():
            report.findings.extend(check(tree, device, processor, environ))
    if not report.findings:
        raise ProbeError(
            f"{report.root}: nothing probed: no library of any family here "
            f"({', '.join(rule.title for rule in RULES.values())})"
        )
    return report
