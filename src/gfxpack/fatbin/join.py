"""Put a split binary back together: the proof that a split loses nothing. One module,
past 600 lines, because joining one binary and joining a tree share the checks below,
each of which refuses a forged record in one place.

The host file is the original with ``[start, end)`` replaced by one page, a few
bytes patched and a tail appended (see :mod:`gfxpack.fatbin.rewrite`). Joining
copies the host's head and body back, undoes the patches, and rebuilds the
removed range from the recipe's pieces: zero runs, literal bytes, and slices of
code objects read from the archives. The result's digest (a sha256 of the
original taking each whole code object by its own sha256, see
:class:`~gfxpack.fatbin.rewrite.OriginalDigest`) must match the one recorded at
split time, or nothing is written.

A whole tree is joined from the split record (``gfxpack-split.msgpack``), which
anyone who could write the split could have forged, so join trusts nothing in it:

- Every path it names is a plain relative path (no leading ``/``, no empty, ``.``
  or ``..`` part, no NUL) inside the split or inside OUT.
- Each path is reached one directory at a time through descriptors opened without
  following symlinks (a :class:`~gfxpack.safe_tree.Tree`), in the split and in OUT
  alike: neither a symlink in the split nor one an earlier entry made in OUT is ever
  followed. Only regular files are read; files are created with ``O_EXCL``, so
  nothing is written twice or through a link.
- Files are copied, never hard-linked: OUT shares no inode with the split, so
  editing the joined tree cannot change the split (which ``build`` packages). The
  copies keep their permission bits but not setuid, setgid or sticky: a copy
  belongs to whoever runs join.
- A symlink is recreated only when its target stays inside OUT, by the rule build
  and split apply (:func:`~gfxpack.artifact_files.symlink_target_problem`): a
  relative path whose ``..`` parts all come first, no more of them than the
  directories above the link.
- The work is bounded by the split's size, whatever the record claims: each file of
  the split is read for one entry at most, each code object of an archive once (and
  an archive's objects expand to at most 256 times its size, or --max-object-size),
  each byte of the data file once, and zero runs, the one piece nothing in the split
  holds, add at most 15 bytes for each other byte of an original (see
  :func:`~gfxpack.fatbin.rewrite.zero_problem`). So join writes at most 16 times the
  bytes it takes from the split (its files as they are, the archives' code objects
  decompressed).
- Everything is written under a temporary directory beside OUT, renamed to OUT when
  complete; on any error it is removed and OUT is left as it was.

Only the binaries are checked against their originals (the record holds their
digests); the other files are copies of the split's.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, BinaryIO

from gfxpack import kpack
from gfxpack._io import DIRECTORY_MODE, FILE_MODE, replace_directory
from gfxpack.artifact_files import name_problem, symlink_target_problem
from gfxpack.artifact_layout import THEROCK_MANIFEST
from gfxpack.errors import GfxpackError
from gfxpack.fatbin.reader import EXPANSION
from gfxpack.fatbin.record import LITERALS, SPLIT_INDEX, read_split_index
from gfxpack.fatbin.rewrite import COPY_CHUNK, OriginalDigest, Recipe, zero_problem, zero_runs
from gfxpack.regular_files import file_kind, printable
from gfxpack.safe_tree import Refused, Tree, TreeError, copy_bytes, write_all

CodeLookup = Callable[[str, str, str], bytes]  # (archive label, target id, toc key) -> code

_PERMISSIONS = 0o777  # a copy's mode: no setuid, setgid or sticky bit


class JoinError(GfxpackError, ValueError):
    """A split tree, or a split record, that join refuses: one that does not give back
    its original bytes, or would have join read or write outside its place."""


def join_binary(
    host: BinaryIO,
    name: str,
    recipe: Recipe,
    lookup: CodeLookup,
    out: BinaryIO,
    literals: BinaryIO | DataFile | None = None,
) -> None:
    """Write the original of the host file ``host`` (called ``name`` in messages) to
    ``out``; JoinError when it does not match. ``literals`` is the split's data file,
    for records that refer to it."""
    _check_pieces(name, recipe)
    digest = OriginalDigest()
    host_size = os.fstat(host.fileno()).st_size
    body = recipe.original_size - recipe.end  # bytes after the removed range
    if host_size < recipe.start + recipe.page + body:
        raise JoinError(f"{name}: {host_size} bytes, too short for the split it records")
    patches = sorted(recipe.patches)
    for (before, patch), (after, _) in itertools.pairwise(patches):
        if before + len(patch) > after:  # split never writes two over the same bytes
            raise JoinError(f"{name}: the split record patches the bytes at {after} twice")
    cache: dict[tuple[str, str, str], bytes] = {}

    def emit(data: bytes | memoryview) -> None:
        out.write(data)
        digest.update(data)

    _copy_unpatched(host, name, 0, 0, recipe.start, patches, emit)
    for piece in recipe.pieces:
        kind = piece[0]
        if kind == 0:
            for run in range(0, piece[1], COPY_CHUNK):
                emit(bytes(min(COPY_CHUNK, piece[1] - run)))
        elif kind == 1:
            emit(piece[1])
        elif kind == 3:
            _copy_literal(name, literals, piece[1], piece[2], emit)
        else:
            _, label, target, key, skip, length = piece
            wanted = (label, target, key)
            if wanted not in cache:
                cache.clear()  # pieces of one code object are consecutive
                cache[wanted] = lookup(label, target, key)
            code = cache[wanted]
            if skip + length > len(code):
                raise JoinError(f"{name}: {key} for {target} is shorter than recorded")
            if skip == 0 and length == len(code):  # a whole code object
                out.write(code)
                digest.code_object(length, hashlib.sha256(code).digest())
            else:
                emit(code[skip : skip + length])
    _copy_unpatched(host, name, recipe.start + recipe.page, recipe.end, body, patches, emit)
    if digest.hexdigest() != recipe.sha256:
        raise JoinError(f"{name}: the joined bytes differ from the original (sha256 mismatch)")


class DataFile:
    """The split's data file, each of whose bytes a split record refers to once: all
    its references together may take no more than its size."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.size = self.left = os.fstat(file.fileno()).st_size


