"""gfxpack kpack: create, list, extract and verify .kpack device-code archives."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gfxpack.cli.common import max_object_size_option, reports_errors
from gfxpack.errors import GfxpackError

if TYPE_CHECKING:
    from gfxpack import kpack

# The archive library (msgpack, zstandard) is imported by each command when it runs,
# so --help and shell completion do not load it; these mirror its defaults (a test
# checks that they do).
SCHEMES = ("none", "zstd")
DEFAULT_LEVEL = 3


@click.group("kpack")
def kpack_group() -> None:
    """Create, list, extract and verify .kpack device-code archives."""


def _open(archive: str, max_object_size: int) -> kpack.KpackReader:
    from gfxpack import kpack

    return kpack.KpackReader.open(archive, max_object_size)


def _read_input(key: str, path: Path, arch: str) -> tuple[str, bytes]:
    from gfxpack import kpack

    try:
        return key, kpack.read_code_object(path, arch, claimed="--arch")
    except OSError as e:
        raise GfxpackError(f"{path}: cannot read: {e.strerror or e}") from None


def _kernel_inputs(arguments: tuple[str, ...]) -> list[tuple[str, Path]]:
    """FILE or FILE=TOCKEY; the key defaults to the path as given."""
    inputs: dict[str, Path] = {}
    for argument in arguments:
        path, key = argument, argument
        if not os.path.exists(argument) and "=" in argument:
            path, key = argument.split("=", 1)
        if not os.path.exists(path):
            raise GfxpackError(f"{path}: no such file (give FILE or FILE=TOCKEY)")
        if not os.path.isfile(path):
            raise GfxpackError(f"{path}: not a regular file (give a code-object file)")
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
    type=click.Choice(SCHEMES),
    help="zstd: one independent zstd frame per code object; none: stored raw.",
)
@click.option(
    "--level",
    default=DEFAULT_LEVEL,
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
    Every FILE must be an AMDGPU code object for --arch (ELF64, EM_AMDGPU, HSA, its
    e_flags naming the processor, as split checks): --arch is one processor or
    generic target (gfx942, gfx9-4-generic), with features (gfx90a:xnack+) when
    the objects must carry them; a family such as gfx94X-dcgpu is refused.
    The archive is written to a temporary name and renamed when complete.
    """
    from gfxpack import amdgpu, kpack

    problem = amdgpu.processor_problem(arch, generic=True, features=True)
    if problem:
        raise GfxpackError(f"--arch {problem}")
    inputs = _kernel_inputs(files)
    _check_folder(Path(out))
    read = (_read_input(key, path, arch) for key, path in inputs)
    try:
        kpack.write_kpack(out, read, group, arch, compression, level)
    except OSError as e:
        raise GfxpackError(f"cannot write {out}: {e.strerror or e}") from None
    raw = sum(path.stat().st_size for _, path in inputs)
    click.echo(
        f"wrote {out}: {len(inputs)} code objects, {raw:,} bytes in "
        f"{os.path.getsize(out):,} bytes ({kpack.SCHEMES[compression]})"
    )


