"""gfxpack init: a starter package.json for an artifacts tree or a split tree."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from gfxpack.cli.common import reports_errors


@click.command("init")
@click.option(
    "--artifacts",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Artifacts directory (<name>_<component>_<target>/ with artifact_manifest.txt), "
    "such as gfxpack split writes.",
)
@click.option(
    "--out",
    default="package.json",
    show_default=True,
    type=click.Path(path_type=Path),
    help="The package.json to write.",
)
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@reports_errors
def init_command(artifacts: Path, out: Path, force: bool) -> None:
    """Write a starter package.json for an artifacts tree (or a gfxpack split output).

    One package per artifact name (amdrocm-NAME), with every component and
    manifest line the tree has for it, and Gfxarch "True" when per-arch
    directories exist; gfxpack plan and build take it as written. What only you
    can say (descriptions, maintainer, license, dependencies) is printed as
    notes to review. The keys are documented in docs/reference/package-json.md.

    \b
    Example:
      gfxpack init --artifacts build/artifacts --out package.json
    """
    from gfxpack import starter as starter_module
    from gfxpack.plan import Mode
    from gfxpack.text_fields import escaped

    starter = starter_module.propose(artifacts)
    starter_module.write(starter, out, force)
    targets = ", ".join(starter.targets) or "none"
    click.echo(
        f"wrote {escaped(str(out))}: {_count(len(starter.packages), 'package')} from "
        f"{_count(starter.directories, 'artifact directory', 'artifact directories')} "
        f"({starter.mode} mode, GPU targets: {targets})"
    )
    click.echo("review before building:")
    for note in starter.notes:
        click.echo(f"  - {note}")
    config, tree = shlex.quote(str(out)), shlex.quote(str(artifacts))
    mode = "" if starter.mode is Mode.KPACK else " --mode single-arch"
    click.echo("then:")
    click.echo(
        f"  gfxpack plan --config {config} --target {','.join(starter.targets) or 'TARGETS'}"
        f"{mode} --rocm-version VERSION"
    )
    click.echo(
        f"  gfxpack build --config {config} --artifacts {tree} --out PACKAGES "
        "--rocm-version VERSION"
    )


def _count(number: int, one: str, many: str = "") -> str:
    return f"{number} {one if number == 1 else many or one + 's'}"
