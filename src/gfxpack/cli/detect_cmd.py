"""gfxpack detect: which AMD GPUs this machine has, and what to install for them."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from gfxpack.cli.common import reports_errors


@click.command("detect")
@click.option(
    "--sysfs",
    "root",
    default="/",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The root whose sys/class/kfd/kfd/topology/nodes/*/properties is read: a copy "
    "of another machine's tree, for example. Links in it are followed only to places "
    "inside it.",
)
@click.option(
    "--package",
    metavar="NAME",
    help="The Python distribution whose device wheels the pip line installs: one gfxpack "
    "split, such as jax-rocm7-pjrt. Without it there is no pip line.",
)
@click.option(
    "--index-url",
    metavar="URL",
    help="The package index the pip line installs from: the simple/ URL of the site "
    "'gfxpack index' wrote, such as https://example.com/simple. Default: pip's own.",
)
@click.option(
    "--rocm-version",
    default="8.2",
    show_default=True,
    help="The ROCm release whose apt and dnf packages are named (amdrocm-core8.2-gfx942).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the GPUs and commands as JSON.")
@reports_errors
def detect_command(
    root: Path, package: str | None, index_url: str | None, rocm_version: str, as_json: bool
) -> None:
    """Name the AMD GPUs of this machine and print the commands that install for them.

    Reads gfx_target_version of every GPU node of the kernel driver's topology
    (CPU nodes have no SIMDs and are skipped) and prints each GPU's processor and
    target id, then the pip, apt and dnf commands that install the device code of
    those processors only, ready to paste: the pip line names every processor's
    extra in one requirement ('NAME[device-gfx942,device-gfx1100]'). No AMD GPU:
    "no AMD GPU found", exit status 1.

    \b
    Example:
      gfxpack detect --package jax-rocm7-pjrt --index-url https://example.com/simple
    """
    from packaging.utils import InvalidName as InvalidProjectName
    from packaging.utils import canonicalize_name

    from gfxpack.detect import DetectError, detect, processors
    from gfxpack.formats import DEB, RPM
    from gfxpack.plan.naming import InvalidName, Naming, version_xy

    try:
        if package is not None:
            canonicalize_name(package, validate=True)
    except InvalidProjectName:
        raise DetectError(
            f"--package {package!r}: expected a Python distribution name, such as jax-rocm7-pjrt"
        ) from None
    if index_url is not None:
        if package is None:
            raise DetectError("--index-url is where the pip line installs from: give --package")
        _check_index_url(index_url)
    try:
        naming = Naming(version_xy(rocm_version))
    except InvalidName as e:
        raise DetectError(str(e)) from None
    gpus = detect(root)
    archs = processors(gpus)
    commands: dict[str, str | None] = {}
    if archs:
        apt = " ".join(naming.device("amdrocm-core", arch, DEB) for arch in archs)
        dnf = " ".join(naming.device("amdrocm-core", arch, RPM) for arch in archs)
        commands = {
            "pip": _pip_line(package, index_url, archs),
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
            click.echo(f"  {client}:  {line or NO_PIP_LINE}")
    if not archs:
        click.echo("error: no AMD GPU gfxpack knows found", err=True)
        sys.exit(1)


NO_PIP_LINE = "give --package NAME (the split Python distribution) for this line"


def _pip_line(package: str | None, index_url: str | None, archs: list[str]) -> str | None:
    """pip install of ``package`` with the extras of ``archs``, in one requirement (pip
    would read two as one distribution asked for twice; one is what a user writes)."""
    if package is None:
        return None
    extras = ",".join(f"device-{arch}" for arch in archs)
    index = f"--index-url {shlex.quote(index_url)} " if index_url else ""
    return f"pip install {index}{shlex.quote(f'{package}[{extras}]')}"


def _check_index_url(url: str) -> None:
    """An http(s) URL with a host, or a file URL: what pip takes as --index-url."""
    from urllib.parse import urlsplit

    from gfxpack.detect import DetectError

    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    printable = url.isprintable() and not any(c.isspace() for c in url)
    if (
        parts is None
        or not printable
        or not ((parts.scheme in ("http", "https") and parts.netloc) or parts.scheme == "file")
    ):
        raise DetectError(
            f"--index-url {url!r}: expected the http(s) or file URL of a package index, "
            "such as https://example.com/simple"
        )
