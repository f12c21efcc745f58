"""therock_manifest.json: any bytes decide the kpack flag or raise InvalidArtifacts
naming the file, never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.artifacts import InvalidArtifacts, scan
from tests.fuzz.conftest import fuzz_settings, kept_inputs

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["flags", "KPACK_SPLIT_ARTIFACTS"]) | st.text(max_size=5),
            children,
            max_size=3,
        )
    ),
    max_leaves=10,
)


def check(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        stage = root / "base_lib_generic" / "base" / "stage" / "share" / "therock"
        stage.mkdir(parents=True)
        (root / "base_lib_generic" / "artifact_manifest.txt").write_text("base/stage\n")
        (stage / "therock_manifest.json").write_bytes(data)
        try:
            tree = scan(root)
        except InvalidArtifacts as e:
            assert "therock_manifest.json" in str(e)
            return
        assert isinstance(tree.kpack_split, bool)


@fuzz_settings()
@given(VALUES | st.fixed_dictionaries({"flags": VALUES}))
def test_any_json_document(document: Any) -> None:
    check(json.dumps(document).encode())


@fuzz_settings()
@given(st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    check(data)


@pytest.mark.parametrize("kept", kept_inputs("therock_manifest"))
def test_kept_inputs(kept: Path) -> None:
    check(kept.read_bytes())
