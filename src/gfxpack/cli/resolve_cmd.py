"""gfxpack kpack resolve: find a split binary's code objects as ROCm's runtime does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from gfxpack.cli.common import max_object_size_option, reports_errors


@click.command("resolve")
@click.argument("binary", type=click.Path(dir_okay=False))
@click.option("--arch", required=True, metavar="TARGET_ID", help="The device, e.g. gfx90a:xnack-.")
@click.option(
    "--out", type=click.Path(file_okay=False), help="Write each code object here as <index>.hsaco."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@max_object_size_option
@reports_errors
def kpack_resolve(
    binary: str, arch: str, out: str | None, as_json: bool, max_object_size: int
) -> None:
    """Find each code object of a split BINARY for a device, as the kpack runtime would.

    Search paths in the binary are resolved against its directory, @GFXARCH@
    is tried as the full target id, then less specific forms, then the family's
    generic; ROCM_KPACK_PATH replaces the search list, ROCM_KPACK_PATH_PREFIX is
    searched first. A missing archive and a missing arch are different errors.
    """
    from gfxpack import views
    from gfxpack.fatbin.resolve import each_code_object

    rows: list[tuple[int, dict[str, Any]]] = []
    written: dict[int, Path] = {}  # co_index -> its file, written once
    last: tuple[bytes, Path] | None = None  # the object last written, and where
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
    # One code object at a time: what is written is dropped before the next is read.
    for item in each_code_object(binary, arch, max_object_size=max_object_size):
        if out and item.index not in written:
            destination = Path(out) / f"{item.index}.hsaco"
            _write(destination, item.code, last[1] if last and last[0] is item.code else None)
            written[item.index] = destination
            last = (item.code, destination)
        row = {"index": item.index, "key": item.key, "arch": item.arch,
               "archive": str(item.archive), "size": len(item.code)}  # fmt: skip
        rows.append((item.wrapper, row))
    rows.sort(key=lambda pair: pair[0])
    if as_json:
        found = [row for _, row in rows]
        click.echo(views.dumps({"binary": binary, "arch": arch, "code_objects": found}), nl=False)
        return
    for _, row in rows:
        click.echo(
            f"{row['index']}: {row['key']} [{row['arch']}] in {row['archive']} "
            f"({row['size']:,} bytes)"
        )


def _write(destination: Path, code: bytes, same_as: Path | None) -> None:
    """Write one object atomically (a link planted at ``destination`` is replaced, not
    followed); an object already written under another index is hard-linked to it, so
    the output grows with the objects stored, not with the wrappers asking for them."""
    from gfxpack._io import atomic_path, write_atomically

    if same_as is None:
        write_atomically(destination, code)
        return
    with atomic_path(destination) as partial:
        os.link(same_as, partial)
