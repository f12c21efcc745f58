"""gfxpack stream: prune, promote and remove builds of a release stream's repository."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from gfxpack.cli.common import reports_errors


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _common(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options every stream command shares."""
    for option in reversed(
        [
            click.option(
                "--suite",
                default="stable",
                show_default=True,
                help="apt suite (dists/SUITE) whose indexes are rewritten.",
            ),
            click.option(
                "--sign-key",
                metavar="FPR",
                help="gpg key that signs the new indexes (as gfxpack repo --sign-key); "
                "its public key is published beside them.",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
        ]
    ):
        command = option(command)
    return command


def _retain_help(what: str) -> str:
    return (
        f"{what}: 30d, 52w, 2y (age), 120builds (count), all, or a stream's name (dev=30d, "
        "nightly=120builds, weekly=52w, rc=2y, stable=all). The newest build always stays."
    )


def _epoch() -> int:
    from gfxpack.epoch import source_date_epoch

    return source_date_epoch(os.environ, int(time.time()))


def _print(result: dict[str, Any], out: Path, sign_key: str | None, as_json: bool) -> None:
    from gfxpack.formats import format_named
    from gfxpack.repo.trust import export_public_key, publish_key

    if sign_key and result["formats"]:
        published = [format_named(r["format"]) for r in result["formats"]]
        publish_key(out, export_public_key(sign_key, None), published)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    for version in result["removed_versions"]:
        click.echo(f"removed build {version}")
    for name in result["removed_files"]:
        click.echo(f"  {name}")
    for summary in result["formats"]:
        click.echo(
            f"{summary['format']}: {len(summary['added'])} new, {summary['packages']} in "
            f"{out / format_named(summary['format']).repo_dir}"
        )


@click.group("stream")
def stream_group() -> None:
    """Prune, promote and remove builds of a release stream's repository."""


@stream_group.command("prune")
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="Repository root.")
@click.option("--retain", required=True, metavar="POLICY", help=_retain_help("What stays"))
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@_common
@reports_errors
def prune_command(
    repo: str, retain: str, dry_run: bool, suite: str, sign_key: str | None, as_json: bool
) -> None:
    """Remove the builds a retention policy no longer keeps, and their pool files."""
    from gfxpack.repo import stream

    policy = stream.Retention.parse(retain)
    out = Path(repo)
    result = stream.prune(
        out, policy, suite, _epoch(), dry_run=dry_run, sign_key=sign_key, warn=_warn
    )
    _print(result, out, sign_key, as_json)


@stream_group.command("remove")
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="Repository root.")
@click.option("--version", "versions", multiple=True, help="A build's version (repeatable).")
@click.option(
    "--package", "packages", multiple=True, help="A published package file name (repeatable)."
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@_common
@reports_errors
def remove_command(
    repo: str,
    versions: tuple[str, ...],
    packages: tuple[str, ...],
    dry_run: bool,
    suite: str,
    sign_key: str | None,
    as_json: bool,
) -> None:
    """Remove builds (by version) or package files (by name) from a repository."""
    from gfxpack.errors import GfxpackError
    from gfxpack.repo import stream

    if not versions and not packages:
        raise GfxpackError("give --version or --package: what to remove")
    out = Path(repo)
    result = stream.remove(
        out, versions, packages, suite, _epoch(), dry_run=dry_run, sign_key=sign_key, warn=_warn
    )
    _print(result, out, sign_key, as_json)


@stream_group.command("promote")
@click.option(
    "--from", "source", required=True, type=click.Path(file_okay=False), help="Source repository."
)
@click.option("--to", "target", required=True, type=click.Path(file_okay=False), help="Target.")
@click.option("--version", required=True, help="The build's version (as gfxpack stream lists).")
@click.option(
    "--from-stream",
    metavar="NAME",
    help="The source stream's name, recorded in the target. Default: the source's directory name.",
)
@click.option("--retain", metavar="POLICY", help=_retain_help("Also prune the target"))
@_common
@reports_errors
def promote_command(
    source: str,
    target: str,
    version: str,
    from_stream: str | None,
    retain: str | None,
    suite: str,
    sign_key: str | None,
    as_json: bool,
) -> None:
    """Publish a build of one stream's repository into another's: the same package
    files, new signed indexes, the source recorded in TARGET/.gfxpack-builds.json."""
    from gfxpack.repo import stream

    policy = stream.Retention.parse(retain) if retain is not None else None
    src = Path(source)
    out = Path(target)
    result = stream.promote(
        src,
        out,
        version,
        from_stream or src.resolve().name,
        suite,
        _epoch(),
        policy,
        sign_key=sign_key,
        warn=_warn,
    )
    _print(result, out, sign_key, as_json)
