"""Fuzz the wheel reader and splitter: a small fat wheel (a fat library made byte by
byte, no compiler needed) with its zip bytes mutated, or with its library mutated
inside a wheel whose RECORD agrees. ``gfxpack split`` of it either succeeds or raises
one of gfxpack's errors, and writes nothing but OUT beside its input."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.errors import GfxpackError
from gfxpack.fatbin.reader import HIPF
from gfxpack.wheels.split import split_wheels
from tests.fatbin.fat_elf import PAGE, fat_elf
from tests.fatbin.test_bundle import DEVICES, uncompressed
from tests.fuzz.conftest import fuzz_settings
from tests.fuzz.mutation import mutated
from tests.wheels.conftest import WHEEL_NAME, demo_members, make_wheel

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

BUNDLE = uncompressed(DEVICES)
LIBRARY = fat_elf(BUNDLE + bytes(-len(BUNDLE) % PAGE + 2 * PAGE), [(HIPF, 0, 0)])[0]
LIMITS = {"max_object_size": 1 << 20, "max_wheel_size": 64 << 20}


def _split(wheel_bytes: bytes | None, library: bytes) -> None:
    """Write the wheel (its bytes, or a consistent wheel around ``library``) into a
    fresh directory, split it, and check what is beside it afterwards."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        wheel = root / "in" / WHEEL_NAME
        wheel.parent.mkdir()
        make_wheel(wheel, demo_members(library, library))
        if wheel_bytes is not None:
            wheel.write_bytes(wheel_bytes)
        before = wheel.read_bytes()
        out = root / "out"
        try:
            split_wheels(wheel.parent, out, **LIMITS)
        except GfxpackError:
            assert not os.path.lexists(out)
        assert sorted(p.name for p in root.iterdir()) in (["in"], ["in", "out"])
        assert wheel.read_bytes() == before  # the input is never written


def test_the_unmutated_wheel_splits():
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        wheel = make_wheel(root / WHEEL_NAME, demo_members(LIBRARY, LIBRARY))
        (result,) = split_wheels(root, root / "out", **LIMITS)
        assert len(list((root / "out").glob("*.whl"))) >= 2  # a host and a device wheel
        assert result is not None and wheel.is_file()


@fuzz_settings()
@given(st.data())
def test_a_mutated_wheel_is_split_or_refused(data):
    with tempfile.TemporaryDirectory() as scratch:
        good = make_wheel(Path(scratch) / WHEEL_NAME, demo_members(LIBRARY, LIBRARY))
        original = good.read_bytes()
    _split(data.draw(mutated(original)), LIBRARY)


@fuzz_settings()
@given(st.data())
def test_a_mutated_library_in_a_consistent_wheel_is_split_or_refused(data):
    _split(None, data.draw(mutated(LIBRARY)))
