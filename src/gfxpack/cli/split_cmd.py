"""gfxpack split / join: fat ROCm binaries into host and per-arch .kpack artifacts, and back."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import click

from gfxpack.cli.common import ByteSize, max_object_size_option, reports_errors
from gfxpack.cli.progress import terminal_progress

if TYPE_CHECKING:
    from rich.table import Table

    from gfxpack.fatbin.split import SplitReport

# The bound of the wheel reader (gfxpack.wheels.archive.DEFAULT_MAX_WHEEL_SIZE, not
# imported: --help imports nothing but click).
MAX_UNPACKED = 32 << 30


def max_unpacked_size_option(command: Any) -> Any:
    return click.option(
        "--max-unpacked-size",
        type=ByteSize(),
        default=MAX_UNPACKED,
        show_default="32G",
        help="Wheels only: refuse a wheel whose members declare more bytes than this, "
        "before unpacking any (a member is never read past what it declares).",
    )(command)


# Each command imports what it needs when it runs: a split's wall time is the
# benchmark, and start-up is part of it (rich and the JSON helpers of the views
# are not needed for --json; join's module not for split).


@click.command("split")
@click.argument("source", metavar="IN", type=click.Path(exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option(
    "--name",
    metavar="NAME_COMPONENT",
    help="Artifact name for an install tree (an unpacked .deb, an /opt/rocm copy), "
    "e.g. sparse_lib. Not used for a TheRock artifacts directory.",
)
@click.option(
    "--kpack-dir",
    metavar="REL",
    help="Where the archives go inside the tree [default: .kpack], "
    "e.g. usr/lib/x86_64-linux-gnu/.kpack.",
)
@click.option(
    "-j", "--jobs", default=os.cpu_count() or 1, show_default="the number of cores",
    type=click.IntRange(1, 256), help="Archives compressed at once.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Replace OUT if it is an earlier split's output.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "-q", "--quiet", is_flag=True, help="Print errors and one summary line only: no notes or table."
)
@click.option(
    "--index",
    "published",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False),
    help="Wheels only: an index 'gfxpack index' wrote (or a directory of split wheels). "
    "A wheel requiring a split distribution found there passes its device extras on to "
    "it, as to one split in the same run.",
)
@max_object_size_option
@max_unpacked_size_option
@reports_errors
def split(
    source: str,
    out: str,
    name: str | None,
    kpack_dir: str | None,
    jobs: int,
    force: bool,
    as_json: bool,
    quiet: bool,
    published: str | None,
    max_object_size: int,
    max_unpacked_size: int,
) -> None:
    """Split the fat binaries of IN into host files and one .kpack archive per GPU arch.

    IN is a TheRock artifacts directory (fat <name>_<component>_<target>
    directories) or any install tree given --name. Every ELF file with device
    code keeps its host code and gets a reference that ROCm's kpack runtime
    follows to the archive of the device's arch; files named for one arch move
    to that arch's artifact; everything else is hard-linked. The output is
    written under a temporary name and renamed when complete; the same input
    gives the same bytes. 'gfxpack join' puts the original back.

    IN may also be a wheel (.whl) or a directory of wheels: each becomes a host
    wheel (extras device-<arch> and device-all) and one data-only device wheel
    per GPU arch, written to OUT. A wheel requiring another distribution split
    in the same run (or found in --index) passes each device-<arch> extra on:
    installing it for one arch installs that arch's device code of both.
    """
    from gfxpack.wheels.archive import is_wheel_input

    if is_wheel_input(source):
        _split_wheels(
            source,
            out,
            (jobs, force, published),
            (max_object_size, max_unpacked_size),
            (as_json, quiet),
        )
        return
    from gfxpack.fatbin.split import split_tree

    report = split_tree(source, out, name, kpack_dir, jobs, force, max_object_size)
    if as_json:
        # The format of gfxpack's other --json outputs (views.dumps), without importing them.
        click.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False) + "\n", nl=False)
        return
    if quiet:
        click.echo(summary_line(report))
        return
    from rich.console import Console

    for note in report.notes:
        click.echo(f"note: {note}", err=True)
    Console(width=120).print(summary_table(report))


def _split_wheels(
    source: str,
    out: str,
    how: tuple[int, bool, str | None],
    limits: tuple[int, int],
    printing: tuple[bool, bool],
) -> None:
    from pathlib import Path

    from gfxpack.wheels.split import split_wheels

    jobs, force, published = how
    as_json, quiet = printing
    with terminal_progress(quiet or as_json, "reading") as on_step:
        results = split_wheels(
            source,
            out,
            jobs,
            force,
            *limits,
            on_step=on_step,
            published=Path(published) if published is not None else None,
        )
    if as_json:
        wheels = [vars(result) for result in results]
        click.echo(json.dumps({"out": out, "wheels": wheels}, indent=2, ensure_ascii=False))
        return
    for result in results:
        if not quiet:
            for note in result.notes:
                click.echo(f"note: {note}", err=True)
        devices = len(result.devices)
        click.echo(
            f"{os.path.join(out, result.host)}: host wheel"
            + (f", {_count(devices, 'device wheel', 'device wheels')}" if devices else "")
            + sizes_text(result.sizes)
        )


def sizes_text(sizes: dict[str, Any]) -> str:
    """'; download A fat, B host + gfx942; installed C fat, D host + gfx942' (nothing
    for a wheel without device wheels): what one GPU's install costs, at worst."""
    from gfxpack.units import decimal

    one = sizes.get("host_and_one_arch")
    if one is None:
        return ""
    return "".join(
        f"; {what} {decimal(sizes['fat'][what])} fat, {decimal(one[what])} host + {one['arch']}"
        for what in ("download", "installed")
    )


