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
``oclc_isa_version_90a.bc``) move to that arch's artifact unchanged. Files
without device code are hard-linked (copied across file systems).

Everything is written under a temporary directory renamed to OUT at the end;
``gfxpack-split.msgpack`` at OUT's top records, for :mod:`gfxpack.fatbin.join`,
where every file came from and how to undo each rewrite; ``gfxpack-split.data``
holds the long byte runs those records refer to (compressed bundles).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import stat
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack

from gfxpack import kpack
from gfxpack.artifacts import MANIFEST, THEROCK_MANIFEST, _read_manifest
from gfxpack.errors import GfxpackError
from gfxpack.fatbin import InvalidFatBinary
from gfxpack.fatbin.bundle import CodeObject
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.rewrite import CodeDigests, NotWorthSplitting, split_binary, too_small
from gfxpack.fatbin.targets import MACH
from gfxpack.plan.artifact_index import ARTIFACT_DIR, GENERIC

INDEX = "gfxpack-split.msgpack"
LITERALS = "gfxpack-split.data"  # long literal bytes of the join records
INDEX_FORMAT = 2  # 2: the original's digest takes code objects by their sha256
TREE_PREFIX = "stage"
DEFAULT_KPACK_DIR = ".kpack"
ARCH_PLACEHOLDER = "@GFXARCH@"
NAME_COMPONENT = re.compile(r"^[A-Za-z][A-Za-z0-9-]*_[a-z]+$")
_PROCESSORS = sorted((p for p in MACH if "generic" not in p), key=len, reverse=True)
_GFX_TOKEN = re.compile(r"(?<![A-Za-z0-9])gfx([0-9]+[0-9a-z]*)")
_ISA_BITCODE = re.compile(r"^oclc_isa_version_([0-9]+[0-9a-z]*)\.bc$")


class SplitError(GfxpackError, ValueError):
    """An input or output directory split cannot use."""


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
                for arch, t in sorted(self.arches.items())
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


@dataclass
class _Job:
    """One fat artifact: where its prefixes are read from and where its parts go."""

    group: str  # <name>_<component>
    source: str | None  # the input directory name (TheRock), None for a plain tree
    prefixes: list[tuple[str, Path]]  # (prefix as written in the output, content root)
    kpack_prefix: str  # the prefix that holds the archives
    kpack_dir: str  # archive directory relative to the install prefix
    manifest: Path | None = None  # the input's artifact_manifest.txt (TheRock)


def data_file_arch(relpath: str) -> str | None:
    """The processor a per-arch data file belongs to, from its name or a directory's.

    >>> [data_file_arch(p) for p in ("library/TensileLibrary_gfx90a.co",
    ...  "lib/Kernels.so-000-gfx90a-xnack+.hsaco", "db/gfx942130.db.txt",
    ...  "amdgcn/bitcode/oclc_isa_version_90a.bc", "library/TensileLibrary.dat")]
    ['gfx90a', 'gfx90a', 'gfx942', 'gfx90a', None]
    """
    parts = relpath.split("/")
    isa = _ISA_BITCODE.match(parts[-1])
    if isa and f"gfx{isa.group(1)}" in MACH:
        return f"gfx{isa.group(1)}"
    for part in parts:
        for token in _GFX_TOKEN.finditer(part):
            word = "gfx" + token.group(1)
            for processor in _PROCESSORS:
                if word.startswith(processor):
                    return processor
    return None


