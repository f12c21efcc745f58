"""Fuzz the fat-binary reader and rewriter with mutations of a real hipcc library."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.errors import GfxpackError
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.rewrite import split_binary
from tests.fatbin.conftest import build_once
from tests.fuzz.conftest import fuzz_settings, kept_inputs

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow


def _exercise(data: bytes) -> None:
    """Read and split one input; only gfxpack's errors may come out."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lib.so"
        path.write_bytes(data)
        try:
            with FatBinary(path) as fat:
                if fat.devices:
                    split_binary(fat, io.BytesIO(), "stage/lib.so", ["x"], lambda t: t.processor)
        except GfxpackError:
            pass


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return build_once(tmp_path_factory).two_files.read_bytes()


@pytest.mark.slow
def test_mutated_fat_binary_raises_only_gfxpack_errors(original: bytes) -> None:
    size = len(original)

    @fuzz_settings()
    @given(
        edits=st.lists(
            st.tuples(st.integers(0, size - 1), st.binary(min_size=1, max_size=8)), max_size=6
        ),
        cut=st.one_of(st.none(), st.integers(0, size)),
    )
    def run(edits: list[tuple[int, bytes]], cut: int | None) -> None:
        data = bytearray(original)
        for position, value in edits:
            data[position : position + len(value)] = value
        _exercise(bytes(data[:cut] if cut is not None else data))

    run()


@pytest.mark.parametrize("path", kept_inputs("fatbin"))
def test_kept_crash_inputs(path: Path) -> None:
    _exercise(path.read_bytes())
