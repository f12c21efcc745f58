"""Put a split binary back together: the proof that a split loses nothing.

The host file is the original with ``[start, end)`` replaced by one page, a few
bytes patched and a tail appended (see :mod:`gfxpack.fatbin.rewrite`). Joining
copies the host's head and body back, undoes the patches, and rebuilds the
removed range from the recipe's pieces: zero runs, literal bytes, and slices of
code objects read from the archives. The result's digest (a sha256 of the
original taking each whole code object by its own sha256, see
:class:`~gfxpack.fatbin.rewrite.OriginalDigest`) must match the one recorded at
split time, or nothing is written.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, BinaryIO

from gfxpack import kpack
from gfxpack.errors import GfxpackError
from gfxpack.fatbin.rewrite import COPY_CHUNK, OriginalDigest, Recipe

CodeLookup = Callable[[str, str, str], bytes]  # (archive label, target id, toc key) -> code


class JoinError(GfxpackError, ValueError):
    """A split tree that does not give back its original bytes."""


def join_binary(
    host: Path,
    recipe: Recipe,
    lookup: CodeLookup,
    out: BinaryIO,
    literals: BinaryIO | None = None,
) -> None:
    """Write the original of ``host`` to ``out``; JoinError when it does not match.
    ``literals`` is the split's data file, for records that refer to it."""
    _check_pieces(host, recipe)
    digest = OriginalDigest()
    host_size = host.stat().st_size
    body = recipe.original_size - recipe.end  # bytes after the removed range
    if host_size < recipe.start + recipe.page + body:
        raise JoinError(f"{host}: {host_size} bytes, too short for the split it records")
    patches = sorted(recipe.patches)
    cache: dict[tuple[str, str, str], bytes] = {}

    def emit(data: bytes | memoryview) -> None:
        out.write(data)
        digest.update(data)

    with open(host, "rb") as source:
        _copy_unpatched(source, 0, 0, recipe.start, patches, emit)
        for piece in recipe.pieces:
            kind = piece[0]
            if kind == 0:
                for run in range(0, piece[1], COPY_CHUNK):
                    emit(bytes(min(COPY_CHUNK, piece[1] - run)))
            elif kind == 1:
                emit(piece[1])
            elif kind == 3:
                _copy_literal(host, literals, piece[1], piece[2], emit)
            else:
                _, label, target, key, skip, length = piece
                wanted = (label, target, key)
                if wanted not in cache:
                    cache.clear()  # pieces of one code object are consecutive
                    cache[wanted] = lookup(label, target, key)
                code = cache[wanted]
                if skip + length > len(code):
                    raise JoinError(f"{host}: {key} for {target} is shorter than recorded")
                if skip == 0 and length == len(code):  # a whole code object
                    out.write(code)
                    digest.code_object(length, hashlib.sha256(code).digest())
                else:
                    emit(code[skip : skip + length])
        _copy_unpatched(source, recipe.start + recipe.page, recipe.end, body, patches, emit)
    if digest.hexdigest() != recipe.sha256:
        raise JoinError(f"{host}: the joined bytes differ from the original (sha256 mismatch)")


def _copy_literal(
    host: Path, literals: BinaryIO | None, offset: int, length: int, emit: Callable[[bytes], None]
) -> None:
    if literals is None:
        raise JoinError(f"{host}: its record refers to the split's data file, which is missing")
    literals.seek(offset)
    while length:
        chunk = literals.read(min(COPY_CHUNK, length))
        if not chunk:
            raise JoinError(f"{host}: the split's data file ends before its record's bytes")
        emit(chunk)
        length -= len(chunk)