def split_tree(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    name: str | None = None,
    kpack_dir: str | None = None,
    jobs: int = 1,
    force: bool = False,
) -> SplitReport:
    """Split ``source`` into ``out`` (see the module docstring)."""
    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise SplitError(f"{source}: not a directory")
    if kpack_dir is not None:
        normalized = posixpath.normpath(kpack_dir)
        if kpack_dir.startswith("/") or normalized == ".." or normalized.startswith("../"):
            raise SplitError(f"--kpack-dir {kpack_dir!r}: expected a path inside the tree")
        kpack_dir = normalized
    if out.exists() or out.is_symlink():
        if not force:
            raise SplitError(f"{out}: already exists (remove it, or replace it with --force)")
        if (
            out.is_symlink()
            or not out.is_dir()
            or (any(out.iterdir()) and not (out / INDEX).is_file())
        ):
            raise SplitError(
                f"{out}: not the output of an earlier split; --force will not replace it"
            )
    resolved_out, resolved_source = out.resolve(), source.resolve()
    if resolved_out == resolved_source or resolved_source in resolved_out.parents:
        raise SplitError(f"{out}: must not be inside the input {source}")
    if resolved_out in resolved_source.parents:
        raise SplitError(f"{out}: must not contain the input {source}")
    fat_dirs, copied_dirs = _therock_layout(source)
    if fat_dirs or copied_dirs:
        if name is not None:
            raise SplitError(f"{source}: a TheRock artifacts directory names itself; drop --name")
        work = [_therock_job(source, d, kpack_dir) for d in fat_dirs]
        kind = "therock"
    else:
        if name is None:
            raise SplitError(
                f"{source}: not a TheRock artifacts directory; give --name NAME_COMPONENT "
                "(such as sparse_lib) to split it as an install tree"
            )
        if not NAME_COMPONENT.match(name):
            raise SplitError(f"--name {name!r}: expected <name>_<component>, such as sparse_lib")
        work = [
            _Job(name, None, [(TREE_PREFIX, source)], TREE_PREFIX, kpack_dir or DEFAULT_KPACK_DIR)
        ]
        copied_dirs = []
        kind = "tree"

    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir()
    report = SplitReport(out)
    try:
        index: dict[str, Any] = {"format": INDEX_FORMAT, "kind": kind, "jobs": [], "copied": []}
        for directory in copied_dirs:
            _copy_tree(source / directory, temporary / directory)
            index["copied"].append(directory)
        with open(temporary / LITERALS, "wb") as literals:
            for job in work:
                index["jobs"].append(_split_job(job, temporary, report, max(1, jobs), literals))
        original = source / THEROCK_MANIFEST
        if kind == "therock" and original.is_file():
            index["therock_manifest"] = original.read_bytes()
        # Tells 'gfxpack build' that device code is already split out (kpack mode).
        _write_therock_manifest(
            original if kind == "therock" else None, temporary / THEROCK_MANIFEST
        )
        (temporary / INDEX).write_bytes(msgpack.packb(index, use_bin_type=True))
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            shutil.rmtree(old)
        temporary.rename(out)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return report


def _therock_layout(source: Path) -> tuple[list[str], list[str]]:
    """(fat artifact directories, directories copied as they are)."""
    fat: list[str] = []
    copied: list[str] = []
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        match = ARTIFACT_DIR.match(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False):
            continue
        if not os.path.isfile(os.path.join(entry.path, MANIFEST)):
            continue
        (fat if match[3] != GENERIC else copied).append(entry.name)
    for directory in fat:
        match = ARTIFACT_DIR.match(directory)
        assert match
        generic = f"{match[1]}_{match[2]}_{GENERIC}"
        others = [
            d for d in fat if d != directory and d.rsplit("_", 1)[0] == generic.rsplit("_", 1)[0]
        ]
        if generic in copied or others:
            clash = generic if generic in copied else others[0]
            raise SplitError(
                f"{source}: {directory} and {clash} would both give {generic}; "
                "split them separately"
            )
    return fat, copied


def _therock_job(source: Path, directory: str, kpack_dir: str | None) -> _Job:
    match = ARTIFACT_DIR.match(directory)
    assert match
    prefixes = _read_manifest(source / directory / MANIFEST)
    if not prefixes:
        raise SplitError(f"{source / directory / MANIFEST}: lists no prefix")
    group = f"{match[1]}_{match[2]}"
    roots = [(prefix, source / directory / prefix) for prefix in prefixes]
    return _Job(
        group,
        directory,
        roots,
        sorted(prefixes)[0],
        kpack_dir or DEFAULT_KPACK_DIR,
        source / directory / MANIFEST,
    )


