"""build_index: the one reader and writer of a build directory's index.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gfxpack import build_index
from gfxpack.build_index import BuildIndex, IndexedFile, InvalidBuildIndex, MissingBuildIndex

SHA = "ab" * 32


def test_what_a_build_wrote_is_read_and_written_back_byte_for_byte(example_release, tmp_path):
    """The writer is the build's: reading a real build's index and writing it again
    gives the same bytes, key order included."""
    written = (example_release.out / "index.json").read_bytes()
    index = build_index.read(example_release.out)
    assert index.version == "8.2.0-1" and index.plan is not None and index.plan_digest
    assert {f.format for f in index.files} == {"deb", "rpm"}
    build_index.write(tmp_path, index)
    assert (tmp_path / "index.json").read_bytes() == written
    assert (tmp_path / "index.json").stat().st_mode & 0o777 == 0o644


def test_a_listing_without_a_plan_has_only_files(tmp_path):
    """A setup package's index: files with name, size and sha256, nothing else."""
    build_index.write(tmp_path, BuildIndex(files=(IndexedFile(file="a.deb", size=3, sha256=SHA),)))
    assert json.loads((tmp_path / "index.json").read_text()) == {
        "files": [{"file": "a.deb", "size": 3, "sha256": SHA}]
    }
    assert build_index.read(tmp_path).version is None


GOOD_FILE = {"file": "a.deb", "size": 1, "sha256": SHA}


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ("[]", ": not a gfxpack build index (expected a JSON object)"),
        ('{"packages": []}', ": not a gfxpack build index (no files list)"),
        ("{", ": not readable JSON"),
        ("[" * 100_000, ": not readable JSON"),
        ('{"files": [1]}', ": /files/0: expected an object with file, size and sha256, got 1"),
        ('{"files": [{"size": 1}]}', ": /files/0/file: expected a string, got nothing"),
        (
            json.dumps({"files": [{**GOOD_FILE, "size": True}]}),
            ": /files/0/size: expected a whole number, got True",
        ),
        (
            json.dumps({"files": [{**GOOD_FILE, "size": -1}]}),
            ": /files/0/size: expected a size in bytes, got -1",
        ),
        (
            json.dumps({"files": [{**GOOD_FILE, "sha256": "00"}]}),
            ": /files/0/sha256: expected 64 lowercase hex digits, got '00'",
        ),
        (
            json.dumps({"files": [{**GOOD_FILE, "seconds": "1"}]}),
            ": /files/0/seconds: expected a number, got '1'",
        ),
        (
            json.dumps({"files": [], "rocm_version": 8}),
            ": /rocm_version: expected a string, got 8",
        ),
        (json.dumps({"files": [], "targets": [1]}), ": /targets/0: expected a string, got 1"),
        (json.dumps({"files": [], "plan": []}), ": /plan: expected an object, got []"),
        (
            json.dumps({"files": [], "shard": {"label": "1/2", "packages": "a"}}),
            ": /shard/packages: expected a list, got 'a'",
        ),
        (
            json.dumps({"files": [], "shard": {"packages": []}}),
            ": /shard/label: expected a string, got nothing",
        ),
    ],
    ids=lambda value: value[:40] if isinstance(value, str) else None,
)
def test_a_bad_index_is_one_error_naming_the_file_and_pointer(tmp_path, document, says):
    (tmp_path / "index.json").write_text(document)
    with pytest.raises(InvalidBuildIndex) as caught:
        build_index.read(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'index.json'}") and says in message
    assert "\n" not in message and len(message) < 400


def test_a_long_value_is_shortened_in_the_message(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"files": [], "mode": ["x" * 10_000]}))
    with pytest.raises(InvalidBuildIndex, match=r"/mode: expected a string, got \['xx+\.\.\.$"):
        build_index.read(tmp_path)


def test_no_index_a_symlink_a_fifo_and_a_directory_are_refused_unopened(tmp_path):
    with pytest.raises(MissingBuildIndex, match=r"no index\.json"):
        build_index.read(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"files": []}))
    (tmp_path / "index.json").symlink_to(elsewhere)
    with pytest.raises(InvalidBuildIndex, match="is a symlink; gfxpack does not follow it"):
        build_index.read(tmp_path)
    (tmp_path / "index.json").unlink()
    os.mkfifo(tmp_path / "index.json")  # never opened: a read would wait forever
    with pytest.raises(InvalidBuildIndex, match="is a FIFO, expected a regular file"):
        build_index.read(tmp_path)
    (tmp_path / "index.json").unlink()
    (tmp_path / "index.json").mkdir()
    with pytest.raises(InvalidBuildIndex, match="is a directory, expected a regular file"):
        build_index.read(tmp_path)


def test_an_index_larger_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(build_index, "INDEX_LIMIT", 100)
    (tmp_path / "index.json").write_text(json.dumps({"files": [GOOD_FILE] * 10}))
    with pytest.raises(InvalidBuildIndex, match="at most 100 bytes"):
        build_index.read(tmp_path)


def test_written_whole_or_not_at_all(tmp_path: Path):
    """The writer leaves no partial file beside the index."""
    build_index.write(tmp_path, BuildIndex(files=()))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]
