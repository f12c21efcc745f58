"""Put a split binary back together: the proof that a split loses nothing.

The host file is the original with ``[start, end)`` replaced by one page, a few
bytes patched and a tail appended (see :mod:`gfxpack.fatbin.rewrite`). Joining
copies the host's head and body back, undoes the patches, and rebuilds the
removed range from the recipe's pieces: zero runs, literal bytes, and slices of
code objects read from the archives. The result's sha256 must match the one
recorded at split time, or nothing is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from gfxpack.errors import GfxpackError
from gfxpack.fatbin.rewrite import COPY_CHUNK, Recipe

CodeLookup = Callable[[str, str, str], bytes]  # (archive label, target id, toc key) -> code


class JoinError(GfxpackError, ValueError):
    """A split tree that does not give back its original bytes."""


def join_binary(host: Path, recipe: Recipe, lookup: CodeLookup, out: BinaryIO) -> None:
    """Write the original of ``host`` to ``out``; JoinError when it does not match."""
    digest = hashlib.sha256()
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
                emit(bytes(piece[1]))
            elif kind == 1:
                emit(piece[1])
            else:
                _, label, target, key, skip, length = piece
                wanted = (label, target, key)
                if wanted not in cache:
                    cache.clear()  # pieces of one code object are consecutive
                    cache[wanted] = lookup(label, target, key)
                code = cache[wanted]
                if skip + length > len(code):
                    raise JoinError(f"{host}: {key} for {target} is shorter than recorded")
                emit(code[skip : skip + length])
        _copy_unpatched(source, recipe.start + recipe.page, recipe.end, body, patches, emit)
    if digest.hexdigest() != recipe.sha256:
        raise JoinError(f"{host}: the joined bytes differ from the original (sha256 mismatch)")


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


__all__ = ["CodeLookup", "JoinError", "join_binary"]