def _copy_literal(
    name: str,
    literals: BinaryIO | DataFile | None,
    offset: int,
    length: int,
    emit: Callable[[bytes], None],
) -> None:
    if literals is None:
        raise JoinError(f"{name}: its record refers to the split's data file, which is missing")
    data = literals if isinstance(literals, DataFile) else DataFile(literals)
    if offset + length > data.size:
        raise JoinError(f"{name}: the split's data file ends before its record's bytes")
    if length > data.left:
        raise JoinError(
            f"{name}: the split record refers to more bytes of the split's data file than "
            f"it holds ({data.size:,}); split refers to each of them once"
        )
    data.left -= length
    data.file.seek(offset)
    while length:
        chunk = data.file.read(min(COPY_CHUNK, length))
        if not chunk:
            raise JoinError(f"{name}: the split's data file ends before its record's bytes")
        emit(chunk)
        length -= len(chunk)


def _check_pieces(name: str, recipe: Recipe) -> None:
    """The pieces must rebuild exactly the removed range: sizes are checked before
    anything is allocated or written."""
    total = 0
    for piece in recipe.pieces:
        if not isinstance(piece, list) or not piece or piece[0] not in (0, 1, 2, 3):
            raise JoinError(f"{name}: malformed piece {piece!r:.60} in the split record")
        if piece[0] == 0 and len(piece) == 2 and isinstance(piece[1], int) and piece[1] >= 0:
            total += piece[1]
        elif piece[0] == 1 and len(piece) == 2 and isinstance(piece[1], bytes):
            total += len(piece[1])
        elif (
            piece[0] == 2
            and len(piece) == 6
            and all(isinstance(s, str) for s in piece[1:4])
            and all(isinstance(n, int) and n >= 0 for n in piece[4:])
        ):
            total += piece[5]
        elif (
            piece[0] == 3
            and len(piece) == 3
            and all(isinstance(n, int) and n >= 0 for n in piece[1:])
        ):
            total += piece[2]
        else:
            raise JoinError(f"{name}: malformed piece {piece!r:.60} in the split record")
    if not 0 <= recipe.start <= recipe.end <= recipe.original_size or total != (
        recipe.end - recipe.start
    ):
        raise JoinError(f"{name}: the split record does not add up to the original's size")
    problem = zero_problem(recipe.original_size, zero_runs(recipe.pieces))
    if problem:
        raise JoinError(f"{name}: the split record claims {problem}; split never writes that")


def _copy_unpatched(
    source: BinaryIO,
    name: str,
    host_offset: int,
    original_offset: int,
    length: int,
    patches: list[tuple[int, bytes]],
    emit: Callable[[bytes], None],
) -> None:
    """Copy ``length`` host bytes that stand at ``original_offset`` in the original,
    putting back the original bytes of every patch in that range. ``patches`` are
    sorted and do not overlap, so each chunk looks only at the patches over it."""
    source.seek(host_offset)
    position = original_offset
    last = original_offset + length
    ends = [offset + len(original) for offset, original in patches]
    while position < last:
        chunk = bytearray(source.read(min(COPY_CHUNK, last - position)))
        if not chunk:
            raise JoinError(f"{name}: ends early")
        chunk_end = position + len(chunk)
        for number in range(bisect.bisect_right(ends, position), len(patches)):
            offset, original = patches[number]
            if offset >= chunk_end:
                break
            lo, hi = max(offset, position), min(offset + len(original), chunk_end)
            if lo < hi:
                chunk[lo - position : hi - position] = original[lo - offset : hi - offset]
        emit(bytes(chunk))
        position = chunk_end


