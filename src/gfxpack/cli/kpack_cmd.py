"""gfxpack kpack: create, list, extract and verify .kpack device-code archives."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from gfxpack import kpack, views
from gfxpack.cli import cli
from gfxpack.cli.common import reports_errors
from gfxpack.errors import GfxpackError
from gfxpack.plan.naming import TARGET


@cli.group("kpack")
def kpack_group() -> None:
    """Create, list, extract and verify .kpack device-code archives."""


def _kernel_inputs(arguments: tuple[str, ...]) -> list[tuple[str, Path]]:
    """FILE or FILE=TOCKEY; the key defaults to the path as given."""
    inputs: dict[str, Path] = {}
    for argument in arguments:
        path, key = argument, argument
        if not os.path.exists(argument) and "=" in argument:
            path, key = argument.split("=", 1)
        if not os.path.isfile(path):
            raise GfxpackError(f"{path}: no such file (give FILE or FILE=TOCKEY)")
        if not key:
            raise GfxpackError(f"{argument}: empty TOC key after '='")
        if key in inputs:
            raise GfxpackError(f"TOC key {key!r} given twice ({inputs[key]} and {path})")
        inputs[key] = Path(path)
    # Sorted keys: the same inputs in any order give the same archive.
    return sorted(inputs.items())


@kpack_group.command("create")
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("files", nargs=-1, required=True, metavar="FILE[=TOCKEY]...")
@click.option("--group", required=True, help="Group name, e.g. the artifact prefix blas_lib.")
@click.option("--arch", required=True, help="The architecture of every code object, e.g. gfx942.")
@click.option(
    "--compression",
    default="zstd",
    show_default=True,
    type=click.Choice(sorted(kpack.SCHEMES)),
    help="zstd: one independent zstd frame per code object; none: stored raw.",
)
@click.option(
    "--level",
    default=kpack.DEFAULT_LEVEL,
    show_default=True,
    type=click.IntRange(1, 22),
    help="zstd level.",
)
@reports_errors
def kpack_create(
    out: str, files: tuple[str, ...], group: str, arch: str, compression: str, level: int
) -> None:
    """Write OUT.kpack from code-object files.

    Each FILE is stored under its path as given, or under TOCKEY with
    FILE=TOCKEY (TheRock keys look like math-libs/BLAS/stage/lib/librocblas.so#0).
    The archive is written to a temporary name and renamed when complete.
    """
    if not TARGET.match(arch):
        raise GfxpackError(f"--arch {arch!r}: expected a GPU architecture such as gfx942")
    inputs = _kernel_inputs(files)
    kpack.write_kpack(out, inputs, group, arch, compression, level)
    raw = sum(path.stat().st_size for _, path in inputs)
    click.echo(
        f"wrote {out}: {len(inputs)} code objects, {raw:,} bytes in "
        f"{os.path.getsize(out):,} bytes ({kpack.SCHEMES[compression]})"
    )


@kpack_group.command("list")
@click.argument("archive", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@reports_errors
def kpack_list(archive: str, as_json: bool) -> None:
    """List the code objects of an archive with their sizes and sha256 digests."""
    with kpack.KpackReader.open(archive) as reader:
        verified = reader.verify()
        if as_json:
            click.echo(
                views.dumps(
                    {
                        "group": reader.group,
                        "arches": reader.arches,
                        "compression": reader.compression,
                        "kernels": [
                            {
                                "toc_key": k.toc_key,
                                "arch": k.arch,
                                "size": k.original_size,
                                "sha256": digest,
                            }
                            for k, digest in verified
                        ],
                    }
                ),
                nl=False,
            )
            return
        table = Table(
            "TOC key",
            "arch",
            "size",
            "sha256",
            title=(
                f"{archive}: group {reader.group}, {reader.compression}, "
                f"{len(verified)} code objects"
            ),
        )
        for kernel, digest in verified:
            table.add_row(kernel.toc_key, kernel.arch, f"{kernel.original_size:,}", digest)
        Console(width=200).print(table)


@kpack_group.command("extract")
@click.argument("archive", type=click.Path(dir_okay=False))
@click.argument("toc_key")
@click.option("--arch", help="Which arch, when the key exists for several.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write here (default: standard output, when it is not a terminal).",
)
@reports_errors
def kpack_extract(archive: str, toc_key: str, arch: str | None, output: str | None) -> None:
    """Extract one code object, decompressing nothing else."""
    with kpack.KpackReader.open(archive) as reader:
        code = reader.read(toc_key, arch)
    if output:
        Path(output).write_bytes(code)
    elif sys.stdout.isatty():
        raise GfxpackError("refusing to write a binary code object to a terminal: use -o FILE")
    else:
        sys.stdout.buffer.write(code)
        sys.stdout.flush()


@kpack_group.command("verify")
@click.argument("archives", nargs=-1, required=True, type=click.Path(dir_okay=False))
@reports_errors
def kpack_verify(archives: tuple[str, ...]) -> None:
    """Check every code object of each archive: structure, frames and sizes."""
    for archive in archives:
        with kpack.KpackReader.open(archive) as reader:
            count = len(reader.verify())
            click.echo(f"{archive}: OK, {count} code objects ({reader.compression})")
