"""gfxpack why: the chain of requirements that brings a package into an install."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import FORMAT_NAMES, as_format, reports_errors, split_list

if TYPE_CHECKING:
    from gfxpack.formats import PackageFormat


@click.command("why")
@click.option(
    "--repo",
    "root",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A gfxpack repo --out directory, or one apt (dists/) or rpm-md (repodata/) repository.",
)
@click.option(
    "--install",
    "names",
    multiple=True,
    required=True,
    help="What is installed, as apt-get install would (repeatable, or comma-separated).",
)
@click.argument("package")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_NAMES),
    callback=as_format,
    help="Answer for this format only (default: every one under --repo).",
)
@click.option(
    "--system",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Installed packages as deb822 stanzas (as for verify); default: a bundled list.",
)
@click.option("--suite", help="apt suite, when the repository has more than one.")
@click.option("--json", "as_json", is_flag=True, help="Print the answers as JSON.")
@reports_errors
def why_command(
    root: Path,
    names: tuple[str, ...],
    package: str,
    fmt: PackageFormat | None,
    system: Path | None,
    suite: str | None,
    as_json: bool,
) -> None:
    """Why installing --install brings PACKAGE in, or why it does not.

    The install is resolved with libsolv as verify resolves it. For an
    installed PACKAGE the answer is the shortest chain of requirements from a
    requested package to it, e.g.

    \b
      amdrocm-core8.2-gfx942 requires amdrocm-blas8.2-gfx942 (= 8.2.0-1)
        → requires amdrocm-solver8.2-gfx942 (>= 8.2.0-1)

    Otherwise it says what keeps it out: nothing installed requires it (and
    which packages of the repository would), or it is another GPU arch's
    package, which packages of the installed arch never require.
    """
    from gfxpack import why as why_module

    answers = why_module.why(root, split_list(names), package, fmt, system, suite)
    if as_json:
        click.echo(json.dumps([a.as_dict() for a in answers], indent=2))
        return
    for answer in answers:
        state = "installed" if answer.installed else "not installed"
        click.echo(f"{answer.fmt}: {answer.package} is {state}: {answer.reason}")