def summary_line(report: SplitReport) -> str:
    """The summary of --quiet: what was written, and how many notes it did not print."""
    line = (
        f"{report.out}: {_count(report.binaries, 'fat binary', 'fat binaries')} split, "
        f"archives for {_count(len(report.arches), 'GPU arch', 'GPU archs')}"
    )
    if report.notes:
        line += f" ({_count(len(report.notes), 'note', 'notes')}: run without -q to see them)"
    return line


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def summary_table(report: SplitReport) -> Table:
    from rich.table import Table

    from gfxpack.plan.targets import target_order

    table = Table("part", "files", "bytes", "archive", title=f"{report.out}")
    table.add_row(
        "fat binaries", str(report.binaries), f"{report.fat_bytes:,}", "", end_section=True
    )
    table.add_row("host parts", str(report.binaries), f"{report.host_bytes:,}", "")
    for arch, totals in sorted(report.arches.items(), key=lambda a: target_order(a[0])):
        table.add_row(
            arch,
            f"{totals.code_objects} code objects"
            + (f", {totals.data_files} data files" if totals.data_files else ""),
            f"{totals.code_bytes + totals.data_bytes:,}",
            f"{totals.archive_bytes:,}",
        )
    if report.fat_bytes:
        largest = max((t.archive_bytes + t.data_bytes for t in report.arches.values()), default=0)
        one_arch = report.host_bytes + largest
        table.caption = (
            f"host + largest arch: {one_arch:,} bytes, "
            f"{100 * (1 - one_arch / report.fat_bytes):.1f} % less than the fat binaries"
        )
    return table


@click.command("join")
@click.argument("split_dir", metavar="SPLIT", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print what was joined as JSON.")
@max_object_size_option
@max_unpacked_size_option
@reports_errors
def join(
    split_dir: str,
    out: str,
    force: bool,
    as_json: bool,
    max_object_size: int,
    max_unpacked_size: int,
) -> None:
    """Rebuild the input of 'gfxpack split' from its output, byte for byte.

    Each host file gets its device code back from the archives; every joined
    binary is checked against the sha256 its original had, and the other files are
    copied from SPLIT. Nothing SPLIT's record names is followed or written outside
    OUT: paths must stay inside SPLIT and OUT, symlinks are never followed, and a
    symlink is recreated only when it points inside OUT.

    SPLIT may also be a directory of split wheels: each host wheel and its device
    wheels give back the original wheel in OUT. Every file it installs (RECORD
    included) is identical to the original's; the zip container (member order,
    times, compression) may differ.
    """
    from gfxpack.wheels.archive import is_wheel_input

    if is_wheel_input(split_dir):
        from gfxpack.wheels.join import join_wheels

        with terminal_progress(as_json, "reading") as on_step:
            joined = join_wheels(
                split_dir, out, force, max_object_size, max_unpacked_size, on_step=on_step
            )
        if as_json:
            wheels = [vars(result) for result in joined]
            click.echo(json.dumps({"out": out, "wheels": wheels}, indent=2, ensure_ascii=False))
            return
        for result in joined:
            click.echo(
                f"wrote {os.path.join(out, result.source)}: every file identical to the "
                f"original's (sha256){sizes_text(result.sizes)}"
            )
        return
    from gfxpack.fatbin.join import join_tree

    binaries = join_tree(split_dir, out, force, max_object_size)
    if as_json:
        click.echo(json.dumps({"out": out, "binaries": binaries}, indent=2))
        return
    click.echo(
        f"wrote {out}: {binaries} binaries joined, each checked identical to its original "
        "(sha256); the other files are copies of the split's"
    )