def _check_pieces(host: Path, recipe: Recipe) -> None:
    """The pieces must rebuild exactly the removed range: sizes are checked before
    anything is allocated or written."""
    total = 0
    for piece in recipe.pieces:
        if not isinstance(piece, list) or not piece or piece[0] not in (0, 1, 2, 3):
            raise JoinError(f"{host}: malformed piece {piece!r:.60} in the split record")
        if piece[0] == 0 and isinstance(piece[1], int) and piece[1] >= 0:
            total += piece[1]
        elif piece[0] == 1 and isinstance(piece[1], bytes):
            total += len(piece[1])
        elif (
            piece[0] == 2
            and len(piece) == 6
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
            raise JoinError(f"{host}: malformed piece {piece!r:.60} in the split record")
    if not 0 <= recipe.start <= recipe.end <= recipe.original_size or total != (
        recipe.end - recipe.start
    ):
        raise JoinError(f"{host}: the split record does not add up to the original's size")


def _copy_unpatched(
    source: BinaryIO,
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
            raise JoinError(f"{getattr(source, 'name', 'host file')}: ends early")
        chunk_end = position + len(chunk)
        for offset, original in patches:
            lo, hi = max(offset, position), min(offset + len(original), chunk_end)
            if lo < hi:
                chunk[lo - position : hi - position] = original[lo - offset : hi - offset]
        emit(bytes(chunk))
        position = chunk_end


# --- whole trees -------------------------------------------------------------------------


def join_tree(
    split: str | os.PathLike[str], out: str | os.PathLike[str], force: bool = False
) -> int:
    """Rebuild the input of ``gfxpack split`` from its output; returns how many
    binaries were joined. Written under a temporary name, renamed when complete."""
    from gfxpack.fatbin.split import INDEX, LITERALS, SplitError, read_index

    split, out = Path(split), Path(out)
    index = read_index(split)
    if out.exists() and not force:
        raise SplitError(f"{out}: already exists (remove it, or replace it with --force)")
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir()
    joined = 0
    try:
        for directory in index.get("copied", []):
            _copy_tree(_inside(split, directory), _inside(temporary, directory))
        literals_path = split / LITERALS
        with open(literals_path, "rb") if literals_path.is_file() else nullcontext() as literals:
            for job in index["jobs"]:
                joined += _join_job(split, temporary, job, literals)
        if index.get("therock_manifest") is not None:
            (temporary / "therock_manifest.json").write_bytes(index["therock_manifest"])
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            shutil.rmtree(old)
        temporary.rename(out)
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, GfxpackError):
            raise
        raise JoinError(f"{split / INDEX}: malformed entry ({e!r})") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return joined


def _join_job(split: Path, out: Path, job: dict[str, Any], literals: BinaryIO | None) -> int:
    readers: dict[str, kpack.KpackReader] = {}
    archives: dict[str, str] = job["archives"]

    def lookup(label: str, target: str, key: str) -> bytes:
        if label not in readers:
            if label not in archives:
                raise JoinError(f"no archive for {label} in {split}")
            readers[label] = kpack.KpackReader.open(_inside(split, archives[label]))
        return readers[label].read(key, target)

    joined = 0
    try:
        for out_path, original, kind, recipe in job["files"]:
            source, destination = _inside(split, out_path), _inside(out, original)
            destination.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                destination.mkdir(exist_ok=True)
            elif kind == "symlink":
                os.symlink(os.readlink(source), destination)
            elif kind == "binary":
                with open(destination, "wb") as handle:
                    join_binary(source, Recipe.from_msgpack(recipe), lookup, handle, literals)
                shutil.copystat(source, destination)
                joined += 1
            else:
                _link_or_copy(source, destination)
    finally:
        for reader in readers.values():
            reader.close()
    return joined


def _inside(root: Path, relpath: str) -> Path:
    """``root / relpath``, refusing paths that would leave ``root``."""
    normalized = posixpath.normpath(relpath)
    if relpath.startswith("/") or normalized == ".." or normalized.startswith("../"):
        raise JoinError(f"{relpath!r}: a path outside {root}")
    return root / normalized


def _link_or_copy(source: Path, destination: Path) -> None:
    if source.is_symlink() or not source.is_file():
        raise JoinError(f"{source}: expected a regular file")
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def _copy_tree(source: Path, destination: Path) -> None:
    for directory, dirnames, filenames in os.walk(source):
        relative = Path(directory).relative_to(source)
        (destination / relative).mkdir(parents=True, exist_ok=True)
        for name in sorted(dirnames + filenames):
            path = Path(directory) / name
            if path.is_symlink():
                os.symlink(os.readlink(path), destination / relative / name)
            elif path.is_file():
                _link_or_copy(path, destination / relative / name)
        dirnames[:] = [d for d in dirnames if not (Path(directory) / d).is_symlink()]
