"""Put a split binary back together: the proof that a split loses nothing.

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
  following symlinks, in the split and in OUT alike: neither a symlink in the split
  nor one an earlier entry made in OUT is ever followed. Only regular files are
  read; files are created with ``O_EXCL``, so nothing is written twice or through
  a link.
- Files are copied, never hard-linked: OUT shares no inode with the split, so
  editing the joined tree cannot change the split (which ``build`` packages). The
  copies keep their permission bits but not setuid, setgid or sticky: a copy
  belongs to whoever runs join.
- A symlink is recreated only when its target stays inside OUT: a relative path
  whose ``..`` parts all come first, no more of them than the directories above the
  link (a ``..`` after a name could climb out through another link).
- Everything is written under a temporary directory beside OUT, renamed to OUT when
  complete; on any error it is removed and OUT is left as it was.

Only the binaries are checked against their originals (the record holds their
digests); the other files are copies of the split's.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, BinaryIO

from gfxpack import kpack
from gfxpack._io import DIRECTORY_MODE, FILE_MODE
from gfxpack.artifact_files import printable
from gfxpack.errors import GfxpackError
from gfxpack.fatbin.rewrite import COPY_CHUNK, OriginalDigest, Recipe
from gfxpack.regular_files import NotARegularFile, file_kind, open_regular

CodeLookup = Callable[[str, str, str], bytes]  # (archive label, target id, toc key) -> code

# Directories below OUT or the split that join goes down: far deeper than any install
# tree, and within the open-file limit (one descriptor per level, in each tree).
MAX_DEPTH = 256
THEROCK_MANIFEST = "therock_manifest.json"
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
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
    literals: BinaryIO | None = None,
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


def _copy_literal(
    name: str, literals: BinaryIO | None, offset: int, length: int, emit: Callable[[bytes], None]
) -> None:
    if literals is None:
        raise JoinError(f"{name}: its record refers to the split's data file, which is missing")
    if offset + length > os.fstat(literals.fileno()).st_size:
        raise JoinError(f"{name}: the split's data file ends before its record's bytes")
    literals.seek(offset)
    while length:
        chunk = literals.read(min(COPY_CHUNK, length))
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
    putting back the original bytes of every patch in that range."""
    source.seek(host_offset)
    position = original_offset
    last = original_offset + length
    while position < last:
        chunk = bytearray(source.read(min(COPY_CHUNK, last - position)))
        if not chunk:
            raise JoinError(f"{name}: ends early")
        chunk_end = position + len(chunk)
        for offset, original in patches:
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
    except _Refused as e:
        raise (_refuse(record, pointer, e) if record else JoinError(str(e))) from None


def record_path(value: object, what: str) -> tuple[str, ...]:
    """The parts of a path the split record names; refused unless it is a plain
    relative path: no leading '/', no empty, '.' or '..' part, no NUL."""
    if not isinstance(value, str) or not value:
        raise _Refused(f"{what}: expected a relative path, found {value!r:.60}")
    parts = tuple(value.split("/"))
    if value.startswith("/") or "\0" in value or any(p in ("", ".", "..") for p in parts):
        raise _Refused(
            f"{what} {value!r:.100}: expected a relative path inside it "
            "(no leading '/', no empty, '.' or '..' part, no NUL)"
        )
    return parts


def link_target_problem(target: str, parts: Sequence[str]) -> str | None:
    """Why a symlink at ``parts`` below OUT must not point to ``target``, or None when
    the target stays inside OUT. Its ``..`` parts must all come first, climbing only
    real directories (join makes every directory above a link itself): a ``..`` after
    a name could climb out of wherever another link leads."""
    if not target or "\0" in target:
        return "has no target"
    if target.startswith("/"):
        return f"points to the absolute path {target!r:.100}"
    names = [name for name in target.split("/") if name not in ("", ".")]
    ups = 0
    while ups < len(names) and names[ups] == "..":
        ups += 1
    if ".." in names[ups:]:
        return f"points to {target!r:.100}, which has '..' after a name"
    if ups > len(parts) - 1:
        return f"points to {target!r:.100}, outside the tree"
    return None


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a symlink" if stat.S_ISLNK(mode) else file_kind(mode)


