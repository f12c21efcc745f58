"""gfxpack descriptors: what a device will load from a descriptor tree, and lint."""

from __future__ import annotations

import os
from pathlib import Path

import click

from gfxpack import views
from gfxpack.cli import cli
from gfxpack.cli.common import reports_errors
from gfxpack.descriptors import (
    Diagnostics,
    EngineNames,
    Level,
    SymbolRegistry,
    load_validated,
    provider_roots,
)
from gfxpack.descriptors.lint import lint
from gfxpack.descriptors.listing import engines_json
from gfxpack.errors import GfxpackError


@cli.group("descriptors")
def descriptors_group() -> None:
    """Load, list and lint hipDNN kernel descriptors (arch_content trees)."""


def _roots(roots: tuple[str, ...], runtime_dir: str | None, diags: Diagnostics) -> list[Path]:
    found = provider_roots(roots, os.environ, runtime_dir, diags)
    if not found:
        raise GfxpackError("no descriptor root: give --root DIR (or set HIPDNN_DESCRIPTOR_DIR)")
    return found


def _registry(symbols: str | None) -> SymbolRegistry | None:
    return SymbolRegistry.from_file(symbols) if symbols else None


@descriptors_group.command("list-engines")
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(),
    help="A descriptor tree (the installed one); repeatable. HIPDNN_DESCRIPTOR_DIR "
    "replaces these when it names a directory.",
)
@click.option(
    "--runtime-dir",
    type=click.Path(),
    help="A drop-in tree read after the roots [default: HIPDNN_DESCRIPTOR_RUNTIME_DIR].",
)
@click.option(
    "--device",
    metavar="ARCH",
    help="Only what this device sees, e.g. gfx942 or gfx942:sramecc+:xnack-.",
)
@click.option(
    "--symbols",
    type=click.Path(dir_okay=False),
    help="Symbol registry: JSON {kind: [symbols]} or '<kind> <symbol>' lines.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.option(
    "--level",
    default="warn",
    show_default=True,
    type=click.Choice(["error", "warn", "info"]),
    help="Diagnostics shown.",
)
@reports_errors
def list_engines(
    roots: tuple[str, ...],
    runtime_dir: str | None,
    device: str | None,
    symbols: str | None,
    as_json: bool,
    level: str,
) -> None:
    """Each engine the provider would load: ids, packs and kernels, then diagnostics.

    HIPDNN_DISABLE_ENGINES (names, decimal or hex ids, UUIDs) is honoured.
    """
    diags = Diagnostics()
    result = load_validated(
        _roots(roots, runtime_dir, diags),
        _registry(symbols),
        os.environ.get("HIPDNN_DISABLE_ENGINES"),
        EngineNames(),
        diags,
    )
    threshold = Level.parse(level)
    engines = engines_json(result.sets, device)
    shown = [d for d in diags.items if d.severity >= threshold]
    if as_json:
        click.echo(
            views.dumps({"engines": engines, "diagnostics": [d.to_json() for d in shown]}), nl=False
        )
        return
    for engine in engines:
        click.echo(
            f"{engine['name']}  id {engine['id']} ({engine['id_hex']})  uuid {engine['uuid']}"
        )
        for pack in engine["packs"]:
            arch = ", ".join(pack["arch"]) or "any arch"
            click.echo(f"  pack {pack['name']}  {pack['id']}  [{arch}]")
            for kernel in pack["kernels"]:
                values = ", ".join(f"{k}={v}" for k, v in kernel["metadata"].items())
                click.echo(
                    f"    kernel {kernel['name']}  priority {kernel['priority']}  "
                    f"[{', '.join(kernel['arch']) or 'any arch'}]  {values}"
                )
    if not engines:
        click.echo("no engines")
    for diagnostic in shown:
        click.echo(f"{diagnostic.severity.name} {diagnostic.code}: {diagnostic.message}", err=True)


@descriptors_group.command("lint")
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(),
    required=True,
    help="A descriptor tree; repeatable.",
)
@click.option("--symbols", type=click.Path(dir_okay=False), help="Symbol registry file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@reports_errors
def lint_command(roots: tuple[str, ...], symbols: str | None, as_json: bool) -> None:
    """Check every file against the shipped JSON Schemas, report the lowest version each
    needs, then run the loader; exit 1 on any ERROR."""
    result = lint([os.fspath(r) for r in roots], _registry(symbols))
    errors = result.problems
    if as_json:
        click.echo(views.dumps(result.to_json()), nl=False)
    else:
        for report in result.files:
            state = "OK" if not report.schema_errors else f"{len(report.schema_errors)} problem(s)"
            flag = (
                f" (stamped {report.declared}, needs only {report.needs})"
                if report.overstamped
                else ""
            )
            click.echo(
                f"{report.path}: {report.suffix} {report.declared or '?'}, needs "
                f"{report.needs or '?'}: schema {state}{flag}"
            )
            for problem in report.schema_errors:
                click.echo(f"    {problem}")
        for diagnostic in errors:
            click.echo(f"{diagnostic.severity.name} {diagnostic.code}: {diagnostic.message}")
        engines = len(result.load.sets)
        click.echo(
            f"{len(result.files)} files, {engines} engine(s) loaded: "
            f"{'FAILED' if result.failed else 'OK'}"
        )
    if result.failed:
        raise SystemExit(1)
