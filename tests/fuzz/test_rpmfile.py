"""Fuzz the .rpm reader gfxpack repo uses (our header checks, then createrepo_c), with
mutations of a package our writer made."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given

from gfxpack.formats import RPM
from gfxpack.repo.rpmfile import RPM_NAME, RPM_VERSION, InvalidRpm, read_rpm
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.fuzz.mutation import mutated
from tests.verify.helpers import write_package

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow


def _exercise(data: bytes) -> None:
    """Read one input; only InvalidRpm may come out, and what is read is valid."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz-1-1.x86_64.rpm"
        path.write_bytes(data)
        try:
            package = read_rpm(str(path), "Packages/fuzz-1-1.x86_64.rpm")
        except InvalidRpm:
            return
        assert RPM_NAME.match(package.name) and RPM_VERSION.match(package.version)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("rpm")
    return write_package(folder, RPM, "fuzz", files=("/opt/rocm/lib/libx.so",)).read_bytes()


def test_mutated_rpm_raises_only_invalid_rpm(original: bytes) -> None:
    # Most of a package is payload, which nothing here reads: aim at the headers.
    headers = original[:4096]

    @fuzz_settings()
    @given(data=mutated(headers))
    def run(data: bytes) -> None:
        _exercise(data + original[len(headers) :])

    run()


@pytest.mark.parametrize("path", kept_inputs("rpmfile"))
def test_kept_crash_inputs(path: Path) -> None:
    _exercise(path.read_bytes())
