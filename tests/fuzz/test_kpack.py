"""Fuzz the .kpack reader: whatever the bytes, opening, listing, reading and verifying
either succeed or raise InvalidKpack, never another exception."""

from __future__ import annotations

import contextlib
import io
import struct

import msgpack
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.kpack import InvalidKpack, KpackReader, KpackWriter
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.test_kpack_hostile import assemble

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

# Small enough that a forged size is refused quickly, large enough for every seed below.
LIMIT = 1 << 20


def exercise(data: bytes) -> None:
    """Everything a caller can do with an archive; only InvalidKpack may escape."""
    try:
        reader = KpackReader(io.BytesIO(data), "fuzz.kpack", max_object_size=LIMIT)
    except InvalidKpack:
        return
    for kernel in reader.kernels[:20]:
        try:
            reader.read(kernel.toc_key, kernel.arch)
            reader.find(kernel.toc_key)
        except InvalidKpack:
            pass
    with contextlib.suppress(InvalidKpack):
        reader.verify()


def seed(compression: str, objects: dict[tuple[str, str], bytes]) -> bytes:
    out = io.BytesIO()
    with KpackWriter(out, "blas_lib", "gfx942", compression) as writer:
        for (key, arch), code in objects.items():
            writer.add(key, code, arch)
    return out.getvalue()


def sizeless_seed() -> bytes:
    """As another writer may leave it: frames that do not declare their content size, no
    frame index, no digests, two keys sharing one frame."""
    compressor = zstandard.ZstdCompressor(write_content_size=False)
    frames = [compressor.compress(b"\x7fELF" * 200), compressor.compress(b"")]
    entries = {
        "lib/a.so#0": {"gfx942": {"type": "hsaco", "ordinal": 0, "original_size": 800}},
        "lib/b.so#0": {"gfx942": {"type": "hsaco", "ordinal": 0, "original_size": 800}},
        "lib/c.so#0": {"gfx942": {"type": "hsaco", "ordinal": 1, "original_size": 0}},
    }
    return assemble(frames, entries)


SEEDS = [
    seed("zstd", {("lib/a.so#0", "gfx942"): b"\x7fELF" * 300, ("lib/a.so#0", "gfx950"): b"x"}),
    seed("none", {("lib/a.so#0", "gfx942"): b"\x7fELF" * 30, ("lib/b.so#0", "gfx942"): b""}),
    sizeless_seed(),
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid archive with bytes flipped, overwritten, cut or inserted."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        action = draw(st.sampled_from(["flip", "u32", "u64", "cut", "insert"]))
        at = draw(st.integers(0, len(data) - 1))
        if action == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "u32" and at + 4 <= len(data):
            data[at : at + 4] = struct.pack("<I", draw(st.sampled_from([0, 1, 2**31, 2**32 - 1])))
        elif action == "u64" and at + 8 <= len(data):
            data[at : at + 8] = struct.pack("<Q", draw(st.integers(0, 2**64 - 1)))
        elif action == "cut":
            del data[at:]
            if not data:
                break
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
counts = st.one_of(st.integers(0, 300), st.integers(2**31, 2**64 - 1), values)


@st.composite
def forged_toc(draw: st.DrawFn) -> bytes:
    """A real blob under a TOC whose fields are drawn: plausible keys, lying values."""
    data = draw(st.sampled_from(SEEDS))
    toc_offset = struct.unpack_from("<Q", data, 8)[0]
    toc = msgpack.unpackb(data[toc_offset:], raw=False)
    for key in draw(st.lists(st.sampled_from(sorted(toc)), max_size=4)):
        toc[key] = draw(st.one_of(counts, values))
    for by_arch in toc.get("toc", {}).values() if isinstance(toc.get("toc"), dict) else []:
        for entry in by_arch.values() if isinstance(by_arch, dict) else []:
            if isinstance(entry, dict) and draw(st.booleans()):
                entry[draw(st.sampled_from(["ordinal", "original_size", "sha256", "type"]))] = draw(
                    st.one_of(counts, values)
                )
    return data[:toc_offset] + msgpack.packb(toc, use_bin_type=True)


@fuzz_settings()
@given(st.binary(max_size=512))
def test_random_bytes(data):
    exercise(data)


@fuzz_settings()
@given(st.binary(max_size=200).map(lambda tail: b"KPAK\x01\x00\x00\x00" + tail))
def test_random_bytes_behind_a_valid_magic(data):
    exercise(data)


@fuzz_settings()
@given(mutated())
def test_mutated_archives(data):
    exercise(data)


@fuzz_settings()
@given(forged_toc())
def test_forged_tables_of_contents(data):
    exercise(data)


@pytest.mark.parametrize("path", kept_inputs("kpack"))
def test_kept_crash_inputs(path):
    exercise(path.read_bytes())
