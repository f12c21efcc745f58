"""gfxpack build: every package of a release as .deb and .rpm files."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import click

from gfxpack.cli.common import (
    MODES,
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
    from gfxpack.build import BuiltFile
    from gfxpack.plan import ReleasePlan

    OnBuilt = Callable[[BuiltFile, int, int], None]

# gfxpack.formats.compress.Compression()'s, spelled here as the other choices are in
# cli/common.py (a test checks that they agree).
DEFAULT_COMPRESSION = "zstd:9"


@click.command("build")
@release_options
@click.option(
    "--artifacts",
    required=True,
    type=click.Path(file_okay=False),
    help="Artifacts directory: <name>_<component>_<target>/ with artifact_manifest.txt.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Where packages and index.json go (created if missing).",
)
@click.option(
    "--format", "formats", default="deb,rpm", show_default=True, help="deb, rpm or deb,rpm."
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    help="GPU targets (default: every target the artifacts hold).",
)
@click.option(
    "--compression",
    default=DEFAULT_COMPRESSION,
    show_default=True,
    help="zstd[:1-22], xz[:0-9], gzip[:0-9] or none.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=os.cpu_count() or 1,
    show_default=True,
    help="Packages built at once (processes).",
)
@click.option(
    "--mode",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", *MODES]),
    help="auto: kpack when a therock_manifest.json sets KPACK_SPLIT_ARTIFACTS, else single-arch.",
)
@click.option(
    "--changelog",
    "changelog_path",
    type=click.Path(dir_okay=False),
    help="RPM %changelog entries for every RPM, written as in a spec file "
    "('* Tue Dec 01 2026 Name <email> - 8.2.1-1' lines, then '- change' lines). "
    "Default: one entry generated from the version and the maintainer.",
)
@click.option(
    "--sign-key",
    metavar="FPR",
    help="gpg key (fingerprint or user id) that signs every .rpm (its header, which "
    "records the payload's digest, as rpmsign does); .deb files stay unsigned. gpg's "
    "GNUPGHOME applies.",
)
@click.option(
    "--shard",
    "shard",
    metavar="K/N|generic",
    help="Build one shard of the release: K/N is the K-th of N shards of about equal "
    "payload bytes (the same cut on every machine); generic is every package that "
    "belongs to no GPU target. Merge the shards' OUTs with gfxpack merge.",
)
@click.option(
    "--shard-by-target",
    "shard_targets",
    multiple=True,
    metavar="TARGETS",
    help="Build only the device packages of these targets (such as gfx942,gfx950): what "
    "a machine holding only their per-arch artifacts can build.",
)
@click.option(
    "--release-artifacts",
    type=click.Path(dir_okay=False),
    help="Plan from this list of the release's artifact directory names (one a line, "
    "such as ls ARTIFACTS prints on a machine that has them all), not from the "
    "directories in --artifacts: for a shard whose machine holds only its own artifacts "
    "(give it --mode kpack too: auto reads the generic artifacts).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="local: a process pool on this machine (-j). dask: the Dask cluster at "
    "--scheduler; its workers must see --artifacts and --out at the same paths "
    "(start them with: dask worker ADDRESS --preload gfxpack.dask_executor).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="The Dask scheduler of --executor dask, such as tcp://HOST:8786.",
)
@click.option(
    "--scheduler-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds to wait for the Dask scheduler to answer, and for a worker while its "
    "cluster has none (none started yet, or all gone): then the build ends with an error.",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print errors and one summary line only: no notes, progress or table.",
)
@strict_option
@waivers_option
@reports_errors
def build_command(
    config_path: str,
    rocm_version: str,
    release: str,
    pin_policy: str,
    build_variant: str,
    install_prefix: str | None,
    allow_missing_deps: bool,
    artifacts: str,
    out: str,
    formats: str,
    targets: tuple[str, ...],
    compression: str,
    jobs: int,
    mode: str,
    changelog_path: str | None,
    sign_key: str | None,
    shard: str | None,
    shard_targets: tuple[str, ...],
    release_artifacts: str | None,
    executor: str,
    scheduler: str | None,
    scheduler_timeout: float,
    quiet: bool,
    strict: bool,
    waivers_path: str | None,
) -> None:
    """Build every package of the release as .deb and .rpm files.

    Packages are written in parallel, each under a temporary name and renamed
    when complete; OUT/index.json lists every file with its sha256. OUT then
    holds exactly this build: files an earlier build wrote there that this one
    does not produce are removed, files gfxpack did not write are left alone
    (both are reported). Builds are reproducible: SOURCE_DATE_EPOCH (default
    2024-01-01) sets every timestamp, modes are normalised (0755 directories,
    0644 or 0755 files).

    A release too big for one machine is built in shards (--shard, --shard-by-target),
    each into its own OUT, then joined by gfxpack merge; the result is the same files,
    byte for byte, as one machine's build. --executor dask runs the packages on a Dask
    cluster instead of local processes.
    """
    # The pipeline (process pools, archive writers) only when a build runs: --help and
    # shell completion do not load it.
    from gfxpack import build as build_module
    from gfxpack.artifact_layout import read_artifact_names
    from gfxpack.formats import FORMATS
    from gfxpack.formats.changelog import parse_changelog
    from gfxpack.formats.compress import Compression
    from gfxpack.plan import Mode
    from gfxpack.release import ReleaseOptions, build_release
    from gfxpack.shard import by_targets, parse_shard

    known = {fmt.name: fmt for fmt in FORMATS}
    chosen = tuple(split_list((formats,)))
    if not chosen or any(f not in known for f in chosen):
        raise GfxpackError(f"--format {formats!r}: expected deb, rpm or deb,rpm")
    # Options first: a bad value fails before any scanning or planning.
    if sign_key:
        from gfxpack.formats.openpgp import check_signing_key

        # A key current apt or dnf reject is refused before hours of building.
        check_signing_key(
            sign_key,
            None,
            what=f"--sign-key {sign_key}",
            allow_option="--allow-weak-key to gfxpack sign after a build without --sign-key",
        )
    waivers = load_plan_waivers(waivers_path)
    if shard is not None and shard_targets:
        raise GfxpackError("--shard and --shard-by-target: give one of them")
    if (executor == "dask") != (scheduler is not None):
        raise GfxpackError("--executor dask and --scheduler ADDRESS go together")
    if scheduler is not None:
        # Workers run elsewhere: they must be told absolute paths.
        artifacts, out = os.path.abspath(artifacts), os.path.abspath(out)
    build_options = build_module.BuildOptions(
        formats=tuple(known[name] for name in chosen),
        compression=Compression.parse(compression),
        jobs=jobs,
        epoch=build_module.source_date_epoch(os.environ),
        changelog=parse_changelog(Path(changelog_path)) if changelog_path else (),
        shard=(
            parse_shard(shard)
            if shard is not None
            else by_targets(split_list(shard_targets))
            if shard_targets
            else None
        ),
        scheduler=scheduler,
        scheduler_timeout=scheduler_timeout,
    )
    detect_mode = mode == "auto"
    options = ReleaseOptions(
        rocm_version=rocm_version,
        release=release,
        targets=tuple(split_list(targets)),
        plan=plan_options(
            Mode.KPACK if detect_mode else mode,
            pin_policy,
            build_variant,
            install_prefix,
            allow_missing_deps,
        ),
        detect_mode=detect_mode,
        build=build_options,
        sign_key=sign_key or None,
        artifact_names=(
            None if release_artifacts is None else read_artifact_names(release_artifacts)
        ),
    )
    started = time.perf_counter()

    def notes(release_plan: ReleasePlan, warnings: tuple[str, ...]) -> None:
        print_notes(warnings, release_plan, strict=strict, quiet=quiet, waivers=waivers)
        # SIGTERM stops a build the way Ctrl-C does: jobs killed, partial files removed.
        signal.signal(signal.SIGTERM, _interrupt)

    with _progress(quiet) as on_built:
        _, built = build_release(
            config_path, artifacts, out, options, notes, on_built, None if quiet else _note
        )
    _print_build_summary(built, out, time.perf_counter() - started, quiet)


def _note(message: str) -> None:
    click.echo(f"note: {message}", err=True)


def _interrupt(_signum: int, _frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator[OnBuilt | None]:
    """A progress bar on a terminal; one plain line per package otherwise."""
    if quiet:
        yield None
        return
    if not sys.stderr.isatty():

        def plain(item: BuiltFile, done: int, total: int) -> None:
            click.echo(
                f"[{done}/{total}] {item.file} ({item.size:,} bytes, {item.seconds:.2f} s)",
                err=True,
            )

        yield plain
        return
    # Imported here: only a terminal gets the bar, and pipelines (most builds) should
    # not pay for importing it.
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("building", total=None)

        def bar(item: BuiltFile, done: int, total: int) -> None:
            progress.update(task, total=total, completed=done, description=item.file)

        yield bar


def _print_build_summary(built: list[BuiltFile], out: str, seconds: float, quiet: bool) -> None:
    """One line, then (unless ``quiet``) a table of plain aligned columns, not a drawn
    one: the summary mostly lands in CI logs, and pipelines calling build many times
    should not pay for a table library."""
    click.echo(f"{len(built)} packages in {out} ({seconds:.1f} s wall)")
    if quiet:
        return
    from gfxpack.plan import Kind

    rows = [("kind", "files", "bytes", "job seconds")]
    for kind in Kind:
        items = [b for b in built if b.kind == kind.value]
        if items:
            rows.append(_summary_row(kind.title, items))
    rows.append(_summary_row("total", built))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    for row in rows:
        first, *numbers = row
        cells = [first.ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(numbers, widths[1:], strict=True)]
        click.echo("  ".join(cells).rstrip())


def _summary_row(title: str, items: list[BuiltFile]) -> tuple[str, str, str, str]:
    return (
        title,
        str(len(items)),
        f"{sum(b.size for b in items):,}",
        f"{sum(b.seconds for b in items):.2f}",
    )
