"""Fuzz the .rpm layout reader of gfxpack sign (lead, signature header entries, main
header), with mutations of a package our writer made."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given

from gfxpack.formats import RPM
from gfxpack.formats.rpmsign import SignError, _Layout
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.fuzz.mutation import mutated
from tests.verify.helpers import write_package

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow


def _exercise(data: bytes) -> None:
    """Read one input; only SignError may come out, and what is read lies in the input."""
    try:
        layout = _Layout(Path("fuzz.rpm"), io.BytesIO(data))
    except SignError:
        return
    assert layout.payload_offset <= len(data)
    assert layout.header in data


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("rpm")
    return write_package(folder, RPM, "fuzz", files=("/opt/rocm/lib/libx.so",)).read_bytes()


def test_mutated_rpm_raises_only_sign_error(original: bytes) -> None:
    headers = original[:4096]  # the payload is copied, never read

    @fuzz_settings()
    @given(data=mutated(headers))
    def run(data: bytes) -> None:
        _exercise(data + original[len(headers) :])

    run()


@pytest.mark.parametrize("path", kept_inputs("rpmsign"))
def test_kept_crash_inputs(path: Path) -> None:
    _exercise(path.read_bytes())
