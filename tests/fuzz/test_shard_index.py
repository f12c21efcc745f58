"""Fuzz the shard index reader of gfxpack merge: a shard's index.json with one value
replaced or one key dropped is merged or refused with one GfxpackError, never another
exception, and never leaves a file in OUT unless the merge succeeded."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.errors import GfxpackError
from gfxpack.merge import merge
from tests.fuzz.conftest import corpus, fuzz_settings
from tests.fuzz.mutation import json_mutated

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def shard_index(package: str, label: str) -> dict[str, Any]:
    return {
        "rocm_version": "8.2.0",
        "release": "1",
        "files": [
            {"file": f"{package}_8.2.0-1_amd64.deb", "package": package, "format": "deb",
             "size": 3, "sha256": "0" * 64, "seconds": 0.1}
        ],
        "plan": {"packages": [{"name": "a"}, {"name": "b"}]},
        "plan_digest": "sha256:" + "1" * 64,
        "shard": {"label": label, "packages": [package]},
    }  # fmt: skip


def merge_with(document: Any) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for name, index in (("one", document), ("two", shard_index("b", "2/2"))):
            (root / name).mkdir()
            (root / name / "index.json").write_text(json.dumps(index))
        (root / "one/a_8.2.0-1_amd64.deb").write_bytes(b"abc")
        (root / "two/b_8.2.0-1_amd64.deb").write_bytes(b"xyz")
        try:
            merge([root / "one", root / "two"], root / "out")
        except GfxpackError:
            assert not (root / "out/index.json").exists()
            return
        assert json.loads((root / "out/index.json").read_text())["files"]


def test_the_unmutated_shards_merge():
    merge_with(shard_index("a", "1/2"))


@fuzz_settings()
@given(json_mutated(shard_index("a", "1/2"), VALUES))
def test_a_mutated_shard_index_is_merged_or_refused(document):
    merge_with(document)


@pytest.mark.parametrize("path", corpus("shard_index"), ids=lambda p: p.name)
def test_kept_inputs(path):
    merge_with(json.loads(path.read_text()))
