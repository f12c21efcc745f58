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
without device code are hard-linked (copied across file systems).

The input is read by the rules ``gfxpack build`` reads artifacts by
(:mod:`gfxpack.artifact_files`), all of it before anything is written: no symlink
on the way to the content (artifact directory, manifest, its prefixes, an install
tree's top), none followed inside it, a symlink kept only when its target is
relative and stays inside its tree (the rule of
:func:`~gfxpack.artifact_files.symlink_target_problem`: a split has no install
prefix yet, so an absolute target is refused), UTF-8 names, only regular files,
directories and symlinks. The files are then read through a
:class:`~gfxpack.safe_tree.Tree` of the input, one directory at a time without
following links, so a directory swapped for a symlink after the walk leads nowhere.

Everything is written under a temporary directory renamed to OUT at the end;
``gfxpack-split.msgpack`` at OUT's top records, for :mod:`gfxpack.fatbin.join`,
where every file came from and how to undo each rewrite; ``gfxpack-split.data``
holds the long byte runs those records refer to (compressed bundles).

One module, past 500 lines, because reading the input trees, writing the output
tree and filling the per-arch archives share one job and one temporary OUT; the
per-binary work it calls lives in reader.py, rewrite.py and bundle.py.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posixpath
import re
import shutil
import stat
import tempfile
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack

from gfxpack import kpack
from gfxpack._io import DIRECTORY_MODE, replace_directory
from gfxpack.artifact_files import real_directory, walk
from gfxpack.artifact_layout import (
    ARTIFACT_DIR,
    GENERIC,
    MANIFEST,
    THEROCK_MANIFEST,
    artifact_directories,
    read_manifest,
    read_therock_manifest,
)
from gfxpack.errors import GfxpackError
from gfxpack.fatbin import InvalidFatBinary
from gfxpack.fatbin.bundle import CodeObject
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.rewrite import (
    CodeDigests,
    NotWorthSplitting,
    split_binary,
    too_many_zeros,
    too_small,
)
from gfxpack.file_arch import file_arch
from gfxpack.plan.targets import target_order
from gfxpack.regular_files import NotARegularFile, file_kind, open_regular, printable
from gfxpack.safe_tree import Tree, TreeError, copy_bytes

INDEX = "gfxpack-split.msgpack"
LITERALS = "gfxpack-split.data"  # long literal bytes of the join records
INDEX_FORMAT = 2  # 2: the original's digest takes code objects by their sha256
TREE_PREFIX = "stage"
DEFAULT_KPACK_DIR = ".kpack"
ARCH_PLACEHOLDER = "@GFXARCH@"
NAME_COMPONENT = re.compile(r"^[A-Za-z][A-Za-z0-9-]*_[a-z]+$")


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


# Every entry of a content directory: (path inside it, "dir" | "file" | "symlink",
# a symlink's target as checked), parents before their children.
_Content = list[tuple[str, str, str | None]]


class _Input:
    """The input as the writers read it after the walk checked it: through a Tree, one
    directory at a time without following links; a path is named as the walk found it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tree = Tree(root)

    def parts(self, path: Path) -> tuple[str, ...]:
        return path.relative_to(self.root).parts

    def open(self, path: Path) -> BinaryIO:
        """The regular file ``path``, open for reading."""
        return os.fdopen(self.tree.open_file(self.parts(path)), "rb")

    def status(self, path: Path, expected: int) -> os.stat_result:
        """The status of ``path`` itself, which must still be of the kind the walk
        found (``stat.S_IFDIR``, ``stat.S_IFREG``)."""
        info = self.tree.status(self.parts(path))
        if stat.S_IFMT(info.st_mode) != expected:
            now = file_kind(info.st_mode) if not stat.S_ISREG(info.st_mode) else "a regular file"
            raise SplitError(f"{printable(str(path))}: changed while it was split (now {now})")
        return info

    def link(self, path: Path, destination: Path) -> bool:
        return self.tree.link(self.parts(path), destination)

    def close(self) -> None:
        self.tree.close()


@dataclass
class _Job:
    """One fat artifact: where its prefixes are read from and where its parts go."""

    group: str  # <name>_<component>
    source: str | None  # the input directory name (TheRock), None for a plain tree
    # (prefix as written in the output, content root, what it holds)
    prefixes: list[tuple[str, Path, _Content]]
    kpack_prefix: str  # the prefix that holds the archives
    kpack_dir: str  # archive directory relative to the install prefix
    manifest: Path | None = None  # the input's artifact_manifest.txt (TheRock)


def split_tree(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    name: str | None = None,
    kpack_dir: str | None = None,
    jobs: int = 1,
    force: bool = False,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> SplitReport:
    """Split ``source`` into ``out`` (see the module docstring). No decompressed
    bundle or code object may exceed ``max_object_size`` bytes (see
    :class:`~gfxpack.fatbin.reader.FatBinary` for what else bounds the work)."""
    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise SplitError(f"{source}: not a directory")
    if kpack_dir is not None:
        normalized = posixpath.normpath(kpack_dir)
        if kpack_dir.startswith("/") or normalized == ".." or normalized.startswith("../"):
            raise SplitError(f"--kpack-dir {kpack_dir!r}: expected a path inside the tree")
        kpack_dir = normalized
    if out.name in ("", ".", ".."):
        raise SplitError(f"{out}: expected the name of a directory to create")
    if out.exists() or out.is_symlink():
        if not force:
            raise SplitError(f"{out}: already exists (remove it, or replace it with --force)")
        if out.is_symlink() or not out.is_dir() or (any(out.iterdir()) and not _is_split(out)):
            raise SplitError(
                f"{out}: not the output of an earlier split; --force will not replace it"
            )
    resolved_out, resolved_source = out.resolve(), source.resolve()
    if resolved_out == resolved_source or resolved_source in resolved_out.parents:
        raise SplitError(f"{out}: must not be inside the input {source}")
    if resolved_out in resolved_source.parents:
        raise SplitError(f"{out}: must not contain the input {source}")
    fat_dirs, copied_dirs, notes = _therock_layout(source)
    # The whole input is read before anything is written: every problem in one run,
    # and nothing to undo.
    problems: list[str] = []
    copied: list[tuple[str, _Content]] = []
    therock_manifest = None
    if fat_dirs or copied_dirs:
        if name is not None:
            raise SplitError(f"{source}: a TheRock artifacts directory names itself; drop --name")
        work = [_therock_job(source, d, kpack_dir, problems) for d in fat_dirs]
        copied = [(d, _copied_content(source, d, problems)) for d in copied_dirs]
        therock_manifest = _read_therock_manifest(source / THEROCK_MANIFEST)
        kind = "therock"
    else:
        if name is None:
            raise SplitError(
                f"{source}: not a TheRock artifacts directory; give --name NAME_COMPONENT "
                "(such as sparse_lib) to split it as an install tree"
            )
        if not NAME_COMPONENT.match(name):
            raise SplitError(f"--name {name!r}: expected <name>_<component>, such as sparse_lib")
        if source.is_symlink():
            raise SplitError(
                f"{printable(str(source))}: is a symlink; give the directory it points to "
                "(gfxpack never follows a directory symlink)"
            )
        content = _content(source, "", problems)
        work = [
            _Job(
                name,
                None,
                [(TREE_PREFIX, source, content)],
                TREE_PREFIX,
                kpack_dir or DEFAULT_KPACK_DIR,
            )
        ]
        notes = []
        kind = "tree"
    if problems:
        raise SplitError("\n".join(dict.fromkeys(problems)))

    temporary = _temporary(out)
    report = SplitReport(out, notes=notes)
    try:
        index: dict[str, Any] = {"format": INDEX_FORMAT, "kind": kind, "jobs": [], "copied": []}
        with contextlib.closing(_Input(source)) as reading:
            for directory, entries in copied:
                _copy_tree(reading, source / directory, temporary / directory, entries)
                index["copied"].append(directory)
            with open(temporary / LITERALS, "wb") as literals:
                writing = (reading, literals, max(1, jobs))
                for job in work:
                    index["jobs"].append(
                        _split_job(job, temporary, report, writing, max_object_size)
                    )
        manifest: dict[str, Any] = {}
        if therock_manifest is not None:
            index["therock_manifest"], manifest = therock_manifest
        # Tells 'gfxpack build' that device code is already split out (kpack mode).
        manifest.setdefault("flags", {})["KPACK_SPLIT_ARTIFACTS"] = True
        (temporary / THEROCK_MANIFEST).write_text(
            json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        )
        (temporary / INDEX).write_bytes(msgpack.packb(index, use_bin_type=True))
        try:
            replace_directory(temporary, out, force)
        except OSError as e:
            raise SplitError(f"{out}: cannot replace: {e.strerror or e}") from None
    except OSError as e:
        raise _write_error(e, out, temporary) from None
    except TreeError as e:  # the input, read after the walk, is not what the walk found
        raise SplitError(str(e)) from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return report


def _is_split(out: Path) -> bool:
    """Whether the directory ``out`` holds a split record (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(out / INDEX).st_mode)
    except OSError:
        return False


def _temporary(out: Path) -> Path:
    """A new directory beside ``out`` to write the split in, renamed to ``out`` when
    complete; its mode whatever the umask, as every directory gfxpack makes."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        os.chmod(temporary, DIRECTORY_MODE)
    except OSError as e:
        raise SplitError(f"{out}: cannot write in {out.parent}: {e.strerror or e}") from None
    return temporary


def _write_error(error: OSError, out: Path, temporary: Path) -> SplitError | OSError:
    """What the system refused while the split was written, as one line naming OUT and
    the file (or the input file that could not be read); anything else as it is."""
    cause = error.strerror or str(error)
    names = [
        Path(os.fsdecode(name))
        for name in (error.filename, error.filename2)
        if isinstance(name, str | bytes | os.PathLike)
    ]
    for path in names:
        if path == temporary:
            return SplitError(f"{out}: cannot write: {cause}")
        if temporary in path.parents:
            where = printable(str(path.relative_to(temporary)))
            if isinstance(error, FileExistsError):
                return SplitError(
                    f"{out}: {where}: written twice; the input holds a file where split "
                    "puts one of its own"
                )
            return SplitError(f"{out}: cannot write {where}: {cause}")
    if names:
        return SplitError(f"{printable(str(names[0]))}: cannot read: {cause}")
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO):
        return SplitError(f"{out}: cannot write: {cause}")
    return error


def _therock_layout(source: Path) -> tuple[list[str], list[str], list[str]]:
    """(fat artifact directories, directories copied as they are, notes), found as
    ``gfxpack build`` finds them."""
    fat: list[str] = []
    copied: list[str] = []
    directories, notes = artifact_directories(source)
    for directory in directories:
        match = ARTIFACT_DIR.match(directory)
        assert match
        (fat if match[3] != GENERIC else copied).append(directory)
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
    return fat, copied, notes


def _therock_job(source: Path, directory: str, kpack_dir: str | None, problems: list[str]) -> _Job:
    match = ARTIFACT_DIR.match(directory)
    assert match
    prefixes = _prefixes(source / directory / MANIFEST)
    if not prefixes:
        raise SplitError(f"{source / directory / MANIFEST}: lists no prefix")
    group = f"{match[1]}_{match[2]}"
    roots = [
        (prefix, source / directory / prefix, _content(source / directory, prefix, problems))
        for prefix in prefixes
    ]
    return _Job(
        group,
        directory,
        roots,
        sorted(prefixes)[0],
        kpack_dir or DEFAULT_KPACK_DIR,
        source / directory / MANIFEST,
    )


def _prefixes(manifest: Path) -> tuple[str, ...]:
    """A manifest's prefixes; none may lie inside another, as the split writes each
    under its own name (``gfxpack build`` merges them all into the install prefix)."""
    prefixes = read_manifest(manifest)
    for i, prefix in enumerate(prefixes):
        for j, other in enumerate(prefixes):
            if i != j and (other == prefix or other.startswith(f"{prefix}/")):
                raise SplitError(
                    f"{printable(str(manifest))}: {other!r} lies inside {prefix!r}; split "
                    "writes each file once, so prefixes must not overlap"
                )
    return prefixes


def _copied_content(source: Path, directory: str, problems: list[str]) -> _Content:
    """What a directory copied as it is holds: the artifact directory whole, read by
    the same rules, its manifest and the directories it names checked as for build."""
    known = len(problems)
    for prefix in read_manifest(source / directory / MANIFEST):
        real_directory(str(source / directory), prefix, problems)
    if len(problems) > known:
        return []  # a symlinked prefix: named once, not again as a symlink leaving
    return _content(source, directory, problems)


def _content(root: Path, relative: str, problems: list[str]) -> _Content:
    """Every entry of the content directory ``root/relative``, read by the rules of
    ``gfxpack build`` (the one walker of :mod:`gfxpack.artifact_files`): a symlink on
    the way to it, or one below it pointing outside it, a FIFO, a device, a name that
    is not UTF-8... each is a problem naming the path. Nothing when it does not exist."""
    if not real_directory(str(root), relative, problems):
        return []
    top = os.path.join(root, relative) if relative else str(root)
    # Entries come as "/<path inside top>": the tree has no install prefix yet.
    entries = walk(top, "", 0, True, problems, inside=printable(top), installed_at_prefix=False)
    # Modes are the packaging's business: split keeps them as they are.
    return [(entry.path[1:], str(entry.kind), entry.target) for entry in entries]


def _read_therock_manifest(path: Path) -> tuple[bytes, dict[str, Any]] | None:
    """The input's therock_manifest.json, never read through a symlink, and what it
    says (a "flags" object at least); None if there is none."""
    if not os.path.lexists(path):
        return None
    return read_therock_manifest(path)


def _split_job(
    job: _Job,
    out: Path,
    report: SplitReport,
    writing: tuple[_Input, BinaryIO, int],
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> dict[str, Any]:
    """Walk the job's prefixes once: each fat binary is split (code objects into the
    archives, host part rewritten) and closed as soon as it is reached, so open
    files and maps stay bounded whatever the tree's size. ``writing``: the input, the
    data file and the number of threads."""
    reading, literals, jobs = writing
    generic = f"{job.group}_{GENERIC}"
    files: list[list[Any]] = []  # [output path, original path, kind, recipe or None]
    arch_dirs: dict[str, set[str]] = {}  # arch directory -> prefixes it holds
    (out / generic).mkdir()
    if job.manifest is not None:
        _link_or_copy(reading, job.manifest, out / generic / MANIFEST)
        files.append([f"{generic}/{MANIFEST}", f"{job.source}/{MANIFEST}", "file", None])
    else:
        (out / generic / MANIFEST).write_text(f"{TREE_PREFIX}\n")
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
    helpers: tuple[ThreadPoolExecutor, BinaryIO, _Input],
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
    job: _Job,
    places: tuple[Path, _Input],
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
    target_dir = f"{job.group}_{GENERIC}"
    arch = file_arch(relpath)
    if arch is not None:
        target_dir = f"{job.group}_{arch}"
        arch_dirs.setdefault(target_dir, set()).add(prefix)
        if entry == "file":
            totals = report.arches.setdefault(arch, ArchTotals())
            totals.data_files += 1
            totals.data_bytes += reading.status(root / relpath, stat.S_IFREG).st_size
    _place(reading, root / relpath, out / target_dir / prefix / relpath, (entry, target))
    report.copied += entry == "file"
    return [f"{target_dir}/{prefix}/{relpath}", _original_path(job, prefix, relpath), entry, None]


def _original_path(job: _Job, prefix: str, relpath: str) -> str:
    return relpath if job.source is None else f"{job.source}/{prefix}/{relpath}"


# Everything the split writes is a new path: nothing there is replaced or written
# through (an input holding a file where split puts its own is an error, see
# _write_error), and nothing of the input is read through a symlink (see _Input).


def _place(reading: _Input, source: Path, destination: Path, found: tuple[str, str | None]) -> None:
    """Recreate one entry of the input, as the walk found it (its kind and a symlink's
    checked target), at ``destination``."""
    entry, target = found
    destination.parent.mkdir(parents=True, exist_ok=True)
    if entry == "dir":
        _directory(destination)
        info = reading.status(source, stat.S_IFDIR)
        os.chmod(destination, stat.S_IMODE(info.st_mode))
        os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif entry == "symlink":
        assert target is not None
        os.symlink(target, destination)  # the target the walk checked, not read again
    else:
        _link_or_copy(reading, source, destination)


def _directory(path: Path) -> None:
    """``path`` made a directory; one already there (the archives' or an arch's
    directory made first) must be a real directory."""
    try:
        path.mkdir()
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise


def _link_or_copy(reading: _Input, source: Path, destination: Path) -> None:
    """Hard-link the input's file ``source`` to ``destination``, or copy it where no
    hard link can be made (another file system)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if not reading.link(source, destination):
        _copy(reading, source, destination)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _copy(reading: _Input, source: Path, destination: Path) -> None:
    """Copy a regular file (never a symlink or a FIFO swapped in) with its mode and
    times to the new file ``destination``."""
    with reading.open(source) as file:
        info = os.fstat(file.fileno())
        try:
            fd = os.open(destination, _NEW_FILE, 0o600)
            try:
                copy_bytes(file.fileno(), fd)
                os.fchmod(fd, stat.S_IMODE(info.st_mode))
                os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
            finally:
                os.close(fd)
        except OSError as e:
            if e.filename is not None:
                raise
            # A failed write (a full disk) names no file: this one.
            raise OSError(e.errno, e.strerror, str(destination)) from None


