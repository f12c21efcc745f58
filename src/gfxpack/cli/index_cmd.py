"""gfxpack index: a static Python package index of a directory of wheels."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gfxpack.cli.common import ByteSize, reports_errors
from gfxpack.cli.split_cmd import MAX_UNPACKED


@click.command("index")
@click.option(
    "--wheels",
    "wheels_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The directory of .whl files to publish (host and device wheels of gfxpack split).",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The index directory to write: OUT/simple/ for the clients, OUT/files/ the wheels.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace OUT by an index of these wheels alone if it is an earlier index "
    "(without it, the wheels are added to an earlier index).",
)
@click.option(
    "--mirror-deps",
    type=click.Path(file_okay=False, path_type=Path),
    help="A directory of wheels (such as 'pip download' gives): those of the "
    "distributions the split wheels require, directly or not, that the index lacks "
    "are published too, so that --index-url alone installs.",
)
@click.option(
    "--self-contained",
    is_flag=True,
    help="Refuse the index when a requirement of a split wheel resolves to nothing in it "
    "(a warning otherwise).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the projects and files as JSON.")
@click.option(
    "--max-unpacked-size",
    type=ByteSize(),
    default=MAX_UNPACKED,
    show_default="32G",
    help="Refuse a wheel whose members declare more bytes than this, before unpacking any "
    "(as split and join do).",
)
@reports_errors
def index_command(
    wheels_dir: Path,
    out: Path,
    force: bool,
    mirror_deps: Path | None,
    self_contained: bool,
    as_json: bool,
    max_unpacked_size: int,
) -> None:
    """Write a static Python package index (PEP 503 and PEP 691) of the wheels in a directory.

    An OUT that is an earlier index grows: its wheels and these are checked as one
    set and every page is written again, so each release is published beside the
    earlier ones (a file name already published must be the same file).

    Refused, with one error line per problem and nothing written, when a host
    wheel's device-* extra names a wheel the directory lacks (for any platform
    the host is built for), when host and device versions disagree, when two
    distributions install the same path (each scheme where installers put it:
    a data file under lib/python*/site-packages is site-packages), when two
    files are one distribution, version and build for the same tag, when a
    wheel's METADATA names another distribution or version than its file name,
    or when installing a split distribution with a device extra installs another
    split distribution without that arch's device code (one line per chain).
    Every requirement of a split wheel that resolves to nothing in the index is
    a warning (an error with --self-contained).

    Serve OUT with any web server; pip and uv read OUT/simple/. The HTML pages
    serve every client; to give clients that ask for PEP 691 JSON
    (Accept: application/vnd.pypi.simple.v1+json) the index.json beside each
    index.html, nginx needs:

    \b
      map $http_accept $simple_index {
          default index.html;
          "~application/vnd\\.pypi\\.simple\\.v1\\+json" index.json;
      }
      location /simple/ {
          index $simple_index;
          types { application/vnd.pypi.simple.v1+json json; text/html html; }
      }

    \b
    Example:
      gfxpack index --wheels dist/ --out site/
      pip install --index-url https://example.com/simple 'jax-rocm7-pjrt[device-gfx942]'
    """
    from gfxpack.text_fields import escaped
    from gfxpack.wheels.index import build_index

    report = build_index(
        wheels_dir,
        out,
        force,
        max_unpacked_size,
        mirror_deps=mirror_deps,
        self_contained=self_contained,
    )
    installs = {
        name: {"arches": arches, "requirement": f"{name}[device-<arch>]"}
        for name, arches in report.installs.items()
    }
    if as_json:
        document = {
            "out": str(out),
            "projects": report.projects,
            "added": report.added,
            "installs": installs,
            "unresolved": report.unresolved,
            "notes": report.notes,
        }
        click.echo(json.dumps(document, indent=2))
        return
    for note in report.notes:
        click.echo(f"note: {escaped(note)}", err=True)
    for line in report.unresolved:
        click.echo(
            f"warning: {escaped(line)}; pip install --index-url fails without it "
            "(--mirror-deps DIR publishes it from a directory of wheels)",
            err=True,
        )
    files = sum(len(names) for names in report.projects.values())
    click.echo(
        f"wrote {escaped(str(out))}: {len(report.projects)} projects, {files} wheels "
        f"({len(report.added)} added); serve it and install with --index-url <URL>/simple"
    )
    if installs:
        click.echo("install for one GPU (a bare install gets the host code alone, no device code):")
    for name, arches in report.installs.items():
        click.echo(
            f"  pip install --index-url <URL>/simple '{name}[device-<arch>]'"
            f"  (arch: {', '.join(arches)}, or all)"
        )
