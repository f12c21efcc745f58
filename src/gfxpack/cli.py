"""The gfxpack command line: parse arguments, call the library, print.

Every command is a library call tests can make without a subprocess; this
module only translates arguments, prints results and picks exit codes. A
GfxpackError prints as ``error: ...`` lines on stderr with exit status 1.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gfxpack import __version__, kpack, views
from gfxpack import artifacts as artifacts_module
from gfxpack import build as build_module
from gfxpack.config import load_config
from gfxpack.errors import GfxpackError
from gfxpack.formats.compress import Compression
from gfxpack.plan import Kind, Mode, PinPolicy, PlanOptions, ReleasePlan, Severity, plan
from gfxpack.plan.naming import TARGET

_SEPARATORS = re.compile(r"[\s,;]+")


def _reports_errors(command: Callable) -> Callable:
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gfxpack")
def cli() -> None:
    """Plan, build and verify per-GPU-architecture Linux packages for ROCm-style builds."""


def _split_targets(_ctx, _param, values: tuple[str, ...]) -> list[str]:
    targets = [t for value in values for t in _SEPARATORS.split(value) if t]
    if not targets:
        raise click.BadParameter("give at least one GPU target, e.g. --target gfx942")
    return targets


@cli.command("plan")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TheRock package.json (a JSON array of base packages).",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    required=True,
    callback=_split_targets,
    help="GPU targets, e.g. gfx1100,gfx942 (comma, space or ';' separated; repeatable).",
)
@click.option("--rocm-version", required=True, help="Release version, e.g. 8.2.0 (names use 8.2).")
@click.option(
    "--release",
    default="1",
    show_default=True,
    help="Package release / revision: DEB version V-R, RPM Release R.",
)
@click.option(
    "--format",
    "output",
    default="summary",
    show_default=True,
    type=click.Choice(["summary", "tree", "table", "json", "dot"]),
    help="summary: counts and notes; tree/table: seed-000 drawings; json: the "
    "plan contract; dot: Graphviz.",
)
@click.option(
    "--package",
    "package",
    metavar="NAME",
    help="Only this package: a base (amdrocm-blas) or any planned package name.",
)
@click.option(
    "--pkg-type",
    default="deb",
    show_default=True,
    type=click.Choice(["deb", "rpm"]),
    help="Which format's names and dependencies tree, table and dot show.",
)
@click.option(
    "--mode",
    default="kpack",
    show_default=True,
    type=click.Choice([m.value for m in Mode]),
    help="kpack: host/device split per arch; single-arch: legacy, first target only.",
)
@click.option(
    "--pin-policy",
    default="family",
    show_default=True,
    type=click.Choice([p.value for p in PinPolicy]),
    help="family: '=' within a family and from metas, '>=' elsewhere; exact; "
    "minimum; upstream: only metapackages pin.",
)
@click.option(
    "--build-variant",
    default="",
    type=click.Choice(["", "asan"]),
    help="asan: -asan names and the core-asan-X.Y prefix.",
)
@click.option(
    "--install-prefix", default=None, help="Install prefix [default: /opt/rocm/core-X.Y]."
)
@click.option(
    "--allow-missing-deps",
    is_flag=True,
    help="Omit amdrocm dependencies that are undefined or disabled, with a warning, "
    "instead of failing.",
)
@click.option("-v", "--verbose", is_flag=True, help="Also print informational notes.")
@click.option("-q", "--quiet", is_flag=True, help="Print no notes, only the result.")
@_reports_errors
def plan_command(
    config_path,
    targets,
    rocm_version,
    release,
    output,
    package,
    pkg_type,
    mode,
    pin_policy,
    build_variant,
    install_prefix,
    allow_missing_deps,
    verbose,
    quiet,
):
    """Plan every package of a release: names, kinds and dependencies.

    \b
    Example:
      gfxpack plan --config examples/package.json --target gfx1100,gfx942 \\
                   --rocm-version 8.2.0 --format tree --package amdrocm-blas
    """
    config = load_config(config_path)
    options = PlanOptions(
        mode=Mode(mode),
        pin_policy=PinPolicy(pin_policy),
        variant=build_variant,
        install_prefix=install_prefix,
        missing_dependencies="warn" if allow_missing_deps else "error",
    )
    release_plan = plan(config.packages, targets, rocm_version, release, options)
    if not quiet:
        _print_notes(config.warnings, release_plan, verbose)
    click.echo(_render(release_plan, output, package, pkg_type), nl=False)


def _render(release_plan: ReleasePlan, output: str, package: str | None, fmt: str) -> str:
    roots = _roots(release_plan, package)
    if output == "tree":
        return "\n".join(views.tree(release_plan, root, fmt) for root in roots)
    if output == "table":
        if package is None:
            return views.tables(release_plan, fmt)
        return views.table(release_plan, release_plan.get(roots[0]).base, fmt)
    selected = None
    if package is not None:
        selected = views.reachable(release_plan, roots[0], fmt)
    if output == "json":
        return views.dumps(views.to_json(release_plan, selected))
    if output == "dot":
        return views.dot(release_plan, selected, fmt)
    return _summary(release_plan, selected)


def _roots(release_plan: ReleasePlan, package: str | None) -> list[str]:
    """Tree roots: each base's non-versioned package, or the one asked for."""
    if package is None:
        return [p.key for p in release_plan.packages if p.kind is Kind.NON_VERSIONED]
    found = release_plan.get(package)
    if found is None:
        family = release_plan.family(package)
        aliases = [p for p in family if p.kind is Kind.NON_VERSIONED]
        if not aliases:
            raise GfxpackError(
                f"package {package!r} is not in the plan (give a base name from package.json "
                "or a planned package name; see --format summary)"
            )
        found = aliases[0]
    return [found.key]


