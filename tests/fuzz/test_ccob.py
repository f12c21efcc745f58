"""Fuzz the compressed offload bundle (CCOB) reader: headers of versions 1, 2 and 3 with
drawn versions, methods, sizes and hashes, in front of honest, bomb, cut or mutated
zlib and zstd streams, inside a fat library. Whatever they say, reading and splitting
the library either succeeds or raises one of gfxpack's errors, and never allocates
much more than the size limit it is given."""

from __future__ import annotations

import io
import struct
import tempfile
import tracemalloc
import zlib
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.errors import GfxpackError
from gfxpack.fatbin.reader import HIPF, FatBinary
from gfxpack.fatbin.rewrite import split_binary
from tests.fatbin.fat_elf import PAGE, fat_elf
from tests.fatbin.test_bounded import zstd_bomb
from tests.fatbin.test_bundle import DEVICES, uncompressed
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.fuzz.mutation import mutated

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

LIMIT = 1 << 20  # the size limit the reader is given
# Python's own allocations while one input is read: the decompressed bundle (at most the
# limit and a little past it), its copies and the rewritten host file.
PEAK = 16 * LIMIT
BUNDLE = uncompressed(DEVICES)
HEADER_SIZE = {1: 20, 2: 24, 3: 32}

STREAMS = {
    (0, "honest"): zlib.compress(BUNDLE),
    (1, "honest"): zstandard.ZstdCompressor().compress(BUNDLE),
    (0, "bomb"): zlib.compress(BUNDLE + bytes(16 << 20), 9),
    (1, "bomb"): zstd_bomb(BUNDLE, 1 << 30),
    (1, "sizeless"): zstandard.ZstdCompressor(write_content_size=False).compress(BUNDLE),
}

sizes = st.one_of(
    st.just(None),  # the honest value
    st.sampled_from([0, 1, 20, 24, 32, LIMIT, LIMIT + 1, 2**31, 2**32 - 1, 2**40, 2**64 - 1]),
    st.integers(0, 2**64 - 1),
)


@st.composite
def ccob_bundles(draw: st.DrawFn) -> bytes:
    """A CCOB bundle whose header fields are honest or drawn, around a stream that is
    honest, a bomb, cut short or mutated."""
    version = draw(st.sampled_from([1, 2, 3]))
    method, kind = draw(st.sampled_from(sorted(STREAMS)))
    stream = STREAMS[method, kind]
    if draw(st.booleans()):
        stream = draw(mutated(stream))
    stated_version = draw(st.one_of(st.just(version), st.integers(0, 2**16 - 1)))
    stated_method = draw(st.one_of(st.just(method), st.integers(0, 2**16 - 1)))
    honest_total = HEADER_SIZE[version] + len(stream)
    honest_size = len(BUNDLE) + (16 << 20 if kind == "bomb" and method == 0 else 0)
    if kind == "bomb" and method == 1:
        honest_size = len(BUNDLE) + (1 << 30)
    total = draw(sizes)
    total = honest_total if total is None else total
    uncompressed_size = draw(sizes)
    uncompressed_size = honest_size if uncompressed_size is None else uncompressed_size
    width = 0xFFFFFFFF if version < 3 else 2**64 - 1
    total, uncompressed_size = total & width, uncompressed_size & width
    digest = draw(st.integers(0, 2**64 - 1))
    head = b"CCOB" + struct.pack("<HH", stated_version, stated_method)
    if version == 1:
        head += struct.pack("<IQ", uncompressed_size, digest)
    elif version == 2:
        head += struct.pack("<IIQ", total, uncompressed_size, digest)
    else:
        head += struct.pack("<QQQ", total, uncompressed_size, digest)
    return head + stream


def exercise(bundles: list[bytes], pointers: list[int]) -> None:
    """Read and split a library holding ``bundles`` (each on its own page) whose wrappers
    point at the bundles numbered ``pointers``; only gfxpack's errors may come out, and
    Python's allocations stay under PEAK."""
    starts, section = [], b""
    for packed in bundles:
        starts.append(len(section))
        section += packed + bytes(-len(packed) % PAGE)
    section += bytes(2 * PAGE)  # room for a split to pay
    data = fat_elf(section, [(HIPF, starts[p % len(starts)], 0) for p in pointers])[0]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lib.so"
        path.write_bytes(data)
        tracemalloc.start()
        try:
            with FatBinary(path, max_object_size=LIMIT) as fat:
                for device in fat.devices:
                    device.bundle.contents()
                if fat.devices:
                    split_binary(fat, io.BytesIO(), "stage/lib.so", ["x"], lambda t: t.processor)
        except GfxpackError:
            pass
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    assert peak < PEAK, f"{peak:,} bytes allocated reading {len(data):,}"


@fuzz_settings()
@given(ccob_bundles())
def test_one_forged_bundle(packed: bytes) -> None:
    exercise([packed], [0])


@fuzz_settings()
@given(
    st.lists(ccob_bundles(), min_size=1, max_size=3),
    st.lists(st.integers(0, 5), min_size=1, max_size=8),
)
def test_several_bundles_and_wrappers_sharing_them(bundles: list[bytes], pointers) -> None:
    exercise(bundles, pointers)


@pytest.mark.parametrize(
    ("version", "method"), [(v, m) for v in (1, 2, 3) for m in (0, 1)], ids=lambda x: str(x)
)
def test_the_honest_bundles_are_read(version: int, method: int) -> None:
    # The seeds themselves: what the harness mutates must be readable when honest.
    stream = STREAMS[method, "honest"]
    total = HEADER_SIZE[version] + len(stream)
    head = b"CCOB" + struct.pack("<HH", version, method)
    sizes = {1: ("<IQ", len(BUNDLE), 0), 2: ("<IIQ", total, len(BUNDLE), 0),
             3: ("<QQQ", total, len(BUNDLE), 0)}[version]  # fmt: skip
    packed = head + struct.pack(*sizes) + stream
    data = fat_elf(packed + bytes(-len(packed) % PAGE + 2 * PAGE), [(HIPF, 0, 0)])[0]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lib.so"
        path.write_bytes(data)
        with FatBinary(path, max_object_size=LIMIT) as fat:
            (device,) = fat.devices
            assert device.bundle.compression == ("zstd" if method else "zlib")
            assert [bytes(device.bundle.code(o)) for o in device.bundle.code_objects] == [
                code for _, code in DEVICES
            ]


@pytest.mark.parametrize("path", kept_inputs("ccob"))
def test_kept_crash_inputs(path: Path) -> None:
    exercise([path.read_bytes()], [0])
