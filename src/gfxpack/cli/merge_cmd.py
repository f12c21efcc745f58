"""gfxpack merge: the shards of one release as one build output."""

from __future__ import annotations

import json

import click

from gfxpack.cli.common import reports_errors


@click.command("merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Where the release's packages and full index.json go (may be one of the shards).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full index as JSON.")
@reports_errors
def merge_command(shards: tuple[str, ...], out: str, as_json: bool) -> None:
    """Join the OUT directories of a release's shards (gfxpack build --shard K/N) into OUT.

    Refuses shards built from different plans (package.json, targets, version, options
    or SOURCE_DATE_EPOCH differ), a package no shard built and a package two shards
    built. OUT then holds the files of a one-machine build of the release, byte for
    byte, and its index.json; files are hard-linked when OUT is on the same file
    system as a shard, copied otherwise.
    """
    from gfxpack.merge import merge

    index = merge(shards, out)
    if as_json:
        click.echo(json.dumps(index.as_json(), indent=2))
        return
    files = index.files
    click.echo(
        f"{len(files)} files ({sum(f.size for f in files):,} bytes) of "
        f"{len(shards)} shards in {out}"
    )