def _summary(release_plan: ReleasePlan, selected) -> str:
    packages = release_plan.packages if selected is None else selected
    buffer = io.StringIO()
    console = Console(width=100, file=buffer)
    console.print(
        f"[bold]gfxpack plan[/]: ROCm {release_plan.full_version}, {release_plan.mode} mode, "
        f"targets {', '.join(release_plan.targets)}"
    )
    console.print(
        f"prefix {release_plan.prefix}, pin policy {release_plan.pin_policy}"
        + (f", variant {release_plan.variant}" if release_plan.variant else "")
    )
    bases = {p.base for p in packages}
    console.print(f"{len(bases)} base packages → {len(packages)} packages")
    table = Table("kind", "packages", "with files", "DEB depends", "RPM requires")
    for kind in Kind:
        of_kind = [p for p in packages if p.kind is kind]
        if of_kind:
            table.add_row(
                kind.title,
                str(len(of_kind)),
                str(sum(p.has_files for p in of_kind)),
                str(sum(len(p.deb.depends) for p in of_kind)),
                str(sum(len(p.rpm.depends) for p in of_kind)),
            )
    console.print(table)
    return buffer.getvalue()


def _print_notes(config_warnings, release_plan: ReleasePlan, verbose: bool) -> None:
    for warning in config_warnings:
        click.echo(f"warning: {warning}", err=True)
    for note in release_plan.notes:
        if note.severity is Severity.WARNING or verbose:
            click.echo(f"{note.severity}: {note.message}", err=True)


def main() -> None:
    cli(prog_name="gfxpack")


# --- kpack ---------------------------------------------------------------------


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
@_reports_errors
def kpack_create(out, files, group, arch, compression, level):
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
@_reports_errors
def kpack_list(archive, as_json):
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
@_reports_errors
def kpack_extract(archive, toc_key, arch, output):
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
@_reports_errors
def kpack_verify(archives):
    """Check every code object of each archive: structure, frames and sizes."""
    for archive in archives:
        with kpack.KpackReader.open(archive) as reader:
            count = len(reader.verify())
            click.echo(f"{archive}: OK, {count} code objects ({reader.compression})")


# --- build ---------------------------------------------------------------------