class _Tree:
    """A directory tree reached through descriptors: every part of a path below the
    root is opened with ``O_NOFOLLOW``, one at a time, so no symlink on the way is
    followed (one made earlier in the same run included). The descriptors of the last
    directory's parts stay open: entries come in tree order, so most of a path is.

    ``shown`` is the root's name in messages; ``writing`` says whether its problems
    are writing ones (OUT) or reading ones (the split)."""

    def __init__(self, root: Path, shown: Path, writing: bool) -> None:
        self.shown, self.writing = shown, writing
        try:
            self.fd = os.open(root, _DIRECTORY if writing else _DIRECTORY & ~os.O_NOFOLLOW)
        except OSError as e:
            raise self.failure((), e) from None
        self._open: list[tuple[str, int]] = []

    def close(self) -> None:
        for _, fd in reversed(self._open):
            os.close(fd)
        self._open.clear()
        os.close(self.fd)

    def name(self, parts: Sequence[str]) -> str:
        return printable(str(self.shown.joinpath(*parts)))

    def failure(self, parts: Sequence[str], error: OSError) -> JoinError:
        """What the system refused (a full disk, a read-only file system, a permission)."""
        cause = error.strerror or str(error)
        if self.writing:
            where = f" {printable('/'.join(parts))}" if parts else " in it"
            return JoinError(f"{printable(str(self.shown))}: cannot write{where}: {cause}")
        return JoinError(f"{self.name(parts)}: cannot read: {cause}")

    def _refusal(self, parent: int, parts: Sequence[str], error: OSError, wanted: str) -> Exception:
        """What refusing to open ``parts`` as ``wanted`` means, in words."""
        if error.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT, errno.EEXIST, errno.EINVAL):
            try:
                mode = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
            except FileNotFoundError:
                return _Refused(f"{self.name(parts)}: does not exist")
            except OSError:
                return self.failure(parts, error)
            if stat.S_ISLNK(mode):
                return _Refused(f"{self.name(parts)}: is a symlink; join never follows one")
            return _Refused(f"{self.name(parts)}: is {_kind(mode)}, expected {wanted}")
        return self.failure(parts, error)

    def directory(self, parts: Sequence[str], create: bool = False) -> int:
        """The descriptor of the directory ``parts`` (made, with its parents, when
        ``create``); refused when any part is a symlink or not a directory."""
        if len(parts) > MAX_DEPTH:
            raise _Refused(f"{self.name(parts[:2])}/...: more than {MAX_DEPTH} directories deep")
        kept = 0
        while kept < min(len(parts), len(self._open)) and self._open[kept][0] == parts[kept]:
            kept += 1
        for _, fd in reversed(self._open[kept:]):
            os.close(fd)
        del self._open[kept:]
        for depth in range(kept, len(parts)):
            parent = self._open[-1][1] if self._open else self.fd
            try:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(parts[depth], dir_fd=parent)
                fd = os.open(parts[depth], _DIRECTORY, dir_fd=parent)
            except OSError as e:
                raise self._refusal(parent, parts[: depth + 1], e, "a directory") from None
            self._open.append((parts[depth], fd))
        return self._open[-1][1] if self._open else self.fd

    # -- reading (the split) --

    def open_file(self, parts: Sequence[str]) -> int:
        """A read-only descriptor of the regular file ``parts``."""
        parent = self.directory(parts[:-1])
        try:
            return open_regular(parts[-1], follow_symlinks=False, dir_fd=parent)
        except NotARegularFile as e:
            raise _Refused(f"{self.name(parts)}: {e.strerror}") from None
        except OSError as e:
            raise self._refusal(parent, parts, e, "a regular file") from None

    def open_if_present(self, parts: Sequence[str]) -> int | None:
        """:meth:`open_file`, or None when nothing is there."""
        parent = self.directory(parts[:-1])
        try:
            os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise self.failure(parts, e) from None
        return self.open_file(parts)

    def mode(self, parts: Sequence[str]) -> int:
        """The mode of ``parts`` itself (a symlink is not followed)."""
        parent = self.directory(parts[:-1])
        try:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
        except OSError as e:
            raise self._refusal(parent, parts, e, "an entry") from None

    def read_link(self, parts: Sequence[str]) -> str:
        parent = self.directory(parts[:-1])
        try:
            return os.readlink(parts[-1], dir_fd=parent)
        except OSError as e:
            raise self._refusal(parent, parts, e, "a symlink") from None

    def names(self, parts: Sequence[str]) -> list[str]:
        """The names in the directory ``parts``, sorted."""
        fd = self.directory(parts)
        try:
            return sorted(os.listdir(fd))
        except OSError as e:
            raise self.failure(parts, e) from None

    # -- writing (OUT) --

    def create_file(self, parts: Sequence[str]) -> int:
        """A new file ``parts``, open for writing; refused when anything is there."""
        parent = self.directory(parts[:-1], create=True)
        try:
            return os.open(parts[-1], _CREATE, 0o600, dir_fd=parent)
        except OSError as e:
            raise self._creation_refused(parent, parts, e) from None

    def make_directory(self, parts: Sequence[str]) -> None:
        """The directory ``parts`` and its parents; one already made is kept."""
        self.directory(parts, create=True)

    def make_symlink(self, target: str, parts: Sequence[str]) -> None:
        parent = self.directory(parts[:-1], create=True)
        try:
            os.symlink(target, parts[-1], dir_fd=parent)
        except OSError as e:
            raise self._creation_refused(parent, parts, e) from None

    def _creation_refused(self, parent: int, parts: Sequence[str], error: OSError) -> Exception:
        if error.errno == errno.EEXIST:
            return _Refused(f"{self.name(parts)}: already written by an earlier entry")
        return self.failure(parts, error)


