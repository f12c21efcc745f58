"""gfxpack repo: publish a build as an apt and an rpm-md repository."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from gfxpack import repo as repo_module
from gfxpack.cli import cli
from gfxpack.cli.common import reports_errors
from gfxpack.formats import FORMATS, format_named


@cli.command("repo")
@click.option(
    "--in",
    "builds",
    required=True,
    multiple=True,
    type=click.Path(file_okay=False),
    help="A gfxpack build --out directory (repeatable). Its index.json says which files.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="The repository root: OUT/apt and OUT/rpm are created or extended.",
)
@click.option("--suite", default="stable", show_default=True, help="apt suite (dists/SUITE).")
@click.option(
    "--sign-key",
    metavar="FPR",
    help="gpg key (fingerprint or user id) that signs Release: writes InRelease and "
    "Release.gpg. gpg's GNUPGHOME applies.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@reports_errors
def repo_command(
    builds: tuple[str, ...], out: str, suite: str, sign_key: str | None, as_json: bool
) -> None:
    """Publish built packages as an apt and an rpm-md repository.

    Incremental: packages already in OUT stay, so several releases (8.2 and
    8.3) and patch updates (8.2.0, 8.2.1) live side by side; every index is
    regenerated over the whole pool. A published file name with different
    contents is refused. The Release date is SOURCE_DATE_EPOCH, else now.
    """
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())
    out_path = Path(out)
    results = []
    for build in builds:
        results += repo_module.publish(Path(build), out_path, suite, epoch, sign_key)
    if as_json:
        click.echo(json.dumps(results, indent=2))
        return
    for result in results:
        where = out_path / format_named(result["format"]).repo_dir
        click.echo(
            f"{result['format']}: {len(result['added'])} new, {result['packages']} in {where}"
            + (
                f" (suite {result['suite']}{', signed' if result['signed'] else ''})"
                if "suite" in result
                else ""
            )
        )
    published = {r["format"] for r in results}
    for fmt in FORMATS:
        if fmt.name in published:
            root = (out_path / fmt.repo_dir).resolve()
            click.echo("  " + fmt.source_line(root, suite, bool(sign_key)))
