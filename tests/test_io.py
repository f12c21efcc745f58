"""The shared file-writing helpers: atomic replacement and hashing on the way."""

import hashlib
import io
import os

import pytest

from gfxpack._io import (
    HashingWriter,
    atomic_write,
    file_digests,
    replace_directory,
    write_atomically,
)


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


def _tree(path, text):
    path.mkdir()
    (path / "file").write_text(text)
    return path


def test_replace_directory_renames_or_refuses_an_existing_out(tmp_path):
    out = tmp_path / "out"
    replace_directory(_tree(tmp_path / ".new", "first"), out, force=False)
    assert (out / "file").read_text() == "first"
    with pytest.raises(FileExistsError):
        replace_directory(_tree(tmp_path / ".newer", "second"), out, force=False)
    assert (out / "file").read_text() == "first"
    replace_directory(tmp_path / ".newer", out, force=True)
    assert (out / "file").read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the old one is gone


def test_a_failed_replace_puts_the_old_out_back(tmp_path):
    out = _tree(tmp_path / "out", "old")
    before = os.lstat(out).st_ino
    with pytest.raises(FileNotFoundError):
        replace_directory(tmp_path / ".missing", out, force=True)
    assert os.lstat(out).st_ino == before
    assert (out / "file").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_forced_replace_of_a_symlink_replaces_the_link_not_its_target(tmp_path):
    victim = _tree(tmp_path / "victim", "precious")
    out = tmp_path / "out"
    out.symlink_to(victim)
    replace_directory(_tree(tmp_path / ".new", "new"), out, force=True)
    assert not out.is_symlink() and (out / "file").read_text() == "new"
    assert (victim / "file").read_text() == "precious"
