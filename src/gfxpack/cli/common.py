"""What every command shares: error reporting, target lists, release options, notes."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

import click

from gfxpack.errors import GfxpackError
from gfxpack.formats import FORMATS, PackageFormat, format_named
from gfxpack.plan import Mode, PinPolicy, PlanOptions, ReleasePlan, Severity

P = ParamSpec("P")
R = TypeVar("R")
SEPARATORS = re.compile(r"[\s,;]+")
FORMAT_NAMES = [fmt.name for fmt in FORMATS]


def as_format(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> PackageFormat | None:
    """A --format / --pkg-type choice (click.Choice(FORMAT_NAMES)) as its format."""
    return None if value is None else format_named(value)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """A GfxpackError becomes ``error: ...`` lines and exit 1; Ctrl-C exit 130."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except GfxpackError as e:
            for line in str(e).splitlines() or [type(e).__name__]:
                click.echo(f"error: {line}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("error: interrupted; nothing partial was left behind", err=True)
            sys.exit(130)

    return wrapper


def split_list(values: tuple[str, ...]) -> list[str]:
    """Repeatable options that also take comma, space or ';' separated lists."""
    return [item for value in values for item in SEPARATORS.split(value) if item]


def release_options(command: Callable[P, R]) -> Callable[P, R]:
    """The options that shape a release plan, shared by plan and build."""
    options = [
        click.option(
            "--config",
            "config_path",
            required=True,
            type=click.Path(dir_okay=False),
            help="TheRock package.json (a JSON array of base packages).",
        ),
        click.option(
            "--rocm-version", required=True, help="Release version, e.g. 8.2.0 (names use 8.2)."
        ),
        click.option(
            "--release",
            default="1",
            show_default=True,
            help="Package release / revision: DEB version V-R, RPM Release R.",
        ),
        click.option(
            "--pin-policy",
            default="family",
            show_default=True,
            type=click.Choice([p.value for p in PinPolicy]),
            help="family: '=' within a family and from metas, '>=' elsewhere; exact; "
            "minimum; upstream: only metapackages pin.",
        ),
        click.option(
            "--build-variant",
            default="",
            type=click.Choice(["", "asan"]),
            help="asan: -asan names and the core-asan-X.Y prefix.",
        ),
        click.option(
            "--install-prefix", default=None, help="Install prefix [default: /opt/rocm/core-X.Y]."
        ),
        click.option(
            "--allow-missing-deps",
            is_flag=True,
            help="Omit amdrocm dependencies that are undefined or disabled, with a "
            "warning, instead of failing.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def plan_options(
    mode: str,
    pin_policy: str,
    build_variant: str,
    install_prefix: str | None,
    allow_missing_deps: bool,
) -> PlanOptions:
    return PlanOptions(
        mode=Mode(mode),
        pin_policy=PinPolicy(pin_policy),
        variant=build_variant,
        install_prefix=install_prefix,
        missing_dependencies="warn" if allow_missing_deps else "error",
    )


def print_notes(warnings: Iterable[str], release_plan: ReleasePlan, verbose: bool = False) -> None:
    """Config warnings and plan notes on stderr (informational ones only if verbose)."""
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    for note in release_plan.notes:
        if note.severity is Severity.WARNING or verbose:
            click.echo(f"{note.severity}: {note.message}", err=True)
