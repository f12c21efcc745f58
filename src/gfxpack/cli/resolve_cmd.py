"""gfxpack kpack resolve: find a split binary's code objects as ROCm's runtime does."""

from __future__ import annotations

from pathlib import Path

import click

from gfxpack.cli.common import reports_errors


@click.command("resolve")
@click.argument("binary", type=click.Path(dir_okay=False))
@click.option("--arch", required=True, metavar="TARGET_ID", help="The device, e.g. gfx90a:xnack-.")
@click.option(
    "--out", type=click.Path(file_okay=False), help="Write each code object here as <index>.hsaco."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@reports_errors
def kpack_resolve(binary: str, arch: str, out: str | None, as_json: bool) -> None:
    """Find each code object of a split BINARY for a device, as the kpack runtime would.

    Search paths in the binary are resolved against its directory, @GFXARCH@
    is tried as the full target id, then less specific forms, then the family's
    generic; ROCM_KPACK_PATH replaces the search list, ROCM_KPACK_PATH_PREFIX is
    searched first. A missing archive and a missing arch are different errors.
    """
    from gfxpack import views
    from gfxpack.fatbin.resolve import resolve

    found = resolve(binary, arch)
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        for item in found:
            (Path(out) / f"{item.index}.hsaco").write_bytes(item.code)
    if as_json:
        rows = [
            {"index": f.index, "key": f.key, "arch": f.arch, "archive": str(f.archive),
             "size": len(f.code)}
            for f in found
        ]  # fmt: skip
        click.echo(views.dumps({"binary": binary, "arch": arch, "code_objects": rows}), nl=False)
        return
    for item in found:
        click.echo(
            f"{item.index}: {item.key} [{item.arch}] in {item.archive} ({len(item.code):,} bytes)"
        )