def _copy_tree(reading: _Input, source: Path, destination: Path, content: _Content) -> None:
    destination.mkdir()
    for relpath, entry, target in content:
        _place(reading, source / relpath, destination / relpath, (entry, target))


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
        job: _Job,
        out: Path,
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
            directory = f"{job.group}_{arch}"
            relpath = posixpath.join(
                directory, job.kpack_prefix, job.kpack_dir, _archive_name(job.group, arch)
            )
            self._arch_dirs.setdefault(directory, set()).add(job.kpack_prefix)
            (self._out / relpath).parent.mkdir(parents=True, exist_ok=True)
            # "x": a new file, never one the input put there (see _write_error).
            self._handles[arch] = open(self._out / relpath, "xb")  # noqa: SIM115 - see close()
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
            self._report.arches[arch].archive_bytes = (self._out / relpath).stat().st_size
        return dict(sorted(self.paths.items()))


def _rewrite(
    job: _Job,
    binary: FatBinary,
    item: _Found,
    places: tuple[Path, _Input, os.stat_result],
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
    destination = out / item.out_path
    archive = posixpath.join(job.kpack_dir, _archive_name(job.group, ARCH_PLACEHOLDER))
    search = posixpath.relpath(archive, posixpath.dirname(item.relpath) or ".")
    destination.parent.mkdir(parents=True, exist_ok=True)
    kernel_name = f"{item.prefix}/{item.relpath}"
    data_end = literals.tell()
    try:
        with open(destination, "xb") as handle:  # a new file, never through a link
            recipe = split_binary(
                binary, handle, kernel_name, [search], lambda t: t.processor, known, literals
            )
            os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
    except NotWorthSplitting as e:
        destination.unlink()
        literals.seek(data_end)  # the bytes its recipe would have referred to
        literals.truncate()
        report.notes.append(f"{binary.path}: kept whole: {e}")
        _link_or_copy(reading, binary.path, destination)
        report.copied += 1
        return None
    os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))
    report.binaries += 1
    report.fat_bytes += info.st_size
    report.host_bytes += destination.stat().st_size
    return recipe.to_msgpack()


def read_index(split: Path) -> dict[str, Any]:
    """The split record of the split ``split``: a regular file read through the
    split's directory, never through a symlink (nor a FIFO, which would block)."""
    path = split / INDEX
    try:
        directory = os.open(split, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = open_regular(INDEX, follow_symlinks=False, dir_fd=directory)
        finally:
            os.close(directory)
        with os.fdopen(fd, "rb") as file:
            index = msgpack.unpackb(file.read(), raw=False)
    except FileNotFoundError:
        raise SplitError(f"{split}: no {INDEX}; not made by 'gfxpack split'") from None
    except NotARegularFile as e:
        raise SplitError(f"{printable(str(path))}: {e.strerror}") from None
    except (OSError, ValueError, msgpack.UnpackException) as e:
        raise SplitError(f"{printable(str(path))}: unreadable: {e}") from None
    if isinstance(index, dict) and index.get("format") == 1:
        raise SplitError(f"{path}: made by an earlier gfxpack; split the input again")
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        raise SplitError(f"{path}: unknown format")
    return index


__all__ = [
    "InvalidFatBinary",
    "SplitError",
    "SplitReport",
    "read_index",
    "split_tree",
]
