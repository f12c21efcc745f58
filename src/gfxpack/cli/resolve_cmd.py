"""gfxpack kpack resolve: find a split binary's code objects as ROCm's runtime does."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from gfxpack.cli.common import max_object_size_option, reports_errors
from gfxpack.errors import GfxpackError


@click.command("resolve")
@click.argument("binary", type=click.Path(dir_okay=False))
@click.option("--arch", required=True, metavar="TARGET_ID", help="The device, e.g. gfx90a:xnack-.")
@click.option(
    "--out", type=click.Path(file_okay=False), help="Write each code object here as <index>.hsaco."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print JSON for scripts; an error too: {"error": ..., "reason": ...}, exit 1.',
)
@max_object_size_option
@reports_errors
def kpack_resolve(
    binary: str, arch: str, out: str | None, as_json: bool, max_object_size: int
) -> None:
    """Find each code object of a split BINARY for a device, as the kpack runtime would.

    Search paths in the binary are resolved against its directory, @GFXARCH@
    is tried as the full target id, then less specific forms, then the family's
    generic. On split output (before installing), a binary in <name>_generic/
    finds its archives in the sibling artifacts <name>_<arch>/, where installing
    puts them beside it. A missing archive and a missing arch are different
    errors; each says what there is instead (the archives of other arches, the
    target ids an archive holds).

    The runtime's environment applies. ROCM_KPACK_PATH: .kpack files, separated
    by ':', searched instead of the binary's own paths. ROCM_KPACK_PATH_PREFIX:
    .kpack files searched before them. ROCM_KPACK_DISABLE=1: no lookup at all.
    For example, on the output of 'gfxpack split tree --out split --name demo_lib':

    \b
      ROCM_KPACK_PATH=split/demo_lib_gfx90a/stage/.kpack/demo_lib_gfx90a.kpack \\
        gfxpack kpack resolve split/demo_lib_generic/stage/usr/lib/libdemo.so.1 \\
        --arch gfx90a:xnack-
    """
    from gfxpack.fatbin.resolve import ArchiveNotFound, ArchNotFound, ResolveError

    try:
        rows = _resolve(binary, arch, out, max_object_size)
    except GfxpackError as e:
        if not as_json:
            raise
        error: dict[str, Any] = {"binary": binary, "arch": arch, "error": str(e)}
        error["reason"] = e.reason if isinstance(e, ResolveError) else "invalid-input"
        if isinstance(e, ArchiveNotFound):
            error.update(tried=e.tried, other_archives=e.elsewhere)
        elif isinstance(e, ArchNotFound):
            error["held"] = e.held
        _print_json(error)
        sys.exit(1)
    if as_json:
        _print_json({"binary": binary, "arch": arch, "code_objects": rows})
        return
    for row in rows:
        click.echo(
            f"{row['index']}: {row['key']} [{row['arch']}] in {row['archive']} "
            f"({row['size']:,} bytes)"
        )


def _print_json(data: dict[str, Any]) -> None:
    from gfxpack import views

    click.echo(views.dumps(data), nl=False)


def _resolve(binary: str, arch: str, out: str | None, max_object_size: int) -> list[dict[str, Any]]:
    """One row per wrapper, in wrapper order; with ``out``, each code object written there.
    Every wrapper is located before anything is written: a miss leaves ``out`` as it was."""
    from gfxpack.fatbin.resolve import each_code_object

    rows: list[tuple[int, dict[str, Any]]] = []
    written: dict[int, Path] = {}  # co_index -> its file, written once
    last: tuple[bytes, Path] | None = None  # the object last written, and where
    # One code object at a time: what is written is dropped before the next is read.
    for item in each_code_object(binary, arch, max_object_size=max_object_size):
        if out and item.index not in written:
            destination = Path(out) / f"{item.index}.hsaco"
            same_as = last[1] if last and last[0] is item.code else None
            _write(Path(out), destination, item.code, same_as, first=not written)
            written[item.index] = destination
            last = (item.code, destination)
        row = {"index": item.index, "key": item.key, "arch": item.arch,
               "archive": str(item.archive), "size": len(item.code)}  # fmt: skip
        rows.append((item.wrapper, row))
    rows.sort(key=lambda pair: pair[0])
    return [row for _, row in rows]


def _write(out: Path, destination: Path, code: bytes, same_as: Path | None, first: bool) -> None:
    """Write one object atomically (a link planted at ``destination`` is replaced, not
    followed); an object already written under another index is hard-linked to it, so
    the output grows with the objects stored, not with the wrappers asking for them."""
    from gfxpack._io import atomic_path, write_atomically

    if first:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise GfxpackError(f"cannot write {out}: {e.strerror or e}") from None
    try:
        if same_as is None:
            write_atomically(destination, code)
            return
        with atomic_path(destination) as partial:
            os.link(same_as, partial)
    except OSError as e:
        raise GfxpackError(f"cannot write {destination}: {e.strerror or e}") from None
