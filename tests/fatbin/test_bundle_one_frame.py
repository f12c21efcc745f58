"""A CCOB zstd bundle stated as one frame of the header's size is decompressed in
one call; anything else about it is still found and said as by the streamed path."""

from __future__ import annotations

import struct

import pytest
import zstandard

from gfxpack.fatbin import InvalidFatBinary, bundle
from gfxpack.fatbin.reader import HIPF, FatBinary
from tests.fatbin.fat_elf import PAGE, fat_elf
from tests.fatbin.test_bundle import DEVICES, uncompressed

GOOD = uncompressed(DEVICES)


def ccob_v2(stream: bytes, stated: int) -> bytes:
    return b"CCOB" + struct.pack("<HHIIQ", 2, 1, 24 + len(stream), stated, 0) + stream


def frame(data: bytes, content_size: bool = True) -> bytes:
    return zstandard.ZstdCompressor(level=3, write_content_size=content_size).compress(data)


def test_one_frame_and_streamed_bundles_give_the_same_code_objects():
    fast = bundle.parse(memoryview(ccob_v2(frame(GOOD), len(GOOD))), 0)
    streamed = bundle.parse(memoryview(ccob_v2(frame(GOOD, False), len(GOOD))), 0)
    assert zstandard.get_frame_parameters(frame(GOOD)).content_size == len(GOOD)
    codes = [bytes(fast.code(o)) for o in fast.code_objects]
    assert codes == [bytes(streamed.code(o)) for o in streamed.code_objects]
    assert codes == [c for _, c in DEVICES]
    assert bytes(fast.contents()) == GOOD


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (frame(GOOD) + b"left over", r"CCOB total size \d+ says \d+ compressed bytes"),
        (frame(GOOD) + frame(GOOD), r"CCOB total size \d+ says \d+ compressed bytes"),
        (frame(GOOD)[:-10], "truncated"),
        (frame(GOOD)[:20] + bytes(len(frame(GOOD)) - 20), "corrupt"),
    ],
    ids=["bytes-after-the-frame", "two-frames", "truncated-frame", "corrupt-frame"],
)
def test_a_frame_stating_the_right_size_is_still_checked(stream, message):
    with pytest.raises(bundle.BundleError, match=message):
        bundle.parse(memoryview(ccob_v2(stream, len(GOOD))), 0)


def test_reading_only_the_wrappers_decompresses_nothing(tmp_path):
    # A corrupt stream the full read refuses: with bundles=False it is never read.
    corrupt = ccob_v2(frame(GOOD)[:20] + bytes(len(frame(GOOD)) - 20), len(GOOD))
    data = fat_elf(corrupt + bytes(-len(corrupt) % PAGE + 2 * PAGE), [(HIPF, 0, 0)])[0]
    path = tmp_path / "libfat.so"
    path.write_bytes(data)
    with FatBinary(path, bundles=False) as binary:
        assert [w.index for w in binary.wrappers] == [0]
        assert binary.devices == []
    with pytest.raises(InvalidFatBinary, match="corrupt"), FatBinary(path):
        pass
