"""gfxpack descriptors: what a device will load from a descriptor tree, and lint."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gfxpack.cli.common import max_object_size_option, reports_errors
from gfxpack.cli.lazy import LazyGroup, Subcommand
from gfxpack.errors import GfxpackError

if TYPE_CHECKING:
    from gfxpack.descriptors import Diagnostics, SymbolRegistry

# The descriptor loader (jsonschema, msgpack, zstandard) is imported by each command
# when it runs, so --help and shell completion do not load it.


@click.group(
    "descriptors",
    cls=LazyGroup,
    subcommands={
        "list-engines": Subcommand(
            "gfxpack.cli.descriptors_cmd:list_engines",
            "Each engine the provider would load: ids, packs and kernels, then diagnostics.",
        ),
        "lint": Subcommand(
            "gfxpack.cli.descriptors_cmd:lint_command",
            "Check every file against the shipped JSON Schemas, report the lowest version "
            "each needs, then run the loader; exit 1 on any ERROR or on an arch that is no "
            "AMDGPU processor (WARN D217).",
        ),
        "pack": Subcommand(
            "gfxpack.cli.descriptors_pack_cmd:pack_command",
            "Package kernels and their descriptors per GPU arch, as a provider installs them.",
        ),
    },
)
def descriptors_group() -> None:
    """Load, list and lint hipDNN kernel descriptors (arch_content trees)."""


def _directories(option: str, paths: Sequence[str]) -> None:
    """Every directory given on the command line must be one: a typo in --root would
    otherwise load nothing and report success."""
    for path in paths:
        if not os.path.isdir(path):
            why = "not a directory" if os.path.lexists(path) else "no such directory"
            raise GfxpackError(f"{option} {path}: {why}")


def _device(device: str | None) -> None:
    """--device must be one processor LLVM knows (with features): a family, a generic
    target or a typo would list what no device loads."""
    from gfxpack.amdgpu import processor_problem

    problem = processor_problem(device, features=True) if device is not None else None
    if problem:
        raise GfxpackError(f"--device {problem}")


def _roots(roots: Sequence[str], runtime_dir: str | None, diags: Diagnostics) -> list[Path]:
    from gfxpack.descriptors import provider_roots

    _directories("--root", roots)
    _directories("--runtime-dir", [runtime_dir] if runtime_dir is not None else [])
    found = provider_roots(roots, os.environ, runtime_dir, diags)
    if not found:
        raise GfxpackError("no descriptor root: give --root DIR (or set HIPDNN_DESCRIPTOR_DIR)")
    return found


def _nothing_under(roots: Sequence[str | os.PathLike[str]]) -> str:
    from gfxpack.descriptors.types import SUFFIXES

    return (
        f"{', '.join(os.fspath(r) for r in roots)}: no descriptor file (a name ending in "
        f"{', '.join(SUFFIXES)})"
    )


def _installed(install_roots: tuple[str, ...]) -> list[str]:
    """The descriptor roots of the providers installed under each install root."""
    from gfxpack.descriptors.installed import LAYOUT, installed_roots

    found: list[str] = []
    for install_root in install_roots:
        roots = installed_roots(install_root)
        if not roots:
            raise GfxpackError(
                f"{install_root}: no installed descriptor provider (looked for {LAYOUT} "
                "under it, its opt/rocm*/ and opt/rocm/*/)"
            )
        found.extend(os.fspath(r) for r in roots)
    return found


def _registry(symbols: str | None) -> SymbolRegistry | None:
    from gfxpack.descriptors import SymbolRegistry

    return SymbolRegistry.from_file(symbols) if symbols else None


@click.command("list-engines")
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(),
    help="A descriptor tree (the installed one); repeatable. HIPDNN_DESCRIPTOR_DIR "
    "replaces these when it names a directory.",
)
@click.option(
    "--installed",
    "install_roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="An install root (/ or a chroot): read every provider installed there, at "
    "<prefix>/lib/hipdnn/arch_content/<provider>/ for the root, opt/rocm*/ and "
    "opt/rocm/*/ as prefixes; repeatable, read after --root.",
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
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when any WARN or ERROR diagnostic was raised (without it the exit "
    "status is 0, as the provider loads what it can).",
)
@max_object_size_option
@reports_errors
def list_engines(
    roots: tuple[str, ...],
    install_roots: tuple[str, ...],
    runtime_dir: str | None,
    device: str | None,
    symbols: str | None,
    as_json: bool,
    level: str,
    strict: bool,
    max_object_size: int,
) -> None:
    """Each engine the provider would load: ids, packs and kernels, then diagnostics.

    Every "kind": "kpack" kernel shown was checked against its archive (the toc_key
    is there for the kernel's arch and the code object's sha256 matches); a pack
    failing that is dropped with a diagnostic. With --device (one processor, e.g.
    gfx942 or gfx942:xnack-), packs built only for other arches are listed as
    dropped for that device, and the other arches' shards of a pack it loads as
    not for it. A --root or --runtime-dir that is not a directory is an error.
    HIPDNN_DISABLE_ENGINES (names, decimal or hex ids, UUIDs) is honoured. The
    last line counts the ERROR and WARN diagnostics; the exit status is 0 unless
    --strict is given and there is any.
    """
    from gfxpack import views
    from gfxpack.descriptors import Diagnostics, EngineNames, Level, load_validated
    from gfxpack.descriptors.listing import engines_as_dicts
    from gfxpack.descriptors.types import device_base

    _device(device)
    diags = Diagnostics()
    result = load_validated(
        _roots([*roots, *_installed(install_roots)], runtime_dir, diags),
        _registry(symbols),
        os.environ.get("HIPDNN_DISABLE_ENGINES"),
        EngineNames(),
        diags,
        max_object_size,
    )
    if not result.catalog.entries and not diags.at_least(Level.ERROR):
        # No false green: "no engines" over a tree without descriptors checked nothing.
        raise GfxpackError(f"{_nothing_under(result.roots)}: loaded nothing")
    threshold = Level.parse(level)
    engines = engines_as_dicts(result.sets, device)
    shown = [d for d in diags.items if d.severity >= threshold]
    errors = len(diags.at_least(Level.ERROR))
    warnings = len(diags.at_least(Level.WARN)) - errors
    failed = strict and errors + warnings > 0
    if as_json:
        click.echo(
            views.dumps(
                {
                    "engines": engines,
                    "diagnostics": [d.as_dict() for d in shown],
                    "errors": errors,
                    "warnings": warnings,
                }
            ),
            nl=False,
        )
        if failed:
            raise SystemExit(1)
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
                    f"[{', '.join(kernel['arch']) or 'any arch'}]  {values}{_source_text(kernel)}"
                )
        base = device_base(device or "")
        for pack in engine["dropped_packs"]:  # only with --device
            click.echo(
                f"  dropped for {device}: pack {pack['name']}  {pack['id']}  installed for "
                f"[{', '.join(pack['arch'])}] only: no {base} kernel is installed"
            )
        for pack in engine["other_arch_shards"]:  # only with --device
            click.echo(
                f"  not for {device}: the [{', '.join(pack['arch'])}] shard of pack "
                f"{pack['name']}  {pack['id']} ({base} loads its own shard, above)"
            )
    if not engines:
        click.echo("no engines")
    for diagnostic in shown:
        click.echo(f"{diagnostic.severity.name} {diagnostic.code}: {diagnostic.message}", err=True)
    summary = f"{len(engines)} engine(s); {errors} ERROR and {warnings} WARN diagnostic(s)"
    if failed:
        click.echo(f"error: {summary}, and --strict makes warnings errors", err=True)
        raise SystemExit(1)
    click.echo(summary)


def _source_text(kernel: dict[str, Any]) -> str:
    if kernel["source"] != "kpack":
        return ""
    return (
        f"  kpack {os.path.basename(kernel['library'])}#{kernel['toc_key']} "
        f"sha256 {kernel['sha256'][:12]}… verified"
    )


@click.command("lint")
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(),
    required=True,
    help="A descriptor tree; repeatable.",
)
@click.option(
    "--authored",
    is_flag=True,
    help="The roots are authored sources, what 'descriptors pack --descriptors' reads: "
    "a pack may declare no kernels, as the kernel list fills it.",
)
@click.option("--symbols", type=click.Path(dir_okay=False), help="Symbol registry file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@max_object_size_option
@reports_errors
def lint_command(
    roots: tuple[str, ...],
    authored: bool,
    symbols: str | None,
    as_json: bool,
    max_object_size: int,
) -> None:
    """Check every file against the shipped JSON Schemas, report the lowest version each
    needs, then run the loader; exit 1 on any ERROR or on an arch that is no AMDGPU
    processor (WARN D217).

    Without --authored the roots are installed trees (what 'descriptors pack'
    writes, what a provider loads); with it, authored sources (its --descriptors
    input), in which a pack may leave its kernels to the kernel list. A --root that
    is not a directory is an error. Without --symbols no symbol is checked, and the
    last line says so (D510; "symbols_checked": false in --json).
    """
    from gfxpack import views
    from gfxpack.descriptors.lint import lint

    _directories("--root", roots)
    result = lint([os.fspath(r) for r in roots], _registry(symbols), max_object_size, authored)
    if not result.files:
        raise GfxpackError(f"{_nothing_under(roots)}: nothing checked")
    errors = result.problems
    if as_json:
        click.echo(views.dumps(result.as_dict()), nl=False)
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
        kind = " (authored sources)" if authored else ""
        # The verdict stays the last word; what it does not cover is said just before it.
        unchecked = "".join(
            f", symbols not checked ({d.code}: no --symbols given)" for d in result.unchecked
        )
        click.echo(
            f"{len(result.files)} files{kind}, {engines} engine(s) loaded{unchecked}: "
            f"{'FAILED' if result.failed else 'OK'}"
        )
    if result.failed:
        raise SystemExit(1)
