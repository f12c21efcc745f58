"""gfxpack detect: which AMD GPUs this machine has, and what to install for them."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from gfxpack.cli.common import reports_errors

PLACEHOLDER = "PACKAGE"


@click.command("detect")
@click.option(
    "--sysfs",
    "root",
    default="/",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The root whose sys/class/kfd/kfd/topology/nodes/*/properties is read: a copy "
    "of another machine's tree, for example.",
)
@click.option(
    "--package",
    default=PLACEHOLDER,
    show_default=True,
    help="The Python distribution whose device wheel pip should add (a wheel gfxpack "
    f"split made, such as jax-rocm7-pjrt); {PLACEHOLDER} stands for yours.",
)
@click.option(
    "--rocm-version",
    default="8.2",
    show_default=True,
    help="The ROCm release whose apt and dnf packages are named (amdrocm-core8.2-gfx942).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the GPUs and commands as JSON.")
@reports_errors
def detect_command(root: Path, package: str, rocm_version: str, as_json: bool) -> None:
    """Name the AMD GPUs of this machine and print the commands that install for them.

    Reads gfx_target_version of every GPU node of the kernel driver's topology
    (CPU nodes have no SIMDs and are skipped) and prints each GPU's processor and
    target id, then the pip, apt and dnf commands that install the device code of
    those processors only. No AMD GPU: "no AMD GPU found", exit status 1.

    \b
    Example:
      gfxpack detect --package jax-rocm7-pjrt
    """
    from packaging.utils import InvalidName as InvalidProjectName
    from packaging.utils import canonicalize_name

    from gfxpack.detect import DetectError, detect, processors
    from gfxpack.formats import DEB, RPM
    from gfxpack.plan.naming import InvalidName, Naming, version_xy

    try:
        canonicalize_name(package, validate=True)
    except InvalidProjectName:
        raise DetectError(
            f"--package {package!r}: expected a Python distribution name, such as jax-rocm7-pjrt"
        ) from None
    try:
        naming = Naming(version_xy(rocm_version))
    except InvalidName as e:
        raise DetectError(str(e)) from None
    gpus = detect(root)
    archs = processors(gpus)
    commands = {}
    if archs:
        wheels = " ".join(shlex.quote(f"{package}[device-{arch}]") for arch in archs)
        apt = " ".join(naming.device("amdrocm-core", arch, DEB) for arch in archs)
        dnf = " ".join(naming.device("amdrocm-core", arch, RPM) for arch in archs)
        commands = {
            "pip": f"pip install {wheels}",
            "apt": f"sudo apt install {apt}",
            "dnf": f"sudo dnf install {dnf}",
        }
    if as_json:
        document = {"gpus": [gpu.as_json() for gpu in gpus], "processors": archs, **commands}
        click.echo(json.dumps(document, indent=2))
    else:
        for gpu in gpus:
            if gpu.processor is None:
                click.echo(
                    f"node {gpu.node}: gfx_target_version {gpu.gfx_target_version} "
                    "is no processor gfxpack knows"
                )
            else:
                click.echo(
                    f"node {gpu.node}: {gpu.processor} (target id {gpu.target_id}, "
                    f"gfx_target_version {gpu.gfx_target_version})"
                )
        for client, line in commands.items():
            click.echo(f"  {client}:  {line}")
    if not archs:
        click.echo("error: no AMD GPU gfxpack knows found", err=True)
        sys.exit(1)