def _split_job(
    job: _Job, out: Path, report: SplitReport, jobs: int, literals: BinaryIO
) -> dict[str, Any]:
    """Walk the job's prefixes once: each fat binary is split (code objects into the
    archives, host part rewritten) and closed as soon as it is reached, so open
    files and maps stay bounded whatever the tree's size."""
    generic = f"{job.group}_{GENERIC}"
    files: list[list[Any]] = []  # [output path, original path, kind, recipe or None]
    arch_dirs: dict[str, set[str]] = {}  # arch directory -> prefixes it holds
    (out / generic).mkdir()
    if job.manifest is not None:
        _link_or_copy(job.manifest, out / generic / MANIFEST)
        files.append([f"{generic}/{MANIFEST}", f"{job.source}/{MANIFEST}", "file", None])
    else:
        (out / generic / MANIFEST).write_text(f"{TREE_PREFIX}\n")
    archives = _Archives(job, out, report, arch_dirs, jobs)
    with ThreadPoolExecutor(jobs) as pool:
        try:
            for prefix, root in job.prefixes:
                if not root.is_dir():
                    continue
                for relpath, entry in _walk(root):
                    item = _Found(generic, prefix, relpath, _original_path(job, prefix, relpath))
                    done = None
                    if entry == "file":
                        done = _split_file(job, out, report, archives, (pool, literals), root, item)
                    files.append(
                        done
                        or _copy_entry(job, out, report, arch_dirs, prefix, root, relpath, entry)
                    )
        finally:
            paths = archives.close()
    for directory, prefixes in sorted(arch_dirs.items()):
        (out / directory / MANIFEST).write_text("".join(f"{p}\n" for p in sorted(prefixes)))
    return {
        "group": job.group,
        "source": job.source,
        "generic": generic,
        "archives": paths,
        "files": files,
    }


def _split_file(
    job: _Job,
    out: Path,
    report: SplitReport,
    archives: _Archives,
    helpers: tuple[ThreadPoolExecutor, BinaryIO],
    root: Path,
    item: _Found,
) -> list[Any] | None:
    """Split one file if it carries device code worth splitting: its index entry,
    or None when it is to be copied as it is."""
    pool, literals = helpers
    with FatBinary(root / item.relpath) as binary:
        reason = binary.unsplittable or (too_small(binary) if binary.devices else None)
        if reason:
            report.notes.append(f"{binary.path}: kept whole: {reason}")
        if reason or not binary.devices:
            return None
        # The archives hash every code object they store; the original's digest
        # (join checks it) reuses those, so no byte is hashed twice.
        known = archives.add(binary, item, pool)
        recipe = _rewrite(job, binary, item, out, report, known, literals)
        return [item.out_path, item.original, "binary" if recipe else "file", recipe]


def _copy_entry(
    job: _Job,
    out: Path,
    report: SplitReport,
    arch_dirs: dict[str, set[str]],
    prefix: str,
    root: Path,
    relpath: str,
    entry: str,
) -> list[Any]:
    """Place an entry without device code: in its arch's artifact when its name (or a
    directory's above it) says one, such as ``library/gfx90a/`` and what it holds."""
    target_dir = f"{job.group}_{GENERIC}"
    arch = data_file_arch(relpath)
    if arch is not None:
        target_dir = f"{job.group}_{arch}"
        arch_dirs.setdefault(target_dir, set()).add(prefix)
        if entry == "file":
            totals = report.arches.setdefault(arch, ArchTotals())
            totals.data_files += 1
            totals.data_bytes += (root / relpath).lstat().st_size
    _place(root / relpath, out / target_dir / prefix / relpath, entry)
    report.copied += entry == "file"
    return [f"{target_dir}/{prefix}/{relpath}", _original_path(job, prefix, relpath), entry, None]


def _original_path(job: _Job, prefix: str, relpath: str) -> str:
    return relpath if job.source is None else f"{job.source}/{prefix}/{relpath}"


