"""gfxpack stream: list, prune, promote and remove builds of a release stream's repository,
and refresh its signed indexes."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gfxpack.cli.common import reports_errors, terminal_line

if TYPE_CHECKING:
    from gfxpack.repo.results import RunResult


def _warn(message: str) -> None:
    click.echo(f"warning: {terminal_line(message)}", err=True)


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


def _print(
    result: RunResult,
    out: Path,
    as_json: bool,
    dry_run: bool = False,
    removing: bool = False,
) -> None:
    """Say what the run did (what it would do, with ``dry_run``; for a run ``removing``
    builds, also that it removed none), each format's summary as gfxpack repo prints
    it, and the lines that point a machine at ``out`` when the run made them."""
    from gfxpack.formats import format_named

    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    for version in result.removed_versions:
        click.echo(terminal_line(f"{verb} build {version}"))
    if result.removed_files:
        if not result.removed_versions:
            click.echo(f"{verb} {len(result.removed_files)} package file(s)")
        for name in result.removed_files:
            click.echo(f"  {name}")
    elif removing and not result.removed_versions:
        click.echo("nothing to remove" + (" (dry run: nothing changed)" if dry_run else ""))
    if result.uninstallable:
        became = "would become" if dry_run else "became"
        click.echo(f"{became} uninstallable (--force): {len(result.uninstallable)} package(s)")
        for name in result.uninstallable:
            click.echo(terminal_line(f"  {name}"))  # names read from the indexes
    if result.deleted_files:
        click.echo(f"deleted {len(result.deleted_files)} pool file(s) no kept index names any more")
    for summary in result.formats:
        details = [f"suite {summary.suite}"] if summary.suite is not None else []
        details += ["signed"] if summary.signed else []
        click.echo(
            f"{summary.format}: {len(summary.added)} new, {summary.packages} in "
            f"{out / format_named(summary.format).repo_dir}"
            + (f" ({', '.join(details)})" if details else "")
        )
    for summary in result.formats:
        for client, line in (summary.setup or {}).items():
            click.echo(f"  {client}:  {line}")


@click.group("stream")
def stream_group() -> None:
    """List, prune, promote and remove builds of a release stream's repository.

    A stream's repository (nightly, weekly, rc, stable) holds every retained build
    side by side. Removed packages leave the indexes at once and the pools once no
    kept index generation names them (gfxpack repo --keep-generations), so machines
    that read an earlier index never miss a file. refresh signs a repository's
    indexes again, with a new Valid-Until, publishing nothing.
    """


@stream_group.command("list")
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="Repository root.")
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
@reports_errors
def list_command(repo: str, as_json: bool) -> None:
    """The builds a repository holds, oldest first (after its suite, signing key and
    the keys published beside it): version, date published, package
    files and their size, and where a promoted build came from; then the pool files
    kept only for older index generations, and the repository's size on disk."""
    from gfxpack.repo import stream
    from gfxpack.units import human

    listing = stream.listing(Path(repo))
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    packages = ", ".join(f"{count} {fmt}" for fmt, count in listing["packages"].items())
    signed = f", signed by {listing['signed_by']}" if listing["signed_by"] else ", unsigned"
    if listing["extra_keys"]:
        signed += f", also publishing {', '.join(listing['extra_keys'])}"
    # Record text (versions, stream names, the key) is checked when read; escaped
    # here too, so no record can put a control sequence on the terminal.
    click.echo(terminal_line(f"{repo}: suite {listing['suite']}, {packages}{signed}"))
    for build in listing["builds"]:
        day = time.strftime("%Y-%m-%d %H:%M", time.gmtime(build["published"]))
        line = (
            f"  {build['version']:<24} {day} UTC  {len(build['files'])} files, "
            f"{human(build['bytes'])}"
        )
        source = build.get("promoted_from")
        if source:
            came = time.strftime("%Y-%m-%d", time.gmtime(source["published"]))
            line += f"  (promoted from {source['stream']}, published there {came})"
        click.echo(terminal_line(line))
    if listing["unversioned"]:
        click.echo(
            f"  {len(listing['unversioned'])} files of no build (never pruned), "
            f"{human(listing['unversioned_bytes'])}"
        )
    for fmt, older in listing["kept_for_older_indexes"].items():
        if older["files"]:
            click.echo(
                f"  {fmt}: {older['files']} pool files, {human(older['bytes'])}, kept only "
                f"for older indexes (generation {older['generation']} now), until "
                f"generation {older['until_generation']} is published"
            )
    click.echo(f"  {human(listing['bytes_on_disk'])} on disk in all")


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
    from gfxpack.repo.publishing import stream_run
    from gfxpack.repo.retention import Retention

    policy = Retention.parse(retain)
    out = Path(repo)
    result, _ = stream_run(
        lambda then: stream.prune(
            out, policy, _options(sign_key), dry_run=dry_run, warn=_warn, unsigned=unsigned,
            then=then,
        ),
        out,
        sign_key,
    )  # fmt: skip
    _print(result, out, as_json, dry_run=dry_run, removing=True)