def join_tree(
    split: str | os.PathLike[str],
    out: str | os.PathLike[str],
    force: bool = False,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> int:
    """Rebuild the input of ``gfxpack split`` from its output; returns how many
    binaries were joined (each checked against its original's digest). Written under
    a temporary name, renamed when complete (see the module docstring)."""
    from gfxpack.fatbin.split import INDEX, read_index

    split, out = Path(split), Path(out).absolute()
    record = split / INDEX
    with contextlib.closing(_Tree(split, split, writing=False)) as source:
        with _entry():
            _close(source.open_if_present((INDEX,)))  # never a symlink, FIFO or device
        index = read_index(split)
        _check_out(split, out, force)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        except OSError as e:
            raise JoinError(f"{out}: cannot write in {out.parent}: {e.strerror or e}") from None
        try:
            with contextlib.closing(_Tree(temporary, out, writing=True)) as target:
                joined = _join_all(source, target, index, record, max_object_size)
            os.chmod(temporary, DIRECTORY_MODE)
            _replace(temporary, out)
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


def _replace(temporary: Path, out: Path) -> None:
    """Rename the complete tree to ``out``; an ``out`` already there (--force) is
    moved aside first, and put back if the rename fails."""
    try:
        if not os.path.lexists(out):
            temporary.rename(out)
            return
        aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    except OSError as e:
        raise JoinError(f"{out}: cannot write: {e.strerror or e}") from None
    try:
        os.rename(out, aside / "old")
        try:
            temporary.rename(out)
        except OSError:
            os.rename(aside / "old", out)
            raise
    except OSError as e:
        raise JoinError(f"{out}: cannot replace: {e.strerror or e}") from None
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def _join_all(
    source: _Tree, target: _Tree, index: dict[str, Any], record: Path, max_object_size: int
) -> int:
    from gfxpack.fatbin.split import LITERALS

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
    with os.fdopen(literals_fd, "rb") if literals_fd is not None else nullcontext() as literals:
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


def _join_job(
    source: _Tree,
    target: _Tree,
    job: object,
    literals: BinaryIO | None,
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
    readers: dict[str, kpack.KpackReader] = {}

    def lookup(label: str, target_id: str, key: str) -> bytes:
        if label not in readers:
            if label not in archives:
                raise _Refused(f"no archive for {label!r:.40} in {pointer}/archives")
            parts = record_path(archives[label], f"archive for {label!r:.40}")
            readers[label] = _open_archive(source, parts, max_object_size)
        return readers[label].read(key, target_id)

    joined = 0
    try:
        for number, item in enumerate(job["files"]):
            with _entry(record, f"{pointer}/files/{number}"):
                joined += _join_entry(source, target, item, lookup, literals)
    finally:
        for reader in readers.values():
            reader.close()
    return joined


def _join_entry(
    source: _Tree, target: _Tree, item: object, lookup: CodeLookup, literals: BinaryIO | None
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


def _open_archive(source: _Tree, parts: Sequence[str], max_object_size: int) -> kpack.KpackReader:
    file = os.fdopen(source.open_file(parts), "rb")
    try:
        return kpack.KpackReader(file, source.name(parts), max_object_size)
    except BaseException:
        file.close()
        raise


def _join_file(
    source: _Tree,
    parts: Sequence[str],
    target: _Tree,
    destination: Sequence[str],
    recipe: Recipe,
    lookup: CodeLookup,
    literals: BinaryIO | None,
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
    source: _Tree, parts: Sequence[str], target: _Tree, destination: Sequence[str]
) -> None:
    in_fd = source.open_file(parts)
    try:
        out_fd = target.create_file(destination)
        try:
            _copy_bytes(in_fd, out_fd)
            _copy_metadata(os.fstat(in_fd), out_fd)
        except OSError as e:
            raise target.failure(destination, e) from None
        finally:
            os.close(out_fd)
    finally:
        os.close(in_fd)


def _write_file(target: _Tree, parts: Sequence[str], data: bytes) -> None:
    fd = target.create_file(parts)
    try:
        _write_all(fd, data)
        os.fchmod(fd, FILE_MODE)
    except OSError as e:
        raise target.failure(parts, e) from None
    finally:
        os.close(fd)


def _copy_symlink(
    source: _Tree, parts: Sequence[str], target: _Tree, destination: Sequence[str]
) -> None:
    link = source.read_link(parts)
    problem = link_target_problem(link, destination)
    if problem:
        raise _Refused(
            f"{source.name(parts)}: the symlink {problem}; join recreates only "
            "symlinks that stay inside OUT"
        )
    target.make_symlink(link, destination)


def _copy_tree(source: _Tree, target: _Tree, top: tuple[str, ...]) -> None:
    """Copy the split's directory ``top`` to the same place in OUT: directories,
    regular files and symlinks that stay inside OUT; nothing is followed."""
    source.directory(top)  # a real directory, reached without a symlink
    target.make_directory(top)
    pending = [top]
    while pending:
        directory = pending.pop()
        for name in source.names(directory):
            parts = (*directory, name)
            mode = source.mode(parts)
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


def _copy_bytes(source: int, destination: int) -> None:
    """Copy a whole file between descriptors: in the kernel where it can (a reflink on
    file systems that share blocks), by reads and writes elsewhere."""
    try:
        while os.copy_file_range(source, destination, COPY_CHUNK):
            pass
        return
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    os.lseek(source, 0, os.SEEK_SET)
    os.lseek(destination, 0, os.SEEK_SET)
    os.ftruncate(destination, 0)
    while chunk := os.read(source, COPY_CHUNK):
        _write_all(destination, chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _copy_metadata(info: os.stat_result, fd: int) -> None:
    """The source's permission bits (without setuid, setgid or sticky) and times."""
    os.fchmod(fd, stat.S_IMODE(info.st_mode) & _PERMISSIONS)
    os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)
