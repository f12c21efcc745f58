"""The shared file-writing helpers: atomic replacement and hashing on the way."""

import hashlib
import io

import pytest

from gfxpack._io import HashingWriter, atomic_write, file_digests, write_atomically


def test_atomic_write_replaces_only_when_complete(tmp_path):
    target = tmp_path / "index.json"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(target) as file:
        file.write(b"half of the new")
        raise RuntimeError("interrupted")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]
    write_atomically(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]


def test_hashing_writer_counts_hashes_and_passes_through():
    out = io.BytesIO()
    writer = HashingWriter(out, "md5", "sha256")
    writer.write(b"abc")
    writer.write(b"def")
    assert out.getvalue() == b"abcdef"
    assert writer.size == 6
    assert writer.hexdigest(0) == hashlib.md5(b"abcdef").hexdigest()
    assert writer.hexdigest(1) == hashlib.sha256(b"abcdef").hexdigest()
    counting = HashingWriter(io.BytesIO())
    counting.write(b"xyz")
    assert (counting.size, counting.hashes) == (3, [])


def test_file_digests(tmp_path):
    data = bytes(range(256)) * 5000
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert file_digests(path, "md5", "sha256") == (
        len(data),
        [hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()],
    )
