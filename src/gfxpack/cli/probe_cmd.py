"""gfxpack probe: would each library of an installed root find its device code and
kernel data for a device, by its runtime's own search rule?"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gfxpack.cli.common import reports_errors, terminal_line

AUTO = "auto"


@click.command("probe")
@click.option(
    "--root",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The installed root: / or a throwaway root a package manager installed into.",
)
@click.option(
    "--device",
    "devices",
    multiple=True,
    required=True,
    metavar="TARGET_ID",
    help="The device, a target id such as gfx942 or gfx942:sramecc+:xnack- (repeatable), "
    "or 'auto': this machine's GPUs, read from the kernel driver (see gfxpack detect).",
)
@click.option(
    "--sysfs",
    default="/",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="With --device auto: the root whose KFD topology names the GPUs.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON for scripts: each finding with its rule and the rule's upstream source.",
)
@reports_errors
def probe_command(root: Path, devices: tuple[str, ...], sysfs: Path, as_json: bool) -> None:
    """Check that each library of an installed root finds its GPU code for a device.

    For every library in ROOT, asks whether its runtime would find its device code
    and kernel data for the device, by the family's own search rule: split binaries
    in .kpack archives (the kpack runtime's rules, ROCM_KPACK_PATH and
    ROCM_KPACK_PATH_PREFIX honoured), Tensile libraries of rocBLAS, hipBLASLt and
    hipSPARSELt, MIOpen's kernel databases, rocFFT's kernel caches, AOTriton's
    images and hipDNN providers' descriptors. One line per library and device:

    \b
      found     the file the runtime would use
      missing   what it looks for, and where
      shadowed  another arch's file where this arch's should be, or this
                arch's file where the runtime does not look

    A line resting on a point no upstream source settles says "rule assumed: ...".
    The exit status is 1 on any missing or shadowed line, and when ROOT holds no
    library of any family (nothing probed is no pass).

    \b
    Example, the gate "this install works on gfx942":
      gfxpack try-install --repo REPO --root R amdrocm-core8.2-gfx942
      gfxpack probe --root R --device gfx942
    """
    from gfxpack.probe import RULES, probe_root

    report = probe_root(root, _devices(devices, sysfs))
    if as_json:
        document: dict[str, Any] = {
            "root": report.root,
            "devices": report.devices,
            "ok": report.ok,
            "error": report.error(),
            "findings": [f.as_json(RULES[f.family]) for f in report.findings],
            "rules": {family: rule.as_json() for family, rule in RULES.items()},
        }
        from gfxpack import views

        click.echo(views.dumps(document), nl=False)
    else:
        for finding in report.findings:
            click.echo(terminal_line(finding.line()))
        click.echo(terminal_line(report.summary()))
    error = report.error()
    if error is not None:
        if not as_json:
            click.echo(f"error: {terminal_line(error)}", err=True)
        sys.exit(1)


def _devices(given: tuple[str, ...], sysfs: Path) -> list[str]:
    """The target ids to probe for: as given, 'auto' replaced by this machine's GPUs."""
    found: list[str] = []
    for device in given:
        if device != AUTO:
            found.append(device)
            continue
        from gfxpack.detect import DetectError, detect

        try:
            gpus = detect(sysfs)
        except DetectError as e:
            raise DetectError(f"--device auto: {e}") from None
        known = [gpu.target_id for gpu in gpus if gpu.target_id]
        if not known:
            raise DetectError("--device auto: no GPU here is one gfxpack knows")
        found.extend(known)
    return list(dict.fromkeys(found))
