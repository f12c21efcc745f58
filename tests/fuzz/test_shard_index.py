"""Fuzz gfxpack merge's reading of shards: a shard's index.json with one value replaced
or one key dropped, and a listed file that is not the one the index describes (other
bytes of the same size, a link to a file outside the shard, not a regular file), is
merged or refused with one GfxpackError, never another exception; a refusal leaves no
index in OUT, a merge only files whose bytes are those their index entry lists, and no
file outside the shards is ever linked into OUT."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gfxpack.errors import GfxpackError
from gfxpack.merge import merge
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.fuzz.mutation import json_mutated

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
CONTENT = {"a": b"abc", "b": b"xyz"}  # each package's one file


def file_name(package: str) -> str:
    return f"{package}_8.2.0-1_amd64.deb"


def shard_index(package: str, label: str) -> dict[str, Any]:
    data = CONTENT[package]
    return {
        "rocm_version": "8.2.0",
        "release": "1",
        "files": [
            {"file": file_name(package), "package": package, "format": "deb",
             "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "seconds": 0.1}
        ],
        "plan": {"packages": [{"name": "a"}, {"name": "b"}]},
        "plan_digest": "sha256:" + "1" * 64,
        "shard": {"label": label, "packages": [package]},
    }  # fmt: skip


def merge_in(root: Path, document: Any) -> dict[str, Any] | None:
    """Merge shard ``one`` (index ``document``, files as they are under ``root``) with a
    good shard ``two`` into ``out``: the merged index, or None when refused."""
    for name, index in (("one", document), ("two", shard_index("b", "2/2"))):
        (root / name).mkdir(exist_ok=True)
        (root / name / "index.json").write_text(json.dumps(index))
    (root / "two" / file_name("b")).write_bytes(CONTENT["b"])
    try:
        merge([root / "one", root / "two"], root / "out")
    except GfxpackError:
        assert not (root / "out/index.json").exists()
        return None
    merged: dict[str, Any] = json.loads((root / "out/index.json").read_text())
    assert merged["files"]
    for item in merged["files"]:  # what OUT holds is what its index says
        data = (root / "out" / item["file"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (item["size"], item["sha256"])
    return merged


def merge_with(document: Any) -> dict[str, Any] | None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "one").mkdir()
        (root / "one" / file_name("a")).write_bytes(CONTENT["a"])
        return merge_in(root, document)


def test_the_unmutated_shards_merge():
    merged = merge_with(shard_index("a", "1/2"))
    assert merged is not None, "the good shards were refused"
    assert [item["file"] for item in merged["files"]] == [file_name("a"), file_name("b")]
    assert "shard" not in merged


@fuzz_settings()
@given(json_mutated(shard_index("a", "1/2"), VALUES))
def test_a_mutated_shard_index_is_merged_or_refused(document):
    merge_with(document)


@pytest.mark.parametrize("path", kept_inputs("shard_index"))
def test_kept_inputs(path):
    merge_with(json.loads(path.read_text()))


# What the listed file of shard one may be instead of the shard's own file of those bytes.
# The host file outside the shards holds the listed bytes: only the links give it away.
KINDS = ("other bytes", "hard link", "symlink", "directory", "FIFO", "missing")


def plant(root: Path, kind: str, other: bytes) -> Path:
    """The host file, and shard one's listed file made ``kind``."""
    host = root / "host" / "secret"
    host.parent.mkdir()
    host.write_bytes(CONTENT["a"])
    listed = root / "one" / file_name("a")
    listed.parent.mkdir()
    if kind == "other bytes":
        listed.write_bytes(other)
    elif kind == "hard link":
        os.link(host, listed)
    elif kind == "symlink":
        listed.symlink_to(host)
    elif kind == "directory":
        listed.mkdir()
    elif kind == "FIFO":
        os.mkfifo(listed)
    return host


@fuzz_settings()
@given(st.sampled_from(KINDS), st.binary(min_size=3, max_size=3))
def test_a_listed_file_that_is_not_the_shards_own_is_refused(kind, other):
    assume(other != CONTENT["a"])
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        host = plant(root, kind, other)
        before = os.lstat(host)
        assert merge_in(root, shard_index("a", "1/2")) is None, f"a {kind} was merged"
        after = os.lstat(host)
        assert (after.st_ino, after.st_nlink, host.read_bytes()) == (
            before.st_ino,
            before.st_nlink,
            CONTENT["a"],
        )
        out = root / "out"
        linked = [p for p in out.rglob("*") if os.lstat(p).st_ino == before.st_ino]
        assert not linked and not (out / file_name("a")).exists()
