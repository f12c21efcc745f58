"""gfxpack report: a build as one static HTML page (or JSON) for release engineers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import FORMAT_NAMES, as_format, reports_errors
from gfxpack.errors import GfxpackError

if TYPE_CHECKING:
    from gfxpack.formats import PackageFormat


@click.command("report")
@click.option(
    "--build",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A gfxpack build --out directory (read through its index.json).",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    help="The repository the build is published in: install sets are then resolved by "
    "libsolv, as apt and dnf would (default: the plan's Depends and Recommends).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_NAMES),
    callback=as_format,
    help="Whose file sizes to report [default: deb when the build has it].",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report here: one self-contained HTML page, no network needed.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report's figures as JSON.")
@reports_errors
def report_command(
    build: Path,
    repo: Path | None,
    fmt: PackageFormat | None,
    html_path: Path | None,
    as_json: bool,
) -> None:
    """A release report of a build: what each GPU arch's users download.

    \b
    The page holds:
      - the release: version, targets, packages per kind and format;
      - per GPU arch, the download and installed size of amdrocm-core<X.Y>-<arch>
        and of every other arch meta, split into host and device bytes, against
        installing every arch;
      - the biggest packages;
      - per base, a dependency picture (pins on the edges, alternatives as one
        choice, Recommends dashed) drawn by Graphviz's dot;
      - the plan's notes and warnings.
    """
    if html_path is None and not as_json:
        raise GfxpackError("say what to write: --html FILE, --json, or both")
    from gfxpack import report as report_module
    from gfxpack._io import write_atomically

    made = report_module.make(build, fmt, repo)
    if html_path is not None:
        page = report_module.html(made)
        try:
            write_atomically(html_path, page.encode("utf-8"))
        except OSError as e:
            raise GfxpackError(f"{html_path}: cannot write: {e.strerror}") from None
        click.echo(f"report: {html_path.resolve()}", err=as_json)
    if as_json:
        click.echo(json.dumps(made.as_dict(), indent=2))