def _walk(root: Path) -> Iterator[tuple[str, str]]:
    """(relative path, "dir" | "file" | "symlink") under root, sorted, links not followed."""
    for directory, dirnames, filenames in os.walk(root):
        dirnames.sort()
        relative = os.path.relpath(directory, root)
        for name in sorted(dirnames + filenames):
            path = os.path.join(directory, name)
            info = os.lstat(path)
            rel = name if relative == "." else f"{relative}/{name}"
            if stat.S_ISLNK(info.st_mode):
                yield rel, "symlink"
            elif stat.S_ISDIR(info.st_mode):
                yield rel, "dir"
            elif stat.S_ISREG(info.st_mode):
                yield rel, "file"
            else:
                raise SplitError(f"{path}: not a regular file, directory or symlink")
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(directory, d))]


def _place(source: Path, destination: Path, entry: str) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    if entry == "dir":
        destination.mkdir(exist_ok=True)
        shutil.copystat(source, destination)
    elif entry == "symlink":
        os.symlink(os.readlink(source), destination)
    else:
        _link_or_copy(source, destination)


def _link_or_copy(source: Path, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def _copy_tree(source: Path, destination: Path) -> None:
    destination.mkdir(parents=True)
    for relpath, entry in _walk(source):
        _place(source / relpath, destination / relpath, entry)


def _archive_name(group: str, arch: str) -> str:
    return f"{group}_{arch}.kpack"


class _Archives:
    """The job's archives, one per processor, each opened when its first code object
    comes (so ``gfx_arches`` lists exactly the target ids it holds)."""

    def __init__(
        self,
        job: _Job,
        out: Path,
        report: SplitReport,
        arch_dirs: dict[str, set[str]],
        jobs: int,
    ):
        self._job, self._out, self._report, self._arch_dirs = job, out, report, arch_dirs
        self._jobs = jobs
        self._handles: dict[str, BinaryIO] = {}
        self._writers: dict[str, kpack.KpackWriter] = {}
        self.paths: dict[str, str] = {}  # processor -> archive path relative to OUT

    def _writer(self, arch: str, target: str) -> kpack.KpackWriter:
        if arch not in self._writers:
            job = self._job
            directory = f"{job.group}_{arch}"
            relpath = posixpath.join(
                directory, job.kpack_prefix, job.kpack_dir, _archive_name(job.group, arch)
            )
            self._arch_dirs.setdefault(directory, set()).add(job.kpack_prefix)
            (self._out / relpath).parent.mkdir(parents=True, exist_ok=True)
            self._handles[arch] = open(self._out / relpath, "wb")  # noqa: SIM115 - see close()
            self._writers[arch] = kpack.KpackWriter(
                self._handles[arch], job.group, arch, arches=[target]
            )
            self.paths[arch] = relpath
        return self._writers[arch]

    def add(self, binary: FatBinary, item: _Found, pool: ThreadPoolExecutor) -> CodeDigests:
        """Every code object of one binary, under ``<prefix>/<path>#<wrapper index>``;
        the size and sha256 of each, by (processor, target id, key).

        The pool's threads compress and hash (both release the GIL) a few objects
        ahead, with no wait between bundles; this thread adds them in bundle order,
        so each archive's bytes do not depend on which thread finished first.
        xnack variants go into their processor's archive."""
        kernel_name = f"{item.prefix}/{item.relpath}"
        digests: dict[tuple[str, str, str], tuple[int, bytes]] = {}
        ahead = 2 * self._jobs  # bounds the bundles decompressed at once
        pending: deque[tuple[str, CodeObject, Future[tuple[int, bytes, str]]]] = deque()
        try:
            for device in binary.devices:
                key = f"{kernel_name}#{device.wrapper.index}"
                contents = device.bundle.contents()
                for obj in device.bundle.code_objects:
                    totals = self._report.arches.setdefault(obj.target.processor, ArchTotals())
                    totals.code_objects += 1
                    totals.code_bytes += obj.size
                    code = contents[obj.offset : obj.offset + obj.size]
                    pending.append((key, obj, pool.submit(kpack.compress_code, code)))
                    if len(pending) > ahead:
                        self._store(*pending.popleft(), digests)
            while pending:
                self._store(*pending.popleft(), digests)
        finally:
            # Nothing may still read the binary's map once it is closed.
            for *_, task in pending:
                task.cancel()
            wait([task for *_, task in pending])
        return digests

    def _store(
        self,
        key: str,
        obj: CodeObject,
        task: Future[tuple[int, bytes, str]],
        digests: dict[tuple[str, str, str], tuple[int, bytes]],
    ) -> None:
        size, frame, sha256 = task.result()
        target = str(obj.target)
        self._writer(obj.target.processor, target).add_compressed(
            key, (size, frame, sha256), target
        )
        digests[obj.target.processor, target, key] = (size, bytes.fromhex(sha256))

    def close(self) -> dict[str, str]:
        try:
            for writer in self._writers.values():
                writer.close()
        finally:
            for handle in self._handles.values():
                handle.close()
        for arch, relpath in self.paths.items():
            self._report.arches[arch].archive_bytes = (self._out / relpath).stat().st_size
        return dict(sorted(self.paths.items()))


def _rewrite(
    job: _Job,
    binary: FatBinary,
    item: _Found,
    out: Path,
    report: SplitReport,
    known: CodeDigests,
    literals: BinaryIO,
) -> dict[str, Any] | None:
    """Write the host part of one fat binary; its join recipe, or None if kept whole.

    The search path leads from the binary's directory to the archive once every
    prefix is installed into one: ``lib/x.so`` finds ``../.kpack/<group>_@GFXARCH@.kpack``.
    """
    destination = out / item.out_path
    archive = posixpath.join(job.kpack_dir, _archive_name(job.group, ARCH_PLACEHOLDER))
    search = posixpath.relpath(archive, posixpath.dirname(item.relpath) or ".")
    destination.parent.mkdir(parents=True, exist_ok=True)
    size = binary.path.stat().st_size
    kernel_name = f"{item.prefix}/{item.relpath}"
    try:
        with open(destination, "wb") as handle:
            recipe = split_binary(
                binary, handle, kernel_name, [search], lambda t: t.processor, known, literals
            )
    except NotWorthSplitting as e:
        destination.unlink()
        report.notes.append(f"{binary.path}: kept whole: {e}")
        _link_or_copy(binary.path, destination)
        report.copied += 1
        return None
    shutil.copystat(binary.path, destination)
    report.binaries += 1
    report.fat_bytes += size
    report.host_bytes += destination.stat().st_size
    return recipe.to_msgpack()


def _write_therock_manifest(original: Path | None, destination: Path) -> None:
    manifest: dict[str, Any] = {}
    if original is not None and original.is_file():
        try:
            manifest = json.loads(original.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SplitError(f"{original}: not JSON: {e}") from None
        if not isinstance(manifest, dict):
            raise SplitError(f"{original}: expected a JSON object")
    flags = manifest.setdefault("flags", {})
    if not isinstance(flags, dict):
        raise SplitError(f"{original}: 'flags' is not an object")
    flags["KPACK_SPLIT_ARTIFACTS"] = True
    destination.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def read_index(split: Path) -> dict[str, Any]:
    path = split / INDEX
    try:
        index = msgpack.unpackb(path.read_bytes(), raw=False)
    except FileNotFoundError:
        raise SplitError(f"{split}: no {INDEX}; not made by 'gfxpack split'") from None
    except (OSError, ValueError, msgpack.UnpackException) as e:
        raise SplitError(f"{path}: unreadable: {e}") from None
    if isinstance(index, dict) and index.get("format") == 1:
        raise SplitError(f"{path}: made by an earlier gfxpack; split the input again")
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        raise SplitError(f"{path}: unknown format")
    return index


__all__ = [
    "InvalidFatBinary",
    "SplitError",
    "SplitReport",
    "data_file_arch",
    "read_index",
    "split_tree",
]