@stream_group.command("remove")
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="Repository root.")
@click.option("--version", "versions", multiple=True, help="A build's version (repeatable).")
@click.option(
    "--package", "packages", multiple=True, help="A published package file name (repeatable)."
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option(
    "--force",
    is_flag=True,
    help="Remove even what a kept package depends on; the packages left uninstallable "
    "are listed (without it, such a removal is refused).",
)
@_common
@reports_errors
def remove_command(
    repo: str,
    versions: tuple[str, ...],
    packages: tuple[str, ...],
    dry_run: bool,
    force: bool,
    sign_key: str | None,
    unsigned: bool,
    as_json: bool,
) -> None:
    """Remove builds (by version) or package files (by name) from a repository.

    What stays is resolved first (as gfxpack verify resolves it): a removal that takes
    a package a kept package depends on is refused, naming each such dependency,
    unless --force.
    """
    from gfxpack.errors import GfxpackError
    from gfxpack.repo import stream
    from gfxpack.repo.publishing import stream_run

    if not versions and not packages:
        raise GfxpackError("give --version or --package: what to remove")
    out = Path(repo)
    result, _ = stream_run(
        lambda then: stream.remove(
            out, versions, packages, _options(sign_key), dry_run=dry_run, warn=_warn,
            unsigned=unsigned, force=force, then=then,
        ),
        out,
        sign_key,
    )  # fmt: skip
    _print(result, out, as_json, dry_run=dry_run, removing=True)


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
@click.option(
    "--valid-for",
    type=int,
    metavar="DAYS",
    help="The target's apt Release says Valid-Until: DAYS after its Date (0: no end; "
    "gfxpack stream refresh renews it). Default: the target's, no end for a new one.",
)
@click.option(
    "--repo-id",
    metavar="ID",
    help="What machines call the target (its setup lines' file names, dnf's and zypper's "
    "id), as gfxpack repo --repo-id. Default: the target's, its directory's name for a "
    "new one.",
)
@click.option(
    "--repo-name",
    metavar="TEXT",
    help="The name dnf and zypper show for the target. Default: the target's, its "
    "repository id for a new one.",
)
@click.option(
    "--origin",
    help="The target's apt Origin (o= in pins). Default: the target's, the source's for a new one.",
)
@click.option(
    "--label",
    help="The target's apt Label (l= in pins). Default: the target's, the source's for a new one.",
)
@click.option(
    "--base-url",
    metavar="URL",
    help="Where the target is served, for its printed setup lines (remembered). Default: "
    "the target's, else the target as a file: URL.",
)
@click.option(
    "--allow-unsigned-packages",
    is_flag=True,
    help="Promote RPMs not signed by --sign-key into a signed target (without it, that is "
    "refused: its setup says gpgcheck=1, so dnf and zypper would refuse them); the "
    "target's setup then says gpgcheck=0, as gfxpack repo --allow-unsigned-packages.",
)
@click.option(
    "--extra-key",
    "extra_keys",
    multiple=True,
    metavar="FPR",
    help="Publish this public key (repeatable; its 40-digit fingerprint) in the target's "
    "keyrings beside --sign-key's, and take RPMs signed by it, as gfxpack repo "
    "--extra-key (remembered; it replaces the target's). Default: the target's, none for "
    "a new one (never the source's).",
)
@_common
@reports_errors
def promote_command(
    source: str,
    target: str,
    version: str,
    from_stream: str | None,
    retain: str | None,
    valid_for: int | None,
    repo_id: str | None,
    repo_name: str | None,
    origin: str | None,
    label: str | None,
    base_url: str | None,
    allow_unsigned_packages: bool,
    extra_keys: tuple[str, ...],
    sign_key: str | None,
    unsigned: bool,
    as_json: bool,
) -> None:
    """Publish a build of one stream's repository into another's: the same package
    files, new signed indexes, the source stream recorded (gfxpack stream list shows
    it), then the lines that point a machine at the target.

    A target keeps its own settings: an existing one those it was published with, a
    new one the source's suite, Origin, Label and Codename but its own repository id
    (its directory's name) and no Valid-Until, unless the options here say otherwise.
    The keys a target publishes beside its signing key are its own too (--extra-key):
    a rotation's other key is never carried over from the source.
    """
    from dataclasses import replace

    from gfxpack.repo import stream
    from gfxpack.repo.publishing import stream_run
    from gfxpack.repo.retention import Retention
    from gfxpack.repo.settings import checked_extra_keys
    from gfxpack.repo.setup_package import check_base_url

    if base_url is not None:
        check_base_url(base_url)
    # None: the target's own (a new target's: none, whatever the source publishes).
    given_keys = checked_extra_keys(extra_keys) if extra_keys else None
    policy = Retention.parse(retain) if retain is not None else None
    src = Path(source)
    out = Path(target)
    given = {"valid_for_days": valid_for, "repo_id": repo_id, "repo_name": repo_name,
             "origin": origin, "label": label}  # fmt: skip
    result, _ = stream_run(
        lambda then: stream.promote(
            src,
            out,
            version,
            from_stream or src.resolve().name,
            replace(_options(sign_key), base_url=base_url, extra_keys=given_keys),
            policy,
            given,
            warn=_warn,
            unsigned=unsigned,
            allow_unsigned_packages=allow_unsigned_packages,
            then=then,
        ),
        out,
        sign_key,
        setup=True,
    )
    _print(result, out, as_json)


@stream_group.command("refresh")
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="Repository root.")
@_common
@reports_errors
def refresh_command(repo: str, sign_key: str | None, unsigned: bool, as_json: bool) -> None:
    """Sign a repository's indexes again, with a new Date and Valid-Until, publishing
    nothing: for a repository published with --valid-for whose next publish is further
    away than its Valid-Until (gfxpack verify --expires-within says when)."""
    from dataclasses import replace

    from gfxpack.repo import stream
    from gfxpack.repo.publishing import stream_run

    out = Path(repo)
    options = _options(sign_key)
    result, recorded = stream_run(
        lambda then: stream.refresh(out, options, warn=_warn, unsigned=unsigned, then=then),
        out,
        sign_key,
    )
    # Valid-Until as the run wrote it: from the names the repository recorded.
    days = recorded.names.valid_for_days if recorded and recorded.names else None
    until = options.epoch + days * 86_400 if days else None
    result = replace(result, refresh=True, valid_until=until)
    _print(result, out, as_json)
    if not as_json:
        click.echo(
            "apt's Release is valid until "
            + (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until)) if until else "no end")
        )
