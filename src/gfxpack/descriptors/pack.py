"""The descriptor packager's pipeline: authored descriptors plus built kernels -> an
arch_content tree (its inputs: :mod:`~gfxpack.descriptors.kernel_list` and
:mod:`~gfxpack.descriptors.code_object_sources`).

A provider's build authors its engine descriptors (UED, KMD, UHD, UMD, UDD and
the packs, ``.kdp.json``) once, compiles each kernel for several GPU arches,
and lists the kernels in a small JSON or TOML file (see
:func:`~gfxpack.descriptors.kernel_list.read_kernel_list`).
:func:`pack` turns that into the tree the loader reads::

    OUT/<subpath>/*.json                   authored descriptors, copied unchanged
                                           (everything arch-independent)
    OUT/<arch>/kpack/<group>_<arch>.kpack  that arch's code objects (zstd)
    OUT/<arch>/<subpath>/<pack>.kdp.json   each pack that received kernels, narrowed
                                           to [<arch>]; its kernels are "kind": "kpack"
                                           sources naming the archive, a toc_key, the
                                           symbol and the sha256 of the code object

    OUT/<arch>/<subpath>/<pack>.kdp.provenance.json.gz
                                           where each of its code objects came from

so that a device package can carry ``OUT/<arch>/`` alone and the host package
the rest. The provenance (producer, authored pack, kernel list, each code
object's origin) is a gzipped JSON sidecar beside the pack, as upstream's
packager keeps it, not a key of the pack: the loader reads a written tree with
no warning.

Before anything is written the inputs are checked, every problem once and
naming the file it is in: the authored tree as authored sources (schemas, the
loader; a pack may be empty, the list fills it), the kernel list (keys, arches
of :mod:`gfxpack.amdgpu`'s table, packs, metadata against the engine's schema)
and every code object (an AMDGPU code object of the arch it is listed for).
The tree is then written beside ``OUT``, linted (schemas) and loaded (every
kpack source checked against its archive) before it is renamed into place: what
``pack`` leaves behind always loads, and a failure leaves nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack._io import DIRECTORY_MODE, replace_directory
from gfxpack.descriptors.code_object_sources import CodeObjectFiles, CodeObjects
from gfxpack.descriptors.diagnostics import Diagnostic, Diagnostics, Level
from gfxpack.descriptors.jsonc import JsoncError, loads
from gfxpack.descriptors.kernel_list import (
    MAX_LIST_BYTES,
    KernelList,
    ListedKernel,
    PackError,
    read_kernel_list,
)
from gfxpack.descriptors.lint import schema_errors
from gfxpack.descriptors.loader import LoadResult, load_validated
from gfxpack.descriptors.parse import UNKNOWN_ARCH
from gfxpack.descriptors.registry import EngineNames, SymbolRegistry
from gfxpack.descriptors.resolve import metadata_problem
from gfxpack.descriptors.types import Descriptor
from gfxpack.descriptors.walk import descriptor_files
from gfxpack.kpack import check_code_object, write_kpack
from gfxpack.regular_files import UnreadableFile, read_small_file

PRODUCER = "gfxpack descriptors pack"
KERNEL_VERSION = "1.0"
# Kernel ids not given in the list are derived from the pack id and kernel name.
KERNEL_NAMESPACE = uuid.UUID("0f6b3c1e-8e44-4f0a-a7a5-5d2c9b1e7f30")

PROVENANCE = ".provenance.json.gz"  # beside each written pack: <pack>.kdp.provenance.json.gz

# --- the authored descriptors -------------------------------------------------------------


@dataclass
class Authored:
    relative: str  # path under the authored tree, '/'-separated
    suffix: str
    data: bytes
    document: dict[str, Any]


def read_authored(directory: str | os.PathLike[str]) -> list[Authored]:
    """Every descriptor file of an authored tree, found by the one walker with the
    authored rule (:mod:`gfxpack.descriptors.walk`): hidden entries skipped, a symlink
    refused, so nothing outside the tree is copied."""
    top = Path(directory)
    if not top.is_dir():
        raise PackError([f"{top}: the authored descriptor directory does not exist"])
    walked = Diagnostics()
    files = descriptor_files(top, walked, authored=True)
    problems = [_problem_line(d) for d in walked.at_least(Level.ERROR)]
    found: list[Authored] = []
    for name, suffix in files:
        path = Path(name)
        try:
            # The walk refused symlinks; one swapped in since is refused too.
            data = read_small_file(path, MAX_LIST_BYTES, "descriptor", follow_symlinks=False)
            document = loads(data)
        except UnreadableFile as e:
            problems.append(str(e))
            continue
        except JsoncError as e:
            problems.append(f"{path}: cannot be read as a descriptor: {e}")
            continue
        if not isinstance(document, dict):
            problems.append(f"{path}: the document root must be a JSON object")
            continue
        found.append(Authored(path.relative_to(top).as_posix(), suffix, data, document))
    if problems:
        raise PackError(problems)
    if not found:
        raise PackError([f"{top}: holds no descriptor files (*.ued.json, *.kdp.json, ...)"])
    return found


# --- packing ------------------------------------------------------------------------------


@dataclass
class ArchShard:
    arch: str
    archive: str  # relative to the output root
    kernels: int
    packs: list[str]  # shard files, relative to the output root
    provenance: list[str] = field(default_factory=list)  # their sidecars, likewise


@dataclass
class PackResult:
    out: Path
    group: str
    generic: list[str]  # arch-independent files, relative to the output root
    shards: dict[str, ArchShard]
    engines: list[str]  # engine names the written tree loads

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "group": self.group,
            "generic": self.generic,
            "arches": {
                arch: {
                    "archive": s.archive,
                    "kernels": s.kernels,
                    "packs": s.packs,
                    "provenance": s.provenance,
                }
                for arch, s in self.shards.items()
            },
            "engines": self.engines,
        }


def pack(
    authored_dir: str | os.PathLike[str],
    kernel_list: str | os.PathLike[str] | KernelList,
    code_objects: CodeObjects,
    out: str | os.PathLike[str],
    *,
    group: str | None = None,
    compression: str = "zstd",
    registry: SymbolRegistry | None = None,
    replace: bool = False,
) -> PackResult:
    """Write the arch_content tree for ``authored_dir`` and the listed kernels to ``out``.

    ``out`` must not exist unless ``replace``; the inputs are checked, then the tree is
    built beside ``out``, linted and loaded, and renamed into place. Raises
    :class:`PackError` naming every problem, each once, in the file it is in.
    """
    out = Path(out)
    if (out.exists() or out.is_symlink()) and not replace:
        raise PackError([f"{out}: already exists (give --force to replace it)"])
    listed = kernel_list if isinstance(kernel_list, KernelList) else read_kernel_list(kernel_list)
    group = group or listed.group
    authored = read_authored(authored_dir)
    schemas = check_authored(authored_dir, authored, registry)
    targets = _assign(listed, authored, schemas)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        result = _write(staging, out, listed, group, authored, targets, code_objects, compression)
        loaded = _check(staging, out, Path(authored_dir), result, registry)
        result.engines = sorted(s.name for s in loaded.sets)
        os.chmod(staging, DIRECTORY_MODE)  # mkdtemp's 0700: the tree is for everyone to read
        try:
            replace_directory(staging, out, replace)
        except FileExistsError:  # made while the tree was written
            raise PackError([f"{out}: already exists (give --force to replace it)"]) from None
        except OSError as e:
            raise PackError([f"{out}: cannot replace: {e.strerror or e}"]) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def check_authored(
    directory: str | os.PathLike[str],
    authored: list[Authored],
    registry: SymbolRegistry | None = None,
) -> dict[str, Descriptor]:
    """The authored tree linted as authored sources (``descriptors lint --authored``):
    every problem named in its authored file, once. Returns each authored pack's
    metadata schema (its engine's ``.kmd.json``), by pack id."""
    top = Path(directory)
    load = load_validated([top], registry, names=EngineNames(), authored=True)
    failing = [
        d for d in load.diagnostics.items if d.severity >= Level.ERROR or d.code == UNKNOWN_ARCH
    ]
    problems = [_problem_line(d) for d in failing]
    # The loader stops at a file's first problem and says it best (a misspelt key gets
    # a suggestion); the schemas speak for the files it found nothing in.
    named = {d.path for d in failing}
    for item in authored:
        path = os.fspath(top / item.relative)
        if path not in named:
            problems += [f"{path}: {p}" for p in schema_errors(item.document, item.suffix)]
    if problems:
        raise PackError(problems)
    return {p.descriptor.id: s.schema for s in load.sets for p in s.packs}


def _problem_line(diagnostic: Diagnostic) -> str:
    """``<file>: <code>: <message>``, the file left out when the message names it."""
    path = diagnostic.path
    prefix = f"{path}: " if path and f'"{path}"' not in diagnostic.message else ""
    return f"{prefix}{diagnostic.code}: {diagnostic.message}"


def _assign(
    listed: KernelList, authored: list[Authored], schemas: Mapping[str, Descriptor]
) -> dict[str, list[ListedKernel]]:
    """Authored pack (relative path) -> its listed kernels; every pack reference resolved,
    every kernel arch inside its pack's declared arch and its metadata fitting the schema
    of the pack's engine (checked once per kernel, not once per arch it is built for)."""
    packs = [a for a in authored if a.suffix == ".kdp.json"]
    by_key: dict[str, list[Authored]] = {}
    for p in packs:
        for key in {str(p.document.get("id", "")).lower(), str(p.document.get("name", ""))}:
            by_key.setdefault(key, []).append(p)
    problems = []
    targets: dict[str, list[ListedKernel]] = {}
    for kernel in listed.kernels:
        found = by_key.get(kernel.pack) or by_key.get(kernel.pack.lower()) or []
        if len(found) != 1:
            known = ", ".join(sorted(str(p.document.get("name")) for p in packs)) or "none"
            why = "several authored packs define" if found else "no authored pack defines"
            problems.append(
                f"{kernel.where}/pack: kernel '{kernel.name}' names pack '{kernel.pack}', "
                f"which {why} (authored packs: {known})"
            )
            continue
        authored_pack = found[0]
        declared = authored_pack.document.get("arch") or []
        outside = [
            a for a in kernel.arch if isinstance(declared, list) and declared and a not in declared
        ]
        if outside:
            problems.append(
                f"{kernel.where}/arch: kernel '{kernel.name}' is listed for "
                f"{', '.join(outside)}, which pack '{kernel.pack}' ({authored_pack.relative}) "
                f"does not declare (its arch: {', '.join(map(str, declared))})"
            )
            continue
        targets.setdefault(authored_pack.relative, []).append(kernel)
        schema = schemas.get(str(authored_pack.document.get("id", "")).lower())
        problem = metadata_problem(kernel.name, kernel.metadata, schema) if schema else None
        if schema is not None and problem is not None:
            code, reason = problem
            problems.append(
                f"{kernel.where}/metadata: {reason} ({code}; the schema is {schema.path})"
            )
    for p in packs:
        if not p.document.get("kernelDescriptors") and p.relative not in targets:
            problems.append(
                f"{listed.path}: pack '{p.document.get('name')}' ({p.relative}) declares no "
                "kernels and the list gives it none; list its kernels or remove the pack"
            )
    if problems:
        raise PackError(problems)
    return targets


def _write(
    staging: Path,
    out: Path,
    listed: KernelList,
    group: str,
    authored: list[Authored],
    targets: dict[str, list[ListedKernel]],
    code_objects: CodeObjects,
    compression: str,
) -> PackResult:
    generic = []
    for item in authored:
        if item.relative in targets:
            continue  # shipped per arch instead
        destination = staging / item.relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(item.data)
        generic.append(item.relative)
    arches = sorted({a for kernels in targets.values() for k in kernels for a in k.arch})
    by_relative = {a.relative: a for a in authored}
    shards = {}
    problems: list[str] = []
    for arch in arches:
        shard = _write_arch(
            staging, arch, listed, group, by_relative, targets, code_objects, compression, problems
        )
        if shard is not None:
            shards[arch] = shard
    if problems:
        raise PackError(problems)
    return PackResult(out, group, generic, shards, [])


def _write_arch(
    staging: Path,
    arch: str,
    listed: KernelList,
    group: str,
    authored: Mapping[str, Authored],
    targets: dict[str, list[ListedKernel]],
    code_objects: CodeObjects,
    compression: str,
    problems: list[str],
) -> ArchShard | None:
    archive_relative = f"{arch}/kpack/{group}_{arch}.kpack"
    codes: dict[str, tuple[bytes, str]] = {}  # toc_key -> (code, kernel name)
    documents = []
    for relative in sorted(targets):
        kernels = [k for k in targets[relative] if arch in k.arch]
        if not kernels:
            continue
        pack_document = authored[relative].document
        pack_id = str(pack_document.get("id", "")).lower()
        library = os.path.relpath(archive_relative, os.path.dirname(f"{arch}/{relative}"))
        entries, origins = [], {}
        for kernel in kernels:
            found = code_objects.read(kernel, arch)
            if isinstance(found, str):
                problems.append(
                    f"{kernel.where}: kernel '{kernel.name}' is listed for {arch}, but it has "
                    f"no code object for {arch}: {found}"
                )
                continue
            code, origin = found
            problem = check_code_object(code, arch, "the kernel list")
            if problem:
                if isinstance(code_objects, CodeObjectFiles):  # name the file itself
                    origin = os.fspath(code_objects.directory / origin)
                problems.append(
                    f"{kernel.where}: kernel '{kernel.name}' for {arch}: code object {origin}: "
                    f"{problem}"
                )
                continue
            previous = codes.get(kernel.toc_key)
            if previous is not None and previous[0] != code:
                problems.append(
                    f"{kernel.where}: kernel '{kernel.name}' and kernel '{previous[1]}' share "
                    f"toc_key '{kernel.toc_key}' for {arch} with different code objects"
                )
                continue
            codes[kernel.toc_key] = (code, kernel.name)
            origins[kernel.name] = origin
            entries.append(_kernel_entry(kernel, pack_id, library, code))
        authored_kernels = pack_document.get("kernelDescriptors", [])
        document = {
            key: value
            for key, value in pack_document.items()
            if key not in ("arch", "kernelDescriptors", "provenance")
        }
        document["arch"] = [arch]
        # kernelDescriptors last, as the upstream packager writes them: a reader sees
        # the pack's identity before its (long) kernel list.
        kept = authored_kernels if isinstance(authored_kernels, list) else []
        document["kernelDescriptors"] = [*kept, *entries]
        provenance = {
            "producer": PRODUCER,
            "arch": arch,
            "authored": relative,
            "authored_arch": pack_document.get("arch", []),
            "kernel_list": listed.path.name,
            "code_objects": origins,
        }
        documents.append((f"{arch}/{relative}", document, provenance))
    if problems or not documents:
        return None
    (staging / archive_relative).parent.mkdir(parents=True, exist_ok=True)
    write_kpack(
        staging / archive_relative,
        ((key, codes[key][0]) for key in sorted(codes)),
        group,
        arch,
        compression,
    )
    sidecars = []
    for relative, document, provenance in documents:
        path = staging / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        sidecar = provenance_path(relative)
        text = json.dumps(provenance, indent=2, sort_keys=True) + "\n"
        # mtime 0: the same inputs give the same bytes.
        (staging / sidecar).write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        sidecars.append(sidecar)
    return ArchShard(arch, archive_relative, len(codes), [r for r, _, _ in documents], sidecars)


def provenance_path(pack: str) -> str:
    """Where a written pack's provenance is kept: ``<arch>/<path>/<name>.kdp.json`` ->
    ``<arch>/<path>/<name>.kdp.provenance.json.gz``, a name the loader never reads."""
    return pack.removesuffix(".json") + PROVENANCE


def _kernel_entry(kernel: ListedKernel, pack_id: str, library: str, code: bytes) -> dict[str, Any]:
    ident = kernel.id or str(uuid.uuid5(KERNEL_NAMESPACE, f"{pack_id}/{kernel.name}"))
    return {
        "version": KERNEL_VERSION,
        "id": ident,
        "name": kernel.name,
        "kernel_source": {
            "kind": "kpack",
            "library": library,
            "toc_key": kernel.toc_key,
            "symbol": kernel.symbol,
            "sha256": hashlib.sha256(code).hexdigest(),
            "signature": list(kernel.signature),
        },
        "metadata": kernel.metadata,
        "priority": kernel.priority,
    }


def _check(
    staging: Path,
    out: Path,
    authored: Path,
    result: PackResult,
    registry: SymbolRegistry | None,
) -> LoadResult:
    """The written tree must pass the schemas and load without an ERROR (what ``gfxpack
    descriptors lint`` requires; it adds no warning to the authored tree's). A problem is
    named in the authored file the written one comes from (every arch's shard of a
    pack by the authored pack), each once; the archives by their place under ``out``."""
    names = {os.fspath(staging / r): os.fspath(authored / r) for r in result.generic}
    for shard in result.shards.values():
        names[os.fspath(staging / shard.archive)] = os.fspath(out / shard.archive)
        for pack_file in shard.packs:
            names[os.fspath(staging / pack_file)] = os.fspath(authored / pack_file.split("/", 1)[1])
    # Longest first: a path is never replaced by the name of a directory above it.
    ordered = sorted(names.items(), key=lambda item: len(item[0]), reverse=True)

    def shown(text: str) -> str:
        for written, source in ordered:
            text = text.replace(written, source)
        return text.replace(os.fspath(staging), os.fspath(out))

    load = load_validated([staging], registry, names=EngineNames())
    problems = []
    for path, suffix in descriptor_files(staging, Diagnostics()):
        document = loads(Path(path).read_bytes())  # written by us: JSON
        problems += [f"{shown(path)}: {problem}" for problem in schema_errors(document, suffix)]
    problems += [shown(_problem_line(d)) for d in load.diagnostics.at_least(Level.ERROR)]
    if problems:
        raise PackError(
            [
                "the packed tree does not load cleanly, so nothing was written:",
                *dict.fromkeys(problems),  # once, however many arches repeat it
            ]
        )
    return load
