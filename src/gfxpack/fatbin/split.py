"""Split a fat ROCm build: host files in one artifact, device code in one .kpack per arch.

Two kinds of input:

- a TheRock artifacts directory: every ``<name>_<component>_<target>`` directory
  other than ``_generic`` is fat; it becomes ``<name>_<component>_generic`` (host
  files, the same manifest) and one ``<name>_<component>_<arch>`` per processor
  holding ``<first prefix>/.kpack/<name>_<component>_<arch>.kpack``; other
  directories are copied; ``therock_manifest.json`` says KPACK_SPLIT_ARTIFACTS;
- any other directory (an unpacked .deb, an /opt/rocm copy) with an artifact name
  such as ``sparse_lib``: ``<name>_generic/stage/<the tree>`` and
  ``<name>_<arch>/stage/<kpack dir>/<name>_<arch>.kpack``, each with an
  ``artifact_manifest.txt`` listing ``stage``.

xnack/sramecc variants of a processor share its archive under their full target
id. Files named for one arch (``TensileLibrary_gfx90a.co``, ``library/gfx90a/``,
``oclc_isa_version_90a.bc``, ``x_gfx9-4-generic.co``: :func:`gfxpack.file_arch.file_arch`,
the answer try-install and probe share) move to that arch's artifact unchanged. Files
without device code are hard-linked into a tree (copied across file systems).

Source to destination, in pypa/installer's shape: the input is read and checked
whole first (:func:`~gfxpack.fatbin.source.read_source`: the rules ``gfxpack
build`` reads artifacts by, nothing followed out of the tree), then :func:`split`
writes it through a :class:`~gfxpack.fatbin.destination.SplitDestination`, keeping
the split record (:mod:`gfxpack.fatbin.record`) that :mod:`gfxpack.fatbin.join`
reads back: where every file came from and how to undo each rewrite.
:func:`split_tree` writes an artifacts tree (:class:`TreeDestination`: under a
temporary directory renamed to OUT at the end). Here: walking each fat artifact
once, filling the per-arch archives and rewriting each fat binary's host part (the
per-binary work lives in reader.py, rewrite.py and bundle.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import stat
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from gfxpack import kpack
from gfxpack.artifact_layout import GENERIC, MANIFEST, THEROCK_MANIFEST, artifact_name
from gfxpack.fatbin import InvalidFatBinary, SplitError
from gfxpack.fatbin.bundle import CodeObject
from gfxpack.fatbin.destination import SplitDestination, TreeDestination, check_out
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.record import LITERALS, SPLIT_INDEX, SplitRecord, read_split_index
from gfxpack.fatbin.rewrite import (
    CodeDigests,
    NotWorthSplitting,
    split_binary,
    too_many_zeros,
    too_small,
)
from gfxpack.fatbin.source import (
    TREE_PREFIX,
    FatJob,
    SplitInput,
    SplitSource,
    check_source,
    read_source,
)
from gfxpack.file_arch import file_arch
from gfxpack.plan.targets import target_order
from gfxpack.safe_tree import TreeError

ARCH_PLACEHOLDER = "@GFXARCH@"


@dataclass
class ArchTotals:
    code_objects: int = 0
    code_bytes: int = 0
    archive_bytes: int = 0
    data_files: int = 0
    data_bytes: int = 0


@dataclass
class SplitReport:
    out: Path
    binaries: int = 0  # rewritten
    fat_bytes: int = 0  # their size before
    host_bytes: int = 0  # and after
    copied: int = 0
    notes: list[str] = field(default_factory=list)
    arches: dict[str, ArchTotals] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "binaries": self.binaries,
            "fat_bytes": self.fat_bytes,
            "host_bytes": self.host_bytes,
            "copied_files": self.copied,
            "arches": {
                arch: {
                    "code_objects": t.code_objects,
                    "code_bytes": t.code_bytes,
                    "archive_bytes": t.archive_bytes,
                    "data_files": t.data_files,
                    "data_bytes": t.data_bytes,
                }
                for arch, t in sorted(self.arches.items(), key=lambda a: target_order(a[0]))
            },
            "notes": self.notes,
        }


@dataclass(frozen=True)
class _Found:
    """A file found in a prefix, and where its host part would go."""

    generic: str
    prefix: str
    relpath: str  # inside the prefix
    original: str  # path recorded for join

    @property
    def out_path(self) -> str:
        return f"{self.generic}/{self.prefix}/{self.relpath}"


def split_tree(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    name: str | None = None,
    kpack_dir: str | None = None,
    jobs: int = 1,
    force: bool = False,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> SplitReport:
    """Split ``source`` into the artifacts tree ``out`` (see the module docstring):
    :func:`split` of the input read, into a :class:`TreeDestination`."""
    source, out = Path(source), Path(out)
    kpack_dir = check_source(source, kpack_dir)
    check_out(out, force, source)
    read = read_source(source, name, kpack_dir)
    destination = TreeDestination(out, force)
    try:
        report = split(read, destination, jobs, max_object_size)
        report.out = out
        destination.finish()
    finally:
        destination.discard()
    return report


def split(
    read: SplitSource,
    destination: SplitDestination,
    jobs: int = 1,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> SplitReport:
    """Write the split of the input ``read`` (:func:`~gfxpack.fatbin.source.read_source`)
    through ``destination``, the split record last; the caller finishes or discards it.
    No decompressed bundle or code object may exceed ``max_object_size`` bytes (see
    :class:`~gfxpack.fatbin.reader.FatBinary` for what else bounds the work)."""
    report = SplitReport(Path(), notes=list(read.notes))
    record = SplitRecord(read.kind)
    try:
        with contextlib.closing(SplitInput(read.root)) as reading:
            for directory, entries in read.copied:
                destination.directory(directory)
                for relpath, entry, target in entries:
                    where = (f"{directory}/{relpath}", read.root / directory / relpath)
                    _place(reading, destination, where, (entry, target))
                record.copied.append(directory)
            with destination.new_file(LITERALS) as literals:
                writing = (reading, literals, max(1, jobs))
                for job in read.jobs:
                    _split_job(job, destination, report, writing, record, max_object_size)
        manifest: dict[str, Any] = {}
        if read.therock_manifest is not None:
            record.therock_manifest, manifest = read.therock_manifest
        # Tells 'gfxpack build' that device code is already split out (kpack mode).
        manifest.setdefault("flags", {})["KPACK_SPLIT_ARTIFACTS"] = True
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        destination.write(THEROCK_MANIFEST, text.encode())
        destination.write(SPLIT_INDEX, record.to_msgpack())
    except OSError as e:
        raise destination.error(e) from None
    except TreeError as e:  # the input, read after the walk, is not what the walk found
        raise SplitError(str(e)) from None
    return report


def tree_part(split: Path, group: str, target: str) -> Path:
    """Where the split of an install tree (:func:`split_tree` with ``name``, as the
    wheel split makes) keeps ``target``'s part of it, :data:`GENERIC` the host's:
    ``<group>_<target>/stage``; join reads it back from there."""
    return split / artifact_name(group, target) / TREE_PREFIX


def _split_job(
    job: FatJob,
    out: SplitDestination,
    report: SplitReport,
    writing: tuple[SplitInput, BinaryIO, int],
    record: SplitRecord,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> None:
    """Walk the job's prefixes once: each fat binary is split (code objects into the
    archives, host part rewritten) and closed as soon as it is reached, so open
    files and maps stay bounded whatever the tree's size. ``writing``: the input, the
    data file and the number of threads."""
    reading, literals, jobs = writing
    generic = artifact_name(job.group, GENERIC)
    files: list[list[Any]] = []  # [output path, original path, kind, recipe or None]
    arch_dirs: dict[str, set[str]] = {}  # arch directory -> prefixes it holds
    out.directory(generic)
    if job.manifest is not None:
        out.copy(f"{generic}/{MANIFEST}", reading, job.manifest)
        files.append([f"{generic}/{MANIFEST}", f"{job.source}/{MANIFEST}", "file", None])
    else:
        out.write(f"{generic}/{MANIFEST}", f"{TREE_PREFIX}\n".encode())
    archives = _Archives(job, out, report, arch_dirs, jobs, max_object_size)
    with ThreadPoolExecutor(jobs) as pool:
        try:
            for prefix, root, content in job.prefixes:
                for found in content:
                    relpath, entry, _ = found
                    item = _Found(generic, prefix, relpath, _original_path(job, prefix, relpath))
                    done = None
                    if entry == "file":
                        helpers = (pool, literals, reading)
                        done = _split_file(job, out, report, archives, helpers, root, item)
                    files.append(
                        done
                        or _copy_entry(job, (out, reading), report, arch_dirs, prefix, root, found)
                    )
        finally:
            paths = archives.close()
    for directory, prefixes in sorted(arch_dirs.items()):
        out.write(f"{directory}/{MANIFEST}", "".join(f"{p}\n" for p in sorted(prefixes)).encode())
    record.add_job(job.group, job.source, generic, paths, files)


def _split_file(
    job: FatJob,
    out: SplitDestination,
    report: SplitReport,
    archives: _Archives,
    helpers: tuple[ThreadPoolExecutor, BinaryIO, SplitInput],
    root: Path,
    item: _Found,
) -> list[Any] | None:
    """Split one file if it carries device code worth splitting: its index entry,
    or None when it is to be copied as it is."""
    pool, literals, reading = helpers
    path = root / item.relpath
    file = reading.open(path)
    info = os.fstat(file.fileno())
    with FatBinary(path, max_object_size=archives.max_object_size, file=file) as binary:
        reason = binary.unsplittable or (
            (too_small(binary) or too_many_zeros(binary)) if binary.devices else None
        )
        if reason:
            report.notes.append(f"{binary.path}: kept whole: {reason}")
        if reason or not binary.devices:
            return None
        # The archives hash every code object they store; the original's digest
        # (join checks it) reuses those, so no byte is hashed twice.
        known = archives.add(binary, item, pool)
        recipe = _rewrite(job, binary, item, (out, reading, info), report, known, literals)
        return [item.out_path, item.original, "binary" if recipe else "file", recipe]


def _copy_entry(
    job: FatJob,
    places: tuple[SplitDestination, SplitInput],
    report: SplitReport,
    arch_dirs: dict[str, set[str]],
    prefix: str,
    root: Path,
    found: tuple[str, str, str | None],
) -> list[Any]:
    """Place an entry without device code: in its arch's artifact when its name (or a
    directory's above it) says one, such as ``library/gfx90a/`` and what it holds."""
    out, reading = places
    relpath, entry, target = found
    target_dir = artifact_name(job.group, GENERIC)
    arch = file_arch(relpath)
    if arch is not None:
        target_dir = artifact_name(job.group, arch)
        arch_dirs.setdefault(target_dir, set()).add(prefix)
        if entry == "file":
            totals = report.arches.setdefault(arch, ArchTotals())
            totals.data_files += 1
            totals.data_bytes += reading.status(root / relpath, stat.S_IFREG).st_size
    where = (f"{target_dir}/{prefix}/{relpath}", root / relpath)
    _place(reading, out, where, (entry, target))
    report.copied += entry == "file"
    return [f"{target_dir}/{prefix}/{relpath}", _original_path(job, prefix, relpath), entry, None]


