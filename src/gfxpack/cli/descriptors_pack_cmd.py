"""gfxpack descriptors pack: authored descriptors and built kernels -> an arch_content tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from gfxpack.cli.common import max_object_size_option, reports_errors

if TYPE_CHECKING:
    from gfxpack.descriptors.code_object_sources import CodeObjects


@click.command("pack")
@click.option(
    "--descriptors",
    "authored",
    required=True,
    type=click.Path(file_okay=False),
    help="The authored descriptor tree: engines, schemas, heuristics, matchers, dispatch "
    "and the packs the kernels go into.",
)
@click.option(
    "--kernels",
    "kernel_list",
    required=True,
    type=click.Path(dir_okay=False),
    help="The kernel list (.json or .toml): name, pack, symbol, arch, metadata per kernel.",
)
@click.option(
    "--code-objects",
    type=click.Path(file_okay=False),
    help="Directory of built code objects, found by each kernel's code_object template "
    "[default template: {arch}/{toc_key}.hsaco].",
)
@click.option(
    "--from-kpack",
    "archives",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Take code objects from this .kpack archive instead (by toc_key and arch); "
    "repeatable, the first archive holding one wins.",
)
@click.option(
    "--out", required=True, type=click.Path(), help="The provider's arch_content tree to write."
)
@click.option("--group", help="Archive group name [default: the list's, or hip_kernel_provider].")
@click.option(
    "--compression",
    default="zstd",
    show_default=True,
    type=click.Choice(["zstd", "none"]),
    help="How code objects are stored in the archives.",
)
@click.option(
    "--symbols",
    type=click.Path(dir_okay=False),
    help="Symbol registry to check the written tree against (JSON or '<kind> <symbol>' lines).",
)
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@max_object_size_option
@reports_errors
def pack_command(
    authored: str,
    kernel_list: str,
    code_objects: str | None,
    archives: tuple[str, ...],
    out: str,
    group: str | None,
    compression: str,
    symbols: str | None,
    force: bool,
    as_json: bool,
    max_object_size: int,
) -> None:
    """Package kernels and their descriptors per GPU arch, as a provider installs them.

    Writes OUT/<arch>/kpack/<group>_<arch>.kpack with each arch's code objects, and
    OUT/<arch>/<path>.kdp.json for every pack that received kernels, narrowed to that
    arch, each kernel a "kind": "kpack" source with its toc_key, symbol and sha256;
    beside it OUT/<arch>/<path>.kdp.provenance.json.gz (gzipped JSON) says where each
    code object came from. Every other authored descriptor is copied to OUT/<path>
    (arch-independent).

    The inputs are checked first, each problem once, naming the file it is in: the
    authored tree as 'descriptors lint --authored' does, the kernel list (every arch a
    processor such as gfx942, metadata fitting the engine's schema), and every code
    object (an AMDGPU code object for the arch it is listed for: ELF64, EM_AMDGPU,
    HSA, e_flags naming the processor). The tree is then linted and loaded before it
    replaces OUT, and passes 'list-engines --strict' when the authored tree does; on
    any problem nothing is written.
    """
    if bool(code_objects) == bool(archives):
        raise click.UsageError("give either --code-objects DIR or --from-kpack ARCHIVE")
    from gfxpack import views
    from gfxpack.descriptors import SymbolRegistry
    from gfxpack.descriptors.code_object_sources import CodeObjectArchives, CodeObjectFiles
    from gfxpack.descriptors.pack import pack

    source: CodeObjects = (
        CodeObjectArchives(archives, max_object_size)
        if archives
        else CodeObjectFiles(code_objects or "")
    )
    try:
        result = pack(
            authored,
            kernel_list,
            source,
            out,
            group=group,
            compression=compression,
            registry=SymbolRegistry.from_file(symbols) if symbols else None,
            replace=force,
        )
    finally:
        source.close()
    if as_json:
        click.echo(views.dumps(result.as_dict()), nl=False)
        return
    click.echo(f"{result.out}: {len(result.generic)} arch-independent descriptor(s)")
    for arch, shard in result.shards.items():
        click.echo(
            f"  {arch}: {shard.kernels} code object(s) in {shard.archive}, "
            f"{len(shard.packs)} pack(s), provenance beside each (*.provenance.json.gz)"
        )
    click.echo(f"  loads engine(s): {', '.join(result.engines) or 'none'}")
