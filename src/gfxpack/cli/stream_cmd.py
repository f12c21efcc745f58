"""gfxpack stream: list, prune, promote and remove builds of a release stream's repository."""

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
                "--sign-key",
                metavar="FPR",
                help="gpg key that signs the new indexes (as gfxpack repo --sign-key); "
                "its public key is published beside them.",
            ),
            click.option(
                "--unsigned",
                is_flag=True,
                help="Write unsigned indexes into a repository whose indexes were signed "
                "(without it, that is refused).",
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


def _options(sign_key: str | None) -> Any:
    """The publish options of a stream command: the repository's suite and names, dated
    SOURCE_DATE_EPOCH or now."""
    from gfxpack.repo.options import PublishOptions

    return PublishOptions("", _epoch(), sign_key)


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
    if result["deleted_files"]:
        click.echo(
            f"deleted {len(result['deleted_files'])} pool file(s) no kept index names any more"
        )
    for summary in result["formats"]:
        click.echo(
            f"{summary['format']}: {len(summary['added'])} new, {summary['packages']} in "
            f"{out / format_named(summary['format']).repo_dir}"
        )


@click.group("stream")
def stream_group() -> None:
    """List, prune, promote and remove builds of a release stream's repository.

    A stream's repository (nightly, weekly, rc, stable) holds every retained build
    side by side. Removed packages leave the indexes at once and the pools once no
    kept index generation names them (gfxpack repo --keep-generations), so machines
    that read an earlier index never miss a file.
    """


@stream_group.command("list")
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="Repository root.")
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
@reports_errors
def list_command(repo: str, as_json: bool) -> None:
    """The builds a repository holds, oldest first: version, date published, package
    files, and where a promoted build came from."""
    from gfxpack.repo import stream

    listing = stream.listing(Path(repo))
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    packages = ", ".join(f"{count} {fmt}" for fmt, count in listing["packages"].items())
    signed = f", signed by {listing['signed_by']}" if listing["signed_by"] else ", unsigned"
    click.echo(f"{repo}: suite {listing['suite']}, {packages}{signed}")
    for build in listing["builds"]:
        day = time.strftime("%Y-%m-%d %H:%M", time.gmtime(build["published"]))
        line = f"  {build['version']:<24} {day} UTC  {len(build['files'])} files"
        source = build.get("promoted_from")
        if source:
            came = time.strftime("%Y-%m-%d", time.gmtime(source["published"]))
            line += f"  (promoted from {source['stream']}, published there {came})"
        click.echo(line)
    if listing["unversioned"]:
        click.echo(f"  {len(listing['unversioned'])} files of no build (never pruned)")


@stream_group.command("prune")
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="Repository root.")
@click.option("--retain", required=True, metavar="POLICY", help=_retain_help("What stays"))
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@_common
@reports_errors
def prune_command(
    repo: str, retain: str, dry_run: bool, sign_key: str | None, unsigned: bool, as_json: bool
) -> None:
    """Remove the builds a retention policy no longer keeps, and their pool files."""
    from gfxpack.repo import stream
    from gfxpack.repo.retention import Retention

    policy = Retention.parse(retain)
    out = Path(repo)
    result = stream.prune(
        out, policy, _options(sign_key), dry_run=dry_run, warn=_warn, unsigned=unsigned
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
    sign_key: str | None,
    unsigned: bool,
    as_json: bool,
) -> None:
    """Remove builds (by version) or package files (by name) from a repository."""
    from gfxpack.errors import GfxpackError
    from gfxpack.repo import stream

    if not versions and not packages:
        raise GfxpackError("give --version or --package: what to remove")
    out = Path(repo)
    result = stream.remove(
        out, versions, packages, _options(sign_key), dry_run=dry_run, warn=_warn,
        unsigned=unsigned,
    )  # fmt: skip
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
    sign_key: str | None,
    unsigned: bool,
    as_json: bool,
) -> None:
    """Publish a build of one stream's repository into another's: the same package
    files, new signed indexes, the source stream recorded (gfxpack stream list shows
    it). A new TARGET takes the source's suite and names."""
    from gfxpack.repo import stream
    from gfxpack.repo.retention import Retention

    policy = Retention.parse(retain) if retain is not None else None
    src = Path(source)
    out = Path(target)
    result = stream.promote(
        src,
        out,
        version,
        from_stream or src.resolve().name,
        _options(sign_key),
        policy,
        warn=_warn,
        unsigned=unsigned,
    )
    _print(result, out, sign_key, as_json)
