"""artifact_manifest.txt: any bytes give relative prefixes inside the artifact (each
safe to look up) or InvalidArtifacts, never another exception."""

from __future__ import annotations

import posixpath
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.artifact_files import real_directory
from gfxpack.artifacts import InvalidArtifacts, scan
from tests.fuzz.conftest import fuzz_settings, kept_inputs

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

LINES = st.lists(
    st.sampled_from(["math-libs", "BLAS", "stage", "..", ".", "", "/", "#", " ", "\0", "\t"])
    | st.text(max_size=6),
    max_size=6,
).map("/".join)


def check(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "blas_lib_generic" / "math-libs" / "BLAS" / "stage").mkdir(parents=True)
        (root / "blas_lib_generic" / "artifact_manifest.txt").write_bytes(data)
        try:
            prefixes = scan(root).manifest("blas_lib_generic")
        except InvalidArtifacts as e:
            assert "artifact_manifest.txt" in str(e)
            return
        for prefix in prefixes:
            assert not prefix.startswith("/") and prefix == posixpath.normpath(prefix)
            assert prefix != ".." and not prefix.startswith("../")
            problems: list[str] = []
            real_directory(str(root / "blas_lib_generic"), prefix, problems)
            assert problems == []


@fuzz_settings()
@given(st.lists(LINES, max_size=5).map("\n".join))
def test_any_lines(text: str) -> None:
    check(text.encode("utf-8", "surrogatepass"))


@fuzz_settings()
@given(st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    check(data)


@pytest.mark.parametrize("kept", kept_inputs("artifact_manifest"))
def test_kept_inputs(kept: Path) -> None:
    check(kept.read_bytes())