@kpack_group.command("list")
@click.argument("archive", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@max_object_size_option
@reports_errors
def kpack_list(archive: str, as_json: bool, max_object_size: int) -> None:
    """List the code objects of an archive with their sizes and sha256 digests.

    Every object is decompressed to compute its digest (each shared frame once),
    and rows are printed as they are computed: memory stays bounded by the largest
    object, not the archive. A digest that differs from the one the TOC records is
    an error after the listing.
    """
    with _open(archive, max_object_size) as reader:
        rows = reader.verified()
        if as_json:
            _list_json(reader, rows)
        else:
            _list_text(archive, reader, rows)


def _list_json(reader: kpack.KpackReader, rows: Iterator[tuple[kpack.Kernel, str]]) -> None:
    """One JSON document, written an object at a time."""
    head = {"group": reader.group, "arches": reader.arches, "compression": reader.compression}
    out = _Echo()
    out.write(json.dumps(head, indent=2)[:-2] + ',\n  "kernels": [')
    separator = "\n"
    for kernel, digest in rows:
        entry = {
            "toc_key": kernel.toc_key,
            "arch": kernel.arch,
            "size": kernel.original_size,
            "sha256": digest,
        }
        out.write(separator + "    " + json.dumps(entry, ensure_ascii=False))
        separator = ",\n"
    out.write("\n  ]\n}\n" if separator != "\n" else "]\n}\n")


class _Echo:
    def write(self, text: str) -> None:
        click.echo(text, nl=False)


def _list_text(
    archive: str, reader: kpack.KpackReader, rows: Iterator[tuple[kpack.Kernel, str]]
) -> None:
    """A header line, then one line per object: sha256, arch, size, key (the key last,
    since it is the only column of unbounded width)."""
    click.echo(
        f"{archive}: group {reader.group}, {reader.compression}, {len(reader.kernels)} code objects"
    )
    width = max((len(k.arch) for k in reader.kernels), default=4)
    click.echo(f"{'sha256':64}  {'arch':{width}}  {'size':>13}  TOC key")
    for kernel, digest in rows:
        click.echo(
            f"{digest}  {kernel.arch:{width}}  {kernel.original_size:>13,}  {kernel.toc_key}"
        )


@kpack_group.command("extract")
@click.argument("archive", type=click.Path(dir_okay=False))
@click.argument("toc_key")
@click.option("--arch", help="Which arch, when the key exists for several.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write here, atomically (default: standard output, when it is not a terminal).",
)
@max_object_size_option
@reports_errors
def kpack_extract(
    archive: str, toc_key: str, arch: str | None, output: str | None, max_object_size: int
) -> None:
    """Extract one code object, decompressing nothing else."""
    if output is None and sys.stdout.isatty():
        raise GfxpackError("refusing to write a binary code object to a terminal: use -o FILE")
    with _open(archive, max_object_size) as reader:
        code = reader.read(toc_key, arch)
    if output is None:
        sys.stdout.buffer.write(code)
        sys.stdout.flush()
        return
    _write_atomically(Path(output), code)


def _check_folder(path: Path) -> None:
    """An output's directory must exist: say which one is missing, not just ENOENT."""
    folder = path.absolute().parent
    if not folder.is_dir():
        why = "is not a directory" if folder.exists() else "does not exist"
        raise GfxpackError(f"cannot write {path}: {folder} {why}")


def _write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary name beside ``path``, then rename: never a half-written file."""
    from gfxpack._io import write_atomically

    try:
        write_atomically(path, data)
    except OSError as e:
        _check_folder(path)
        raise GfxpackError(f"cannot write {path}: {e.strerror or e}") from None


@kpack_group.command("verify")
@click.argument("archives", nargs=-1, required=True, type=click.Path(dir_okay=False))
@max_object_size_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@reports_errors
def kpack_verify(archives: tuple[str, ...], max_object_size: int, as_json: bool) -> None:
    """Check each archive's structure and every code object's content.

    Structure: the header, the whole TOC, every blob range and frame, every
    object decompressed and its size compared with original_size. Content: when
    the TOC records a sha256 per object (gfxpack's writer does), each object's
    digest is recomputed and compared, for both compression schemes; an archive
    without digests has its structure checked and says so. Exit status 1 when
    any archive fails.
    """
    results = [_verify_one(archive, max_object_size) for archive in archives]
    if as_json:
        click.echo(json.dumps({"archives": results}, indent=2, ensure_ascii=False))
    else:
        for result in results:
            if result["ok"]:
                click.echo(f"{result['archive']}: OK, {result['summary']}")
            else:
                click.echo(f"error: {result['error']}", err=True)
    if not all(result["ok"] for result in results):
        sys.exit(1)


def _verify_one(archive: str, max_object_size: int) -> dict[str, Any]:
    from gfxpack import kpack

    result: dict[str, Any] = {"archive": archive, "ok": False}
    try:
        with _open(archive, max_object_size) as reader:
            count = len(reader.verify())
            recorded = sum(k.sha256 is not None for k in reader.kernels)
            result.update(
                ok=True,
                compression=reader.compression,
                code_objects=count,
                digests_recorded=recorded,
            )
    except kpack.InvalidKpack as e:
        result["error"] = str(e)
        return result
    if recorded == count:
        content = "every sha256 matches the TOC" if count else "no code objects"
    elif recorded == 0:
        content = "no digests recorded: structure, frames and sizes checked, content not"
    else:
        content = f"{recorded} of {count} sha256 digests recorded and matching"
    result["summary"] = f"{count} code objects ({result['compression']}); {content}"
    return result


from gfxpack.cli.resolve_cmd import kpack_resolve  # noqa: E402

kpack_group.add_command(kpack_resolve)
