"""The descriptor packager's kernel list reader: any bytes, any JSON shape, any TOML."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.descriptors.kernel_list import KERNEL_KEYS, KernelList, PackError, read_kernel_list
from tests.fuzz.conftest import fuzz_settings, kept_inputs

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYS = st.sampled_from([*sorted(KERNEL_KEYS), "x"])  # every key the list knows, and one it does not
KERNEL = st.dictionaries(KEYS, JSON | st.lists(st.sampled_from(["gfx942", "gfx1100", "GFX9", ""])))


def read(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"kernels{suffix}"
        path.write_bytes(data)
        try:
            result = read_kernel_list(path)
        except PackError as e:
            assert e.problems and all(isinstance(p, str) and p for p in e.problems)
            assert all(str(path) in p for p in e.problems)
        else:
            assert isinstance(result, KernelList) and result.kernels


@fuzz_settings()
@given(st.binary(max_size=512), st.sampled_from([".json", ".toml"]))
def test_any_bytes(data, suffix):
    read(data, suffix)


@fuzz_settings()
@given(st.dictionaries(st.sampled_from(["group", "kernels", "other"]), JSON | st.lists(KERNEL)))
def test_any_json_shape(document):
    read(json.dumps(document).encode(), ".json")


@pytest.mark.parametrize("path", kept_inputs("kernel_list"))
def test_kept_inputs(path):
    read(path.read_bytes(), path.suffix if path.suffix == ".toml" else ".json")
