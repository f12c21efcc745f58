"""repo/pieces.py: an index written from pieces is their text, gzip-compressed as members
that decompress as one, with the digests of both."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from pathlib import Path

from gfxpack.repo.pieces import piece, write_index


def test_pieces_concatenate_into_one_index(tmp_path: Path) -> None:
    texts = [b"Package: a\n\n", b"", b"Package: b\nVersion: 1\n\n" * 500]
    parts = [piece(t) for t in texts]
    assert parts[1].packed == b""  # an empty piece adds no member
    plain = write_index(tmp_path / "Packages", parts, ("sha256",), packed=False)
    packed = write_index(tmp_path / "Packages.gz", parts, ("sha256", "md5"), packed=True)
    whole = b"".join(texts)
    assert (tmp_path / "Packages").read_bytes() == whole
    data = (tmp_path / "Packages.gz").read_bytes()
    assert gzip.decompress(data) == whole
    # Several members, each a whole gzip stream (what apt's zlib reads one after another).
    first = zlib.decompressobj(zlib.MAX_WBITS | 16)
    assert first.decompress(data) == texts[0] and first.unused_data
    assert plain.digests.hexdigest() == hashlib.sha256(whole).hexdigest()
    assert packed.digests.hexdigest(1)  # the second algorithm == hashlib.md5(data).hexdigest()
    assert packed.digests.size == len(data)
    assert packed.plain is not None and packed.plain.size == len(whole)
    assert packed.plain.hexdigest() == hashlib.sha256(whole).hexdigest()


def test_the_same_text_makes_the_same_bytes() -> None:
    assert piece(b"x" * 1000) == piece(b"x" * 1000)  # no timestamp in the members