def _original_path(job: FatJob, prefix: str, relpath: str) -> str:
    return relpath if job.source is None else f"{job.source}/{prefix}/{relpath}"


def _place(
    reading: SplitInput,
    destination: SplitDestination,
    where: tuple[str, Path],
    found: tuple[str, str | None],
) -> None:
    """Recreate one entry of the input, as the walk found it (its kind and a symlink's
    checked target): ``where`` is (its path in the output, its path in the input)."""
    path, source = where
    entry, target = found
    if entry == "dir":
        destination.directory(path, reading.status(source, stat.S_IFDIR))
    elif entry == "symlink":
        assert target is not None
        destination.symlink(path, target)  # the target the walk checked, not read again
    else:
        destination.copy(path, reading, source)


def _archive_name(group: str, arch: str) -> str:
    return f"{group}_{arch}.kpack"


# Bytes the objects waiting for the pool may hold: the decompressed bundles they are
# views of, and the buffers they are compressed into (zstd's bound: about their size).
# Large compressed bundles are then in memory one or two at a time, not one per object.
IN_FLIGHT = 256 << 20


# Objects waiting for the pool: (key, object, its task, bytes in flight freed when stored).
_Pending = deque[tuple[str, CodeObject, Future[tuple[int, bytes, str]], int]]


