"""gfxpack diff: what changed between two releases (plans, builds or repositories)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import (
    FORMAT_NAMES,
    MODES,
    PIN_POLICIES,
    as_format,
    plan_options,
    reports_errors,
    split_list,
    terminal_line,
)
from gfxpack.cli.error_output import INVALID_INPUT, json_error, print_json_error
from gfxpack.errors import GfxpackError

if TYPE_CHECKING:
    from gfxpack.formats import PackageFormat
    from gfxpack.plan import ReleasePlan

# Exit statuses of diff(1): no differences, differences (with --exit-code), trouble.
SAME, DIFFERENT, TROUBLE = 0, 1, 2


@click.command("diff")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    default="deb",
    show_default=True,
    type=click.Choice(FORMAT_NAMES),
    callback=as_format,
    help="Which format's packages to compare (names, dependencies, files and sizes differ).",
)
@click.option("--suite", help="apt suite of a repository that has more than one.")
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@click.option(
    "--exit-code",
    is_flag=True,
    help="Exit 1 when there are differences, 0 when there are none (as diff does).",
)
@click.option(
    "--ignore-version",
    is_flag=True,
    help="With --exit-code: exit 0 when only the version differs (the same packages, "
    "dependencies, files and contents).",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    help="For a package.json: the GPU targets to plan (comma-separated; repeatable).",
)
@click.option("--rocm-version", help="For a package.json: the release version, e.g. 8.2.0.")
@click.option("--release", default="1", show_default=True, help="For a package.json.")
@click.option(
    "--pin-policy",
    default="family",
    show_default=True,
    type=click.Choice(PIN_POLICIES),
    help="For a package.json.",
)
@click.option(
    "--mode",
    default="kpack",
    show_default=True,
    type=click.Choice(MODES),
    help="For a package.json.",
)
@reports_errors
def diff_command(
    old: Path,
    new: Path,
    fmt: PackageFormat,
    suite: str | None,
    as_json: bool,
    exit_code: bool,
    ignore_version: bool,
    targets: tuple[str, ...],
    rocm_version: str | None,
    release: str,
    pin_policy: str,
    mode: str,
) -> None:
    """Compare two releases: packages added and removed, dependencies changed,
    files added, removed and changed (by digest) in each package, files moved
    between packages, and sizes per package and per GPU arch.

    OLD and NEW are each a plan (a `plan --format json` file, or a package.json
    with --target and --rocm-version), a build directory (gfxpack build --out,
    read through its index.json) or a repository (gfxpack repo --out, or one
    apt or rpm-md repository; the newest version of each package). The
    version is taken out wherever it shows: a dependency pinned to its own
    release, such as (= 8.2.0-1) against (= 8.2.1-1), a name or a path with
    the X.Y (amdrocm-blas8.2 and amdrocm-blas8.3) are the same. Two releases
    that differ in nothing else print one line saying so. Plans have no files
    or sizes: those are compared only when both sides have them.

    \b
    Exit status: 0, or with --exit-code 0 when nothing differs and 1 when
    something does (the version alone too, unless --ignore-version); 2 on
    errors.
    """
    from gfxpack import diff as diff_module
    from gfxpack import inventory
    from gfxpack.config import load_config
    from gfxpack.plan import plan

    chosen_targets = split_list(targets)

    def planner(config_path: Path) -> ReleasePlan:
        if not chosen_targets or not rocm_version:
            raise GfxpackError(
                f"{config_path}: a package.json needs the release to plan: add --target "
                "and --rocm-version"
            )
        options = plan_options(mode, pin_policy, "", None, False)
        config = load_config(config_path)
        return plan(config.packages, chosen_targets, rocm_version, release, options)

    try:
        result = diff_module.compare(
            inventory.load(old, fmt, planner, suite), inventory.load(new, fmt, planner, suite)
        )
    except GfxpackError as e:
        if as_json:
            print_json_error(json_error(str(e), INVALID_INPUT))
            sys.exit(TROUBLE)
        for line in str(e).splitlines():
            click.echo(f"error: {terminal_line(line)}", err=True)
        sys.exit(TROUBLE)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(diff_module.text(result), nl=False)
    differs = result.changed and not (ignore_version and result.version_only)
    sys.exit(DIFFERENT if exit_code and differs else SAME)
