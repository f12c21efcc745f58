"""gfxpack kpack resolve: find the code objects a device gets from a binary, a tree or a
virtual environment, as ROCm's runtime does."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any

import click

from gfxpack.cli.common import max_object_size_option, reports_errors
from gfxpack.cli.error_output import INVALID_INPUT, json_error
from gfxpack.errors import GfxpackError


@click.command("resolve")
@click.argument("path", required=False, metavar="[PATH]", type=click.Path(path_type=Path))
@click.option(
    "--arch",
    "arches",
    multiple=True,
    metavar="TARGET_ID",
    help="The device, e.g. gfx90a:xnack- (repeat it for several). Default: the target ids "
    "of this machine's GPUs (gfxpack detect), with the xnack mode HSA_XNACK sets.",
)
@click.option(
    "--venv",
    type=click.Path(file_okay=False, path_type=Path),
    help="Check the distributions installed in this virtual environment instead of PATH: "
    "every library with device code, one line each, exit 1 on a miss.",
)
@click.option(
    "--dist",
    "distribution",
    metavar="NAME",
    help="With --venv: that installed distribution only, such as jax-rocm7-pjrt.",
)
@click.option(
    "--sysfs",
    default="/",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Without --arch: the root whose KFD topology names the GPUs (see gfxpack detect).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Write each code object of one split binary here as <index>.hsaco.",
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
    path: Path | None,
    arches: tuple[str, ...],
    venv: Path | None,
    distribution: str | None,
    sysfs: Path,
    out: str | None,
    as_json: bool,
    max_object_size: int,
) -> None:
    """Find the code objects a device gets from a binary, a tree or an installed venv,
    as the kpack runtime would.

    PATH is one binary, or a directory: every library in it with device code is
    checked, one line each (symlinks are not followed). --venv checks what a
    virtual environment has installed (the files of each distribution's RECORD),
    --dist one distribution of it ('gfxpack kpack resolve --venv .venv' after a
    pip install says whether the device wheel for this machine's GPUs came too).
    A directory or venv check exits 1 when any library misses its device code, or
    when it found no library to check.

    A split binary's search paths are resolved against its directory, @GFXARCH@
    is tried as the full target id, then each less specific form (gfx942:sramecc+,
    gfx942:xnack-, gfx942), a miss in one archive falling through to the next; a
    generic target is never tried, as by the kpack runtime. On split output
    (before installing), a binary in <name>_generic/ finds its archives in the
    sibling artifacts <name>_<arch>/, where installing puts them beside it. A
    missing archive and a missing arch are different errors; each says what
    there is instead (the archives of other arches, the target ids an archive
    holds). A binary the split kept whole (too small to
    gain) is reported as "not split: inline code objects for ...", found when
    one of them is for the device.

    The runtime's environment applies. ROCM_KPACK_PATH: .kpack files, separated
    by ':', searched instead of the binary's own paths. ROCM_KPACK_PATH_PREFIX:
    .kpack files searched before them. ROCM_KPACK_DISABLE=1: no lookup at all.
    For example, on the output of 'gfxpack split tree --out split --name demo_lib':

    \b
      ROCM_KPACK_PATH=split/demo_lib_gfx90a/stage/.kpack/demo_lib_gfx90a.kpack \\
        gfxpack kpack resolve split/demo_lib_generic/stage/usr/lib/libdemo.so.1 \\
        --arch gfx90a:xnack-
    """
    if (path is None) == (venv is None):
        raise click.UsageError("give one of PATH and --venv")
    if distribution is not None and venv is None:
        raise click.UsageError("--dist names a distribution installed in --venv")
    if out is not None and (path is None or path.is_dir()):
        raise click.UsageError("--out writes the code objects of one binary")
    try:
        targets = list(dict.fromkeys(arches)) or _detected_targets(sysfs)
        if venv is not None:
            _check_venv(venv, targets, distribution, as_json, max_object_size)
            return
        if path is not None and path.is_dir():
            _check_tree(path, targets, as_json, max_object_size)
            return
    except GfxpackError as e:
        if not as_json:
            raise
        _print_json(json_error(str(e), INVALID_INPUT))
        sys.exit(1)
    if len(targets) > 1:
        raise click.UsageError(
            f"one binary is resolved for one device: give --arch (not {', '.join(targets)})"
        )
    _resolve_binary(str(path), targets[0], out, as_json, max_object_size)


def _detected_targets(sysfs: Path) -> list[str]:
    """The target ids this process sees for the GPUs of the machine whose KFD topology is
    under ``sysfs``: with the xnack mode HSA_XNACK sets (detect leaves it open)."""
    from gfxpack.detect import DetectError, detect
    from gfxpack.fatbin.libraries import process_target

    try:
        gpus = detect(sysfs)
    except DetectError as e:
        raise DetectError(f"no --arch given, and {e}") from None
    targets = list(dict.fromkeys(process_target(g.target_id) for g in gpus if g.target_id))
    if not targets:
        raise DetectError("no --arch given, and no GPU here is one gfxpack knows")
    return targets


def _resolve_binary(
    binary: str, arch: str, out: str | None, as_json: bool, max_object_size: int
) -> None:
    from gfxpack.fatbin.libraries import InlineArchNotFound, inline_summary
    from gfxpack.fatbin.resolve import ArchiveNotFound, ArchNotFound, ResolveError

    try:
        inline = _inline_targets(binary, arch, out, max_object_size)
        rows = [] if inline is not None else _resolve(binary, arch, out, max_object_size)
    except GfxpackError as e:
        if not as_json:
            raise
        reason = e.reason if isinstance(e, ResolveError) else INVALID_INPUT
        error = json_error(str(e), reason, binary=binary, arch=arch)
        if isinstance(e, ArchiveNotFound):
            error.update(tried=e.tried, other_archives=e.elsewhere)
        elif isinstance(e, ArchNotFound):
            error["held"] = e.held
        elif isinstance(e, InlineArchNotFound):
            error.update(split=False, inline=e.inline)
        _print_json(error)
        sys.exit(1)
    if as_json:
        document: dict[str, Any] = {"binary": binary, "arch": arch, "split": inline is None}
        if inline is not None:
            document["inline"] = inline
        _print_json({**document, "code_objects": rows})
        return
    if inline is not None:
        click.echo(f"{binary}: not split: {inline_summary(inline)}")
    for row in rows:
        click.echo(
            f"{row['index']}: {row['key']} [{row['arch']}] in {row['archive']} "
            f"({row['size']:,} bytes)"
        )


def _inline_targets(
    binary: str, arch: str, out: str | None, max_object_size: int
) -> list[str] | None:
    """The inline target ids of a binary the split kept whole (InlineArchNotFound when
    none fits ``arch``); None for a split binary."""
    from gfxpack.fatbin.libraries import check_inline, forms_of, wrapper_magic
    from gfxpack.fatbin.reader import HIPF
    from gfxpack.fatbin.resolve import ResolveError

    forms_of(arch)
    if not Path(binary).is_file():
        raise ResolveError(f"{binary}: no such file")
    if wrapper_magic(Path(binary)) != HIPF:
        return None  # split, or no wrapper at all: resolve says which
    inline = check_inline(Path(binary), arch, max_object_size)
    if out is not None:
        raise ResolveError(
            f"{binary}: not split, no archive to write code objects from "
            f"(--out); 'gfxpack split' cuts out its inline ones"
        )
    return inline


def _check_tree(root: Path, targets: list[str], as_json: bool, max_object_size: int) -> None:
    from gfxpack.fatbin.libraries import check_tree

    reports = check_tree(root, targets, max_object_size=max_object_size)
    nothing = f"{root}: no library with HIP device code"
    verdict = _verdict([r.found for r in reports], nothing, targets)
    if as_json:
        libraries = [r.as_json() for r in reports]
        _print_json({"path": str(root), "arches": targets, "libraries": libraries, **verdict})
    else:
        for report in reports:
            click.echo(report.line())
    _exit_on_miss(verdict, as_json)


def _check_venv(
    venv: Path,
    targets: list[str],
    distribution: str | None,
    as_json: bool,
    max_object_size: int,
) -> None:
    from gfxpack.wheels.installed import check_environment

    checked = check_environment(venv, targets, distribution, max_object_size=max_object_size)
    nothing = f"{venv}: no installed library with HIP device code"
    if distribution is not None:
        nothing = f"{distribution} in {venv}: no library with HIP device code"
    verdict = _verdict([c.report.found for c in checked], nothing, targets)
    if as_json:
        libraries = [
            {"distribution": c.distribution.name, "version": c.distribution.version,
             **c.report.as_json(), "install": c.hint() or None}
            for c in checked
        ]  # fmt: skip
        _print_json({"venv": str(venv), "arches": targets, "libraries": libraries, **verdict})
    else:
        # Grouped by distribution, with the line that installs what it misses after it.
        for dist, group in itertools.groupby(checked, key=lambda c: c.distribution):
            items = list(group)
            click.echo(f"{dist.name} {dist.version}:")
            for item in items:
                click.echo(f"  {item.report.line()}")
            for hint in dict.fromkeys(item.hint() for item in items if item.hint()):
                click.echo(f"  its device code is not installed: {hint}")
    _exit_on_miss(verdict, as_json)


def _verdict(found: list[bool], nothing: str, targets: list[str]) -> dict[str, Any]:
    """``ok``, the counts, and the error of a check that failed; one that checked
    nothing is no pass."""
    missed = found.count(False)
    error = None
    if not found:
        error = f"{nothing}; nothing checked"
    elif missed:
        error = f"{missed} of {len(found)} libraries miss device code for {', '.join(targets)}"
    return {"ok": error is None, "checked": len(found), "missed": missed, "error": error}


def _exit_on_miss(verdict: dict[str, Any], as_json: bool) -> None:
    """Exit 1 unless ``ok``, with the error on stderr (in the JSON document with --json)."""
    if verdict["ok"]:
        return
    if not as_json:
        click.echo(f"error: {verdict['error']}", err=True)
    sys.exit(1)


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