class _Archives:
    """The job's archives, one per processor, each opened when its first code object
    comes (so ``gfx_arches`` lists exactly the target ids it holds)."""

    def __init__(
        self,
        job: FatJob,
        out: SplitDestination,
        report: SplitReport,
        arch_dirs: dict[str, set[str]],
        jobs: int,
        max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
    ):
        self._job, self._out, self._report, self._arch_dirs = job, out, report, arch_dirs
        self._jobs = jobs
        self.max_object_size = max_object_size
        self._handles: dict[str, BinaryIO] = {}
        self._writers: dict[str, kpack.KpackWriter] = {}
        self.paths: dict[str, str] = {}  # processor -> archive path relative to OUT

    def _writer(self, arch: str, target: str) -> kpack.KpackWriter:
        if arch not in self._writers:
            job = self._job
            directory = artifact_name(job.group, arch)
            relpath = posixpath.join(
                directory, job.kpack_prefix, job.kpack_dir, _archive_name(job.group, arch)
            )
            self._arch_dirs.setdefault(directory, set()).add(job.kpack_prefix)
            self._handles[arch] = self._out.new_file(relpath)  # closed by close()
            self._writers[arch] = kpack.KpackWriter(
                self._handles[arch], job.group, arch, arches=[target]
            )
            self.paths[arch] = relpath
        return self._writers[arch]

    def add(self, binary: FatBinary, item: _Found, pool: ThreadPoolExecutor) -> CodeDigests:
        """Every code object of one binary, under ``<prefix>/<path>#<co_index>``;
        the size and sha256 of each, by (processor, target id, key).

        A bundle several wrappers point at is stored once, under the first one's
        index (:attr:`~gfxpack.fatbin.reader.Device.co_index`, which the rewrite
        gives each of them): archives grow with the bundles, never with the wrappers.

        The pool's threads compress and hash (both release the GIL) a few objects
        ahead, with no wait between bundles; this thread adds them in bundle order,
        so each archive's bytes do not depend on which thread finished first.
        xnack variants go into their processor's archive."""
        kernel_name = f"{item.prefix}/{item.relpath}"
        digests: dict[tuple[str, str, str], tuple[int, bytes]] = {}
        ahead = 2 * self._jobs  # bounds the objects waiting at once
        pending: _Pending = deque()
        in_flight = 0  # see IN_FLIGHT
        try:
            for device in binary.devices:
                if not device.first:
                    continue
                key = f"{kernel_name}#{device.co_index}"
                found = device.bundle
                held = found.uncompressed_size if found.compression is not None else 0
                in_flight = self._make_room(pending, in_flight, held, digests)
                contents = found.contents()
                in_flight += held
                for number, obj in enumerate(found.code_objects):
                    totals = self._report.arches.setdefault(obj.target.processor, ArchTotals())
                    totals.code_objects += 1
                    totals.code_bytes += obj.size
                    in_flight = self._make_room(pending, in_flight, obj.size, digests, ahead)
                    code = contents[obj.offset : obj.offset + obj.size]
                    # The bundle's buffer lives until its last object is stored.
                    frees = obj.size + (held if number == len(found.code_objects) - 1 else 0)
                    pending.append((key, obj, pool.submit(kpack.compress_code, code), frees))
                    in_flight += obj.size
                del contents  # so that making room for the next bundle can free it
            while pending:
                self._store(*pending.popleft(), digests)
        finally:
            # Nothing may still read the binary's map once it is closed.
            for _key, _obj, task, _frees in pending:
                task.cancel()
            wait([task for _key, _obj, task, _frees in pending])
        return digests

    def _make_room(
        self,
        pending: _Pending,
        in_flight: int,
        wanted: int,
        digests: dict[tuple[str, str, str], tuple[int, bytes]],
        most: int | None = None,
    ) -> int:
        """Store waiting objects until ``wanted`` more bytes fit in IN_FLIGHT and fewer
        than ``most`` wait (or none is left); the bytes then in flight."""
        while pending and (
            in_flight + wanted > IN_FLIGHT or (most is not None and len(pending) >= most)
        ):
            in_flight -= self._store(*pending.popleft(), digests)
        return in_flight

    def _store(
        self,
        key: str,
        obj: CodeObject,
        task: Future[tuple[int, bytes, str]],
        frees: int,
        digests: dict[tuple[str, str, str], tuple[int, bytes]],
    ) -> int:
        """Add one compressed object to its archive; the bytes in flight that frees."""
        size, frame, sha256 = task.result()
        target = str(obj.target)
        self._writer(obj.target.processor, target).add_compressed(
            key, (size, frame, sha256), target
        )
        digests[obj.target.processor, target, key] = (size, bytes.fromhex(sha256))
        return frees

    def close(self) -> dict[str, str]:
        try:
            for writer in self._writers.values():
                writer.close()
        finally:
            for handle in self._handles.values():
                handle.close()
        for arch, relpath in self.paths.items():
            self._report.arches[arch].archive_bytes = self._out.size(relpath)
        return dict(sorted(self.paths.items()))


