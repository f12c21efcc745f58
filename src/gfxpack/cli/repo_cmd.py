"""gfxpack repo: publish a build as an apt and an rpm-md repository."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from gfxpack import repo as repo_module
from gfxpack.cli.common import reports_errors, strict_option
from gfxpack.epoch import source_date_epoch
from gfxpack.formats import FORMATS, format_named


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


@click.command("repo")
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
@click.option(
    "--suite",
    default="stable",
    show_default=True,
    help="apt suite (dists/SUITE): a plain name of letters, digits and ._+-.",
)
@click.option(
    "--sign-key",
    metavar="FPR",
    help="gpg key (fingerprint or user id) that signs the indexes: writes InRelease and "
    "Release.gpg (apt) and repodata/repomd.xml.asc (dnf's repo_gpgcheck). gpg's "
    "GNUPGHOME applies.",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="When another gfxpack repo run is publishing into OUT: wait for it to finish, "
    "or fail at once.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@strict_option
@reports_errors
def repo_command(
    builds: tuple[str, ...],
    out: str,
    suite: str,
    sign_key: str | None,
    wait: bool,
    as_json: bool,
    strict: bool,
) -> None:
    """Publish built packages as an apt and an rpm-md repository.

    Incremental: packages already in OUT stay, so several releases (8.2 and
    8.3) and patch updates (8.2.0, 8.2.1) live side by side; every index is
    regenerated over the whole pool. A published file name with different
    contents is refused. The Release date is SOURCE_DATE_EPOCH, else now.

    Safe to rerun and to run twice at once: every input is checked and read
    before anything is published (a file index.json does not vouch for, a
    symlink, a broken package or a bad name is refused), runs on one OUT take
    turns, a published file whose bytes changed is refused rather than
    re-signed, and what an interrupted run left is cleaned up by the next.
    A directory of .deb/.rpm files without index.json is published with a
    warning.
    """
    epoch = source_date_epoch(os.environ, int(time.time()))
    out_path = Path(out)
    results = repo_module.publish(
        [Path(build) for build in builds],
        out_path,
        suite,
        epoch,
        sign_key,
        warn=_warn,
        wait=wait,
        strict=strict,
    )
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