@cli.command("build")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TheRock package.json.",
)
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
@click.option("--rocm-version", required=True, help="Release version, e.g. 8.2.0.")
@click.option("--release", default="1", show_default=True, help="Package release / revision.")
@click.option(
    "--compression",
    default="zstd:19",
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
    type=click.Choice(["auto", *(m.value for m in Mode)]),
    help="auto: kpack when a therock_manifest.json sets KPACK_SPLIT_ARTIFACTS, else single-arch.",
)
@click.option(
    "--pin-policy",
    default="family",
    show_default=True,
    type=click.Choice([p.value for p in PinPolicy]),
)
@click.option("--build-variant", default="", type=click.Choice(["", "asan"]))
@click.option("--install-prefix", default=None, help="[default: /opt/rocm/core-X.Y]")
@click.option(
    "--allow-missing-deps",
    is_flag=True,
    help="Omit undefined or disabled amdrocm dependencies with a warning.",
)
@click.option("-q", "--quiet", is_flag=True, help="No notes and no progress, only the summary.")
@_reports_errors
def build_command(
    config_path,
    artifacts,
    out,
    formats,
    targets,
    rocm_version,
    release,
    compression,
    jobs,
    mode,
    pin_policy,
    build_variant,
    install_prefix,
    allow_missing_deps,
    quiet,
):
    """Build every package of the release as .deb and .rpm files.

    Packages are written in parallel, each under a temporary name and renamed
    when complete; OUT/index.json lists every file with its sha256. Builds are
    reproducible: SOURCE_DATE_EPOCH (default 2024-01-01) sets every timestamp.
    """
    chosen = tuple(f for f in _SEPARATORS.split(formats) if f)
    if not chosen or any(f not in ("deb", "rpm") for f in chosen):
        raise GfxpackError(f"--format {formats!r}: expected deb, rpm or deb,rpm")
    build_options = build_module.BuildOptions(
        formats=chosen,
        compression=Compression.parse(compression),
        jobs=jobs,
        epoch=build_module.source_date_epoch(os.environ),
    )
    started = time.perf_counter()
    config = load_config(config_path)
    tree = artifacts_module.scan(artifacts)
    if mode == "auto":
        mode = Mode.KPACK if tree.kpack_split else Mode.SINGLE_ARCH
    wanted = [t for value in targets for t in _SEPARATORS.split(value) if t]
    options = PlanOptions(
        mode=Mode(mode),
        pin_policy=PinPolicy(pin_policy),
        variant=build_variant,
        install_prefix=install_prefix,
        missing_dependencies="warn" if allow_missing_deps else "error",
    )
    release_plan = plan(
        config.packages,
        wanted or tree.index.targets(),
        rocm_version,
        release,
        options,
        artifacts=tree.index,
    )
    if not quiet:
        for warning in tree.warnings:
            click.echo(f"warning: {warning}", err=True)
        _print_notes(config.warnings, release_plan, verbose=False)
    build_options = build_module.BuildOptions(
        formats=chosen,
        compression=Compression.parse(compression),
        jobs=jobs,
        epoch=build_module.source_date_epoch(os.environ),
    )
    routed = artifacts_module.route(release_plan, tree, build_options.epoch)
    # SIGTERM stops a build the way Ctrl-C does: jobs killed, partial files removed.
    signal.signal(signal.SIGTERM, _interrupt)
    with _progress(quiet) as on_built:
        built = build_module.build(release_plan, routed, out, build_options, on_built)
    _print_build_summary(built, out, time.perf_counter() - started)


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def _progress(quiet: bool):
    """A progress bar on a terminal; one plain line per package otherwise."""
    if quiet:
        yield None
        return
    if not sys.stderr.isatty():

        def plain(item, done, total):
            click.echo(
                f"[{done}/{total}] {item.file} ({item.size:,} bytes, {item.seconds:.2f} s)",
                err=True,
            )

        yield plain
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("building", total=None)

        def bar(item, done, total):
            progress.update(task, total=total, completed=done, description=item.file)

        yield bar


def _print_build_summary(built, out, seconds: float) -> None:
    table = Table(
        "kind",
        "files",
        "bytes",
        "seconds (sum of jobs)",
        title=f"{len(built)} packages in {out} ({seconds:.1f} s wall)",
    )
    for kind in Kind:
        items = [b for b in built if b.kind == kind.value]
        if items:
            table.add_row(
                kind.title,
                str(len(items)),
                f"{sum(b.size for b in items):,}",
                f"{sum(b.seconds for b in items):.2f}",
            )
    table.add_row(
        "total",
        str(len(built)),
        f"{sum(b.size for b in built):,}",
        f"{sum(b.seconds for b in built):.2f}",
        style="bold",
    )
    Console(width=100).print(table)
