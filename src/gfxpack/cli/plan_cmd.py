"""gfxpack plan: every package of a release, as a summary, tree, table, JSON or picture."""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import (
    FORMAT_NAMES,
    MODES,
    as_format,
    load_plan_waivers,
    plan_options,
    print_notes,
    release_options,
    reports_errors,
    split_list,
    strict_option,
    waivers_option,
)
from gfxpack.errors import GfxpackError

if TYPE_CHECKING:
    from gfxpack.formats import PackageFormat
    from gfxpack.plan import PlannedPackage, ReleasePlan

# The picture formats: Graphviz source, or drawn by dot.
GRAPHS = ("dot", "svg", "png")


def _targets(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list[str]:
    targets = split_list(values)
    if not targets:
        raise click.BadParameter("give at least one GPU target, e.g. --target gfx942")
    return targets


@click.command("plan")
@release_options
@click.option(
    "--target",
    "targets",
    multiple=True,
    required=True,
    callback=_targets,
    help="GPU targets, e.g. gfx1100,gfx942 (comma, space or ';' separated; repeatable).",
)
@click.option(
    "--format",
    "output",
    default="summary",
    show_default=True,
    type=click.Choice(["summary", "tree", "table", "json", *GRAPHS]),
    help="summary: counts and notes; tree/table: dependency trees and tables with pins; json: the "
    "plan contract; dot/svg/png: a dependency picture of --package (or of the whole "
    "release with --all); svg and png need Graphviz's dot.",
)
@click.option(
    "--all",
    "whole",
    is_flag=True,
    help="dot/svg/png: draw every package of the release (large) instead of one family.",
)
@click.option(
    "-o",
    "--output",
    "output_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the result to this file instead of standard output (png needs it on a terminal).",
)
@click.option(
    "--package",
    "package",
    metavar="NAME",
    help="Only this package: a base (amdrocm-blas) or any planned package name.",
)
@click.option(
    "--pkg-type",
    default="deb",
    show_default=True,
    type=click.Choice(FORMAT_NAMES),
    callback=as_format,
    help="Which format's names and dependencies tree, table and dot show.",
)
@click.option(
    "--mode",
    default="kpack",
    show_default=True,
    type=click.Choice(MODES),
    help="kpack: host/device split per arch; single-arch: legacy, first target only.",
)
@click.option("-v", "--verbose", is_flag=True, help="Also print informational notes.")
@click.option("-q", "--quiet", is_flag=True, help="Print no notes, only the result.")
@strict_option
@waivers_option
@reports_errors
def plan_command(
    config_path: str,
    rocm_version: str,
    release: str,
    pin_policy: str,
    build_variant: str,
    install_prefix: str | None,
    allow_missing_deps: bool,
    targets: list[str],
    output: str,
    whole: bool,
    output_path: str | None,
    package: str | None,
    pkg_type: PackageFormat,
    mode: str,
    verbose: bool,
    quiet: bool,
    strict: bool,
    waivers_path: str | None,
) -> None:
    """Plan every package of a release: names, kinds and dependencies.

    \b
    Example:
      gfxpack plan --config examples/package.json --target gfx1100,gfx942 \\
                   --rocm-version 8.2.0 --format tree --package amdrocm-blas
    """
    from gfxpack.config import load_config
    from gfxpack.plan import plan

    waivers = load_plan_waivers(waivers_path)
    config = load_config(config_path)
    options = plan_options(mode, pin_policy, build_variant, install_prefix, allow_missing_deps)
    release_plan = plan(config.packages, targets, rocm_version, release, options)
    print_notes(config.warnings, release_plan, verbose, strict, quiet, waivers)
    if whole and output not in GRAPHS:
        raise GfxpackError(f"--all is for the pictures (--format dot, svg or png), not {output}")
    if output in GRAPHS:
        _write(_draw(release_plan, output, package, whole, pkg_type), output_path)
    else:
        _write(_render(release_plan, output, package, pkg_type).encode("utf-8"), output_path)


def _draw(
    release_plan: ReleasePlan, output: str, package: str | None, whole: bool, fmt: PackageFormat
) -> bytes:
    """One family's picture (the base of --package), or the release's with --all."""
    from gfxpack import views

    if whole == (package is not None):
        raise GfxpackError(
            f"--format {output} draws one package's family: give --package NAME "
            "(a base or a planned name), or --all for the whole release"
        )
    if package is None:
        source = views.dot(release_plan, fmt=fmt)
    else:
        try:
            focus, members = views.family(release_plan, package)
        except KeyError:
            raise GfxpackError(_not_planned(package)) from None
        source = views.dot(release_plan, members, fmt, focus)
    if output == "dot":
        return source.encode("utf-8")
    from gfxpack import graphviz

    return graphviz.render(source, output)


def _write(data: bytes, path: str | None) -> None:
    """To ``path`` (whole or not at all), else standard output; never PNG to a terminal."""
    if path is None:
        if data.startswith(b"\x89PNG") and sys.stdout.isatty():
            raise GfxpackError("--format png writes binary data: add -o FILE.png or redirect")
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    from gfxpack._io import write_atomically

    try:
        write_atomically(path, data)
    except OSError as e:
        raise GfxpackError(f"{path}: cannot write: {e.strerror}") from None


def _not_planned(package: str) -> str:
    return (
        f"package {package!r} is not in the plan (give a base name from package.json "
        "or a planned package name; see --format summary)"
    )


def _render(release_plan: ReleasePlan, output: str, package: str | None, fmt: PackageFormat) -> str:
    from gfxpack import views

    roots = _roots(release_plan, package)
    if output == "tree":
        return "\n".join(views.tree(release_plan, root, fmt) for root in roots)
    if output == "table":
        if package is None:
            return views.tables(release_plan, fmt)
        return views.table(release_plan, release_plan.by_key[roots[0]].base, fmt)
    selected = None
    if package is not None:
        selected = views.reachable(release_plan, roots[0], fmt)
    if output == "json":
        return views.dumps(views.plan_as_dict(release_plan, selected))
    return _summary(release_plan, selected)


def _roots(release_plan: ReleasePlan, package: str | None) -> list[str]:
    """Tree roots: each base's non-versioned package, or the one asked for."""
    from gfxpack.plan import Kind

    if package is None:
        return [p.key for p in release_plan.packages if p.kind is Kind.NON_VERSIONED]
    found = release_plan.get(package)
    if found is None:
        family = release_plan.family(package)
        aliases = [p for p in family if p.kind is Kind.NON_VERSIONED]
        if not aliases:
            raise GfxpackError(_not_planned(package))
        found = aliases[0]
    return [found.key]


def _owned_targets(release_plan: ReleasePlan) -> str:
    """``gfx942, gfx1250 (gfx1250, gfx1250-strict)``: each arch, with the targets its
    packages carry when it owns more than itself."""
    owners = release_plan.owners
    if all(len(targets) < 2 for targets in owners.values()):
        return ", ".join(release_plan.targets)  # each target its own arch's (or a family)
    return ", ".join(
        targets[0] if len(targets) < 2 else f"{arch} ({', '.join(targets)})"
        for arch, targets in owners.items()
    )


def _summary(release_plan: ReleasePlan, selected: list[PlannedPackage] | None) -> str:
    # rich only here: a script asking for JSON or a tree pays nothing for it.
    from rich.console import Console
    from rich.table import Table

    from gfxpack import views
    from gfxpack.formats import FORMATS

    counts = views.summary(release_plan, selected)
    buffer = io.StringIO()
    console = Console(width=100, file=buffer)
    console.print(
        f"[bold]gfxpack plan[/]: ROCm {release_plan.full_version}, {release_plan.mode} mode, "
        f"targets {_owned_targets(release_plan)}"
    )
    console.print(
        f"prefix {release_plan.prefix}, pin policy {release_plan.pin_policy}"
        + (f", variant {release_plan.variant}" if release_plan.variant else "")
    )
    console.print(f"{counts.bases} base packages → {counts.packages} packages")
    table = Table(
        "kind",
        "packages",
        "with files",
        *(f"{fmt.title} {fmt.field_name('depends')}" for fmt in FORMATS),
    )
    for row in counts.kinds:
        table.add_row(
            row.kind.title,
            str(row.packages),
            str(row.with_files),
            *(str(row.depends[fmt]) for fmt in FORMATS),
        )
    console.print(table)
    return buffer.getvalue()