def _rewrite(
    job: FatJob,
    binary: FatBinary,
    item: _Found,
    places: tuple[SplitDestination, SplitInput, os.stat_result],
    report: SplitReport,
    known: CodeDigests,
    literals: BinaryIO,
) -> dict[str, Any] | None:
    """Write the host part of one fat binary; its join recipe, or None if kept whole.
    ``places``: OUT, the input and the status of the binary as it was opened.

    The search path leads from the binary's directory to the archive once every
    prefix is installed into one: ``lib/x.so`` finds ``../.kpack/<group>_@GFXARCH@.kpack``.
    """
    out, reading, info = places
    archive = posixpath.join(job.kpack_dir, _archive_name(job.group, ARCH_PLACEHOLDER))
    search = posixpath.relpath(archive, posixpath.dirname(item.relpath) or ".")
    kernel_name = f"{item.prefix}/{item.relpath}"
    data_end = literals.tell()
    try:
        with out.new_file(item.out_path) as handle:
            recipe = split_binary(
                binary, handle, kernel_name, [search], lambda t: t.processor, known, literals
            )
            os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            handle.flush()  # so that closing writes nothing after the times are set
            os.utime(handle.fileno(), ns=(info.st_atime_ns, info.st_mtime_ns))
    except NotWorthSplitting as e:
        out.remove(item.out_path)
        literals.seek(data_end)  # the bytes its recipe would have referred to
        literals.truncate()
        report.notes.append(f"{binary.path}: kept whole: {e}")
        out.copy(item.out_path, reading, binary.path)
        report.copied += 1
        return None
    report.binaries += 1
    report.fat_bytes += info.st_size
    report.host_bytes += out.size(item.out_path)
    return recipe.to_msgpack()


__all__ = [
    "LITERALS",
    "SPLIT_INDEX",
    "InvalidFatBinary",
    "SplitError",
    "SplitReport",
    "read_split_index",
    "split",
    "split_tree",
    "tree_part",
]