def _recipe(raw: object) -> Recipe:
    """The recipe of one binary, its fields' types checked (sizes are checked by
    :func:`_check_pieces` against each other)."""
    if not isinstance(raw, dict):
        raise _Refused("expected the binary's recipe (a map)")
    removed, patches = raw.get("removed"), raw.get("patches")
    numbers = [raw.get("original_size"), raw.get("page")]
    if isinstance(removed, list) and len(removed) == 2:
        numbers += removed
    if not (
        len(numbers) == 4
        and all(isinstance(n, int) and n >= 0 for n in numbers)
        and isinstance(raw.get("sha256"), str)
        and isinstance(raw.get("pieces"), list)
        and isinstance(patches, list)
        and all(
            isinstance(p, list)
            and len(p) == 2
            and isinstance(p[0], int)
            and p[0] >= 0
            and isinstance(p[1], bytes)
            for p in patches
        )
    ):
        raise _Refused(
            "malformed recipe (expected original_size, sha256, removed, page, pieces, patches)"
        )
    return Recipe.from_msgpack(raw)


# --- whole trees -------------------------------------------------------------------------


class _Refused(Exception):
    """Something the split record asks for that join refuses; the caller names the
    record entry."""


def _refuse(record: Path, pointer: str, problem: object) -> JoinError:
    """Name the record file and the entry (``/jobs/0/files/3``) in what is refused."""
    return JoinError(f"{printable(str(record))}: {pointer}: {problem}")


@contextlib.contextmanager
def _entry(record: Path | None = None, pointer: str = "") -> Iterator[None]:
    """What the block refuses, as a JoinError naming the record entry (or, without
    one, the path the problem is about)."""
    try:
        yield
    except (_Refused, Refused) as e:
        raise (_refuse(record, pointer, e) if record else JoinError(str(e))) from None


def record_path(value: object, what: str) -> tuple[str, ...]:
    """The parts of a path the split record names; refused unless it is a plain
    relative path (no leading '/', no empty, '.' or '..' part, no NUL) of names split
    writes: UTF-8 without control characters (:func:`~gfxpack.artifact_files.name_problem`,
    the rule split's walk reads its input by)."""
    if not isinstance(value, str) or not value:
        raise _Refused(f"{what}: expected a relative path, found {value!r:.60}")
    parts = tuple(value.split("/"))
    if value.startswith("/") or "\0" in value or any(p in ("", ".", "..") for p in parts):
        raise _Refused(
            f"{what} {value!r:.100}: expected a relative path inside it "
            "(no leading '/', no empty, '.' or '..' part, no NUL)"
        )
    problem = name_problem(value)
    if problem:
        raise _Refused(f"{what} {value!r:.100}: {problem}; split writes no such name")
    return parts


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a symlink" if stat.S_ISLNK(mode) else file_kind(mode)


class _Split(Tree):
    """The split, read through a Tree; each of its files is read for one entry at
    most, so the work a record asks for is bounded by the split's size."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._read: set[tuple[str, ...]] = set()

    def open_file(self, parts: Sequence[str]) -> int:
        if tuple(parts) in self._read:
            raise Refused(
                f"{self.name(parts)}: already read for an earlier entry; a split record "
                "names each file of the split once"
            )
        fd = super().open_file(parts)
        self._read.add(tuple(parts))
        return fd


def join_tree(
    split: str | os.PathLike[str],
    out: str | os.PathLike[str],
    force: bool = False,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> int:
    """Rebuild the input of ``gfxpack split`` from its output; returns how many
    binaries were joined (each checked against its original's digest). Written under
    a temporary name, renamed when complete (see the module docstring)."""
    split, out = Path(split), Path(out).absolute()
    try:
        with contextlib.closing(_Split(split)) as source:
            index = read_split_index(split)  # never a symlink, FIFO or device
            _check_out(split, out, force)
            return _write_out(source, (index, split / SPLIT_INDEX), out, force, max_object_size)
    except TreeError as e:  # what the system refused, reading the split or writing OUT
        raise JoinError(str(e)) from None


def _write_out(
    source: Tree, record: tuple[dict[str, Any], Path], out: Path, force: bool, max_object_size: int
) -> int:
    """Join everything the record lists into a temporary directory, renamed to ``out``
    when complete; how many binaries were joined."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as e:
        raise JoinError(f"{out}: cannot write in {out.parent}: {e.strerror or e}") from None
    try:
        with contextlib.closing(Tree(temporary, out, writing=True)) as target:
            joined = _join_all(source, target, *record, max_object_size)
        os.chmod(temporary, DIRECTORY_MODE)
        try:
            replace_directory(temporary, out, force)
        except OSError as e:
            raise JoinError(f"{out}: cannot replace: {e.strerror or e}") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return joined


def _check_out(split: Path, out: Path, force: bool) -> None:
    if out.name in ("", ".", ".."):
        raise JoinError(f"{out}: expected the name of a directory to create")
    if os.path.lexists(out) and not force:
        raise JoinError(f"{out}: already exists (remove it, or replace it with --force)")
    resolved_out, resolved_split = out.resolve(), split.resolve()
    if resolved_out == resolved_split or resolved_split in resolved_out.parents:
        raise JoinError(f"{out}: must not be inside the split {split}")
    if resolved_out in resolved_split.parents:
        raise JoinError(f"{out}: must not contain the split {split}")


def _join_all(
    source: Tree, target: Tree, index: dict[str, Any], record: Path, max_object_size: int
) -> int:
    copied, jobs = index.get("copied", []), index.get("jobs")
    if not isinstance(copied, list):
        raise _refuse(record, "/copied", "expected a list of directories")
    if not isinstance(jobs, list):
        raise _refuse(record, "/jobs", "expected a list")
    for number, directory in enumerate(copied):
        with _entry(record, f"/copied/{number}"):
            _copy_tree(source, target, record_path(directory, "directory"))
    joined = 0
    with _entry():
        literals_fd = source.open_if_present((LITERALS,))
    with os.fdopen(literals_fd, "rb") if literals_fd is not None else nullcontext() as file:
        literals = DataFile(file) if file is not None else None
        for number, job in enumerate(jobs):
            pointer = f"/jobs/{number}"
            joined += _join_job(source, target, job, literals, (record, pointer), max_object_size)
    manifest = index.get("therock_manifest")
    if manifest is not None:
        if not isinstance(manifest, bytes):
            raise _refuse(record, "/therock_manifest", f"expected the bytes of {THEROCK_MANIFEST}")
        with _entry(record, "/therock_manifest"):
            _write_file(target, (THEROCK_MANIFEST,), manifest)
    return joined


class _Archive:
    """One archive of a job, read once: each code object at most once, and all of them
    together at most what its size can hold (as for a fat binary's compressed bundles,
    see :data:`~gfxpack.fatbin.reader.EXPANSION`)."""

    def __init__(self, source: Tree, parts: Sequence[str], max_object_size: int) -> None:
        self.name = source.name(parts)
        file = os.fdopen(source.open_file(parts), "rb")
        try:
            self.budget = max(max_object_size, EXPANSION * os.fstat(file.fileno()).st_size)
            self.reader = kpack.KpackReader(file, self.name, max_object_size)
        except BaseException:
            file.close()
            raise
        self.read: set[int] = set()  # the ordinals of the objects read

    def code(self, target_id: str, key: str) -> bytes:
        kernel = self.reader.find(key, target_id)
        if kernel.ordinal in self.read:
            raise _Refused(
                f"{self.name}: the record reads {key!r:.80} for {target_id} a second time; "
                "split refers to each code object once"
            )
        self.read.add(kernel.ordinal)
        self.budget -= kernel.original_size
        if self.budget < 0:
            raise _Refused(
                f"{self.name}: the record reads more code than the archive's size can hold "
                f"({EXPANSION} times it, or --max-object-size if larger)"
            )
        return self.reader.read_kernel(kernel)


def _join_job(
    source: Tree,
    target: Tree,
    job: object,
    literals: DataFile | None,
    where: tuple[Path, str],
    max_object_size: int,
) -> int:
    record, pointer = where
    if not (
        isinstance(job, dict)
        and isinstance(job.get("files"), list)
        and isinstance(job.get("archives"), dict)
    ):
        raise _refuse(record, pointer, "expected a map with 'archives' and 'files'")
    archives: dict[object, object] = job["archives"]
    opened: dict[str, _Archive] = {}

    def lookup(label: str, target_id: str, key: str) -> bytes:
        if label not in opened:
            if label not in archives:
                raise _Refused(f"no archive for {label!r:.40} in {pointer}/archives")
            parts = record_path(archives[label], f"archive for {label!r:.40}")
            opened[label] = _Archive(source, parts, max_object_size)
        return opened[label].code(target_id, key)

    joined = 0
    try:
        for number, item in enumerate(job["files"]):
            with _entry(record, f"{pointer}/files/{number}"):
                joined += _join_entry(source, target, item, lookup, literals)
    finally:
        for archive in opened.values():
            archive.reader.close()
    return joined


def _join_entry(
    source: Tree, target: Tree, item: object, lookup: CodeLookup, literals: DataFile | None
) -> int:
    """Put one entry of a job in its place; 1 for a binary joined, 0 otherwise."""
    if not (isinstance(item, list) and len(item) == 4):
        raise _Refused("expected [path in the split, path in OUT, kind, recipe]")
    in_split, original, kind, recipe = item
    parts = record_path(in_split, "path in the split")
    destination = record_path(original, "path in OUT")
    if kind == "dir":
        target.make_directory(destination)
    elif kind == "symlink":
        _copy_symlink(source, parts, target, destination)
    elif kind == "file":
        _copy_file(source, parts, target, destination)
    elif kind == "binary":
        _join_file(source, parts, target, destination, _recipe(recipe), lookup, literals)
        return 1
    else:
        raise _Refused(f"unknown kind {kind!r:.40} (expected dir, symlink, file or binary)")
    return 0


def _join_file(
    source: Tree,
    parts: Sequence[str],
    target: Tree,
    destination: Sequence[str],
    recipe: Recipe,
    lookup: CodeLookup,
    literals: DataFile | None,
) -> None:
    with os.fdopen(source.open_file(parts), "rb") as host:
        out_fd = target.create_file(destination)
        try:
            with os.fdopen(out_fd, "wb") as out:
                join_binary(host, source.name(parts), recipe, lookup, out, literals)
                out.flush()
                _copy_metadata(os.fstat(host.fileno()), out.fileno())
        except OSError as e:
            raise target.failure(destination, e) from None


def _copy_file(
    source: Tree, parts: Sequence[str], target: Tree, destination: Sequence[str]
) -> None:
    in_fd = source.open_file(parts)
    try:
        out_fd = target.create_file(destination)
        try:
            copy_bytes(in_fd, out_fd)
            _copy_metadata(os.fstat(in_fd), out_fd)
        except OSError as e:
            raise target.failure(destination, e) from None
        finally:
            os.close(out_fd)
    finally:
        os.close(in_fd)


def _write_file(target: Tree, parts: Sequence[str], data: bytes) -> None:
    fd = target.create_file(parts)
    try:
        write_all(fd, data)
        os.fchmod(fd, FILE_MODE)
    except OSError as e:
        raise target.failure(parts, e) from None
    finally:
        os.close(fd)


def _copy_symlink(
    source: Tree, parts: Sequence[str], target: Tree, destination: Sequence[str]
) -> None:
    link = source.read_link(parts)
    if bad := name_problem(link):
        raise _Refused(f"{source.name(parts)}: the symlink's target: {bad}; split writes none")
    problem = symlink_target_problem(link, len(destination) - 1, "OUT")
    if problem:
        raise _Refused(
            f"{source.name(parts)}: the symlink to {link!r:.100} {problem}; join recreates "
            "only symlinks that stay inside OUT"
        )
    target.make_symlink(link, destination)


def _copy_tree(source: Tree, target: Tree, top: tuple[str, ...]) -> None:
    """Copy the split's directory ``top`` to the same place in OUT: directories,
    regular files and symlinks that stay inside OUT; nothing is followed."""
    source.directory(top)  # a real directory, reached without a symlink
    target.make_directory(top)
    pending = [top]
    while pending:
        directory = pending.pop()
        for name in source.names(directory):
            parts = (*directory, name)
            if problem := name_problem(name):
                raise _Refused(f"{source.name(parts)}: {problem}; split writes no such name")
            mode = source.status(parts).st_mode
            if stat.S_ISDIR(mode):
                target.make_directory(parts)
                pending.append(parts)
            elif stat.S_ISREG(mode):
                _copy_file(source, parts, target, parts)
            elif stat.S_ISLNK(mode):
                _copy_symlink(source, parts, target, parts)
            else:
                raise _Refused(
                    f"{source.name(parts)}: is {_kind(mode)}; join copies only regular "
                    "files, directories and symlinks"
                )


def _copy_metadata(info: os.stat_result, fd: int) -> None:
    """The source's permission bits (without setuid, setgid or sticky) and times."""
    os.fchmod(fd, stat.S_IMODE(info.st_mode) & _PERMISSIONS)
    os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
