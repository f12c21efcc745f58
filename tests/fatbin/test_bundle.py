"""Offload bundles built byte by byte from the format: every storage, every bad input."""

from __future__ import annotations

import struct
import zlib

import pytest
import zstandard

from gfxpack.fatbin import bundle
from gfxpack.fatbin.targets import MACH, TargetId

XNACK_OFF_V4 = 0x200


def code_object(processor: str, flags: int = 0, machine: int = 224, osabi: int = 64) -> bytes:
    """A minimal AMDGPU ELF header (code object v4) and some body bytes."""
    ident = b"\x7fELF" + bytes([2, 1, 1, osabi, 2]) + bytes(7)
    header = struct.pack(
        "<16sHHIQQQIHHHHHH", ident, 3, machine, 1, 0, 0, 0, MACH[processor] | flags,
        64, 56, 0, 64, 0, 0,
    )  # fmt: skip
    return header + processor.encode() * 40


def uncompressed(entries: list[tuple[str, bytes]], align: int = 4096) -> bytes:
    """A bundle with a host entry and the given (triple, code) entries at aligned offsets."""
    all_entries = [("host-x86_64-unknown-linux", b""), *entries]
    header_size = 24 + 8 + sum(24 + len(t) for t, _ in all_entries)
    position = -(-header_size // align) * align
    table, body = b"", bytearray()
    for triple, code in all_entries:
        offset = position + len(body)
        table += struct.pack("<QQQ", offset, len(code), len(triple)) + triple.encode()
        body += code
        body += bytes(-len(body) % align)
    head = bundle.MAGIC + struct.pack("<Q", len(all_entries)) + table
    return head + bytes(position - len(head)) + bytes(body)


def ccob(payload: bytes, version: int, method: int, level: int = 3) -> bytes:
    if method == 1:
        compressed = zstandard.ZstdCompressor(level=level).compress(payload)
    else:
        compressed = zlib.compress(payload)
    head = b"CCOB" + struct.pack("<HH", version, method)
    if version == 1:
        sizes = struct.pack("<IQ", len(payload), 0x1234)
    elif version == 2:
        sizes = struct.pack("<IIQ", 24 + len(compressed), len(payload), 0x1234)
    else:
        sizes = struct.pack("<QQQ", 32 + len(compressed), len(payload), 0x1234)
    return head + sizes + compressed


DEVICES = [
    ("hipv4-amdgcn-amd-amdhsa--gfx90a", code_object("gfx90a")),
    ("hipv4-amdgcn-amd-amdhsa--gfx906:xnack-", code_object("gfx906", XNACK_OFF_V4)),
]


def test_uncompressed_bundle_gives_every_code_object():
    parsed = bundle.parse(memoryview(uncompressed(DEVICES)), 0)
    assert parsed.compression is None
    assert parsed.host_triples == ("host-x86_64-unknown-linux",)
    assert [str(o.target) for o in parsed.code_objects] == ["gfx90a", "gfx906:xnack-"]
    assert [bytes(parsed.code(o)) for o in parsed.code_objects] == [c for _, c in DEVICES]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("method", [0, 1], ids=["zlib", "zstd"])
def test_compressed_bundle_is_read_and_its_length_known(version, method):
    inner = uncompressed(DEVICES)
    packed = ccob(inner, version, method)
    # The next bundle starts on the following page: its length must come out exact.
    section = packed + bytes(-len(packed) % 4096) + uncompressed(DEVICES)
    parsed = bundle.parse(memoryview(section), 0)
    assert parsed.length == len(packed)
    assert parsed.compression == ("zstd" if method else "zlib")
    assert parsed.ccob_version == version
    assert [bytes(parsed.code(o)) for o in parsed.code_objects] == [c for _, c in DEVICES]


def test_zstd_data_containing_the_magic_does_not_end_the_bundle():
    # Code bytes that contain "CCOB" compress (level 1, no match for them) to data
    # that contains it too: a reader scanning for the magic would cut the bundle there.
    body = b"CCOB" + bytes(range(256)) * 16
    devices = [("hipv4-amdgcn-amd-amdhsa--gfx90a", code_object("gfx90a") + body)]
    packed = ccob(uncompressed(devices), 2, 1, level=1)
    assert packed.count(b"CCOB") >= 2
    parsed = bundle.parse(memoryview(packed + bytes(64)), 0)
    assert parsed.length == len(packed)
    assert bytes(parsed.code(parsed.code_objects[0])).endswith(body)


GOOD = uncompressed(DEVICES)


def _with_entry_offset(data: bytes, value: int) -> bytes:
    # The first device entry's offset field sits after the host entry.
    position = 24 + 8 + 24 + len("host-x86_64-unknown-linux")
    return data[:position] + struct.pack("<Q", value) + data[position + 8 :]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (GOOD[:20], "bad magic"),
        (GOOD[:30], "truncated: entry count"),
        (GOOD[:150], "runs past the section"),
        (GOOD[:5000], "runs past the section"),
        (_with_entry_offset(GOOD, 1 << 40), "runs past the section"),
        (bundle.MAGIC + struct.pack("<Q", 1 << 60), "entry count"),
        (b"CCOB" + struct.pack("<HH", 4, 1) + bytes(40), "CCOB version 4, expected 1, 2 or 3"),
        (b"CCOB" + struct.pack("<HH", 2, 7) + bytes(40), "compression method 7"),
        (ccob(GOOD, 2, 1)[:-10], "CCOB total size"),
        (ccob(GOOD, 1, 1)[:-10], "truncated"),
        (ccob(GOOD, 3, 0)[:40] + bytes(len(ccob(GOOD, 3, 0)) - 40), "corrupt"),
        (ccob(b"not a bundle" * 10, 2, 1), "does not decompress to an offload bundle"),
        (uncompressed([("hipv4-amdgcn-amd-amdhsa--gfx90a", code_object("gfx906"))]),
         "e_flags say gfx906, the bundle entry says gfx90a"),
        (uncompressed([("hipv4-amdgcn-amd-amdhsa--gfx906:xnack+", code_object("gfx906", 0x200))]),
         "e_flags say xnack-"),
        (uncompressed([("hipv4-amdgcn-amd-amdhsa--gfx90a", code_object("gfx90a", machine=62))]),
         "e_machine 62"),
        (uncompressed([("hipv4-amdgcn-amd-amdhsa--gfx90a", b"not an elf file")]),
         "not an ELF file"),
        (uncompressed([("hipv4-amdgcn-amd-amdhsa--gfx90a", code_object("gfx90a", osabi=0))]),
         "OS/ABI 0"),
        (uncompressed([("openmp-x86_64-linux", b"x")]), "expected host-"),
        (uncompressed([("hipv4-amdgcn-amd-amdhsa--sm_80", code_object("gfx90a"))]),
         "expected a processor"),
        (uncompressed([]), "no device code object"),
    ],
    ids=[
        "short-magic", "no-count", "truncated-table", "truncated-code", "offset-outside",
        "absurd-count", "unknown-ccob-version", "unknown-method", "ccob-total-past-end",
        "ccob-v1-truncated", "ccob-corrupt", "ccob-not-a-bundle", "wrong-processor",
        "wrong-xnack", "not-amdgpu", "not-elf", "not-hsa", "unknown-kind", "bad-target",
        "host-only",
    ],
)  # fmt: skip
def test_bad_bundle_is_one_clear_error(data, message):
    with pytest.raises(bundle.BundleError, match=message):
        bundle.parse(memoryview(data), 0)


def test_ccob_bomb_stops_at_the_stated_size():
    bomb = zstandard.ZstdCompressor(level=19).compress(bundle.MAGIC + bytes(200 << 20))
    packed = b"CCOB" + struct.pack("<HHIIQ", 2, 1, 24 + len(bomb), 1000, 0) + bomb
    with pytest.raises(bundle.BundleError, match="past its stated 1000 bytes"):
        bundle.parse(memoryview(packed), 0)


@pytest.mark.parametrize(
    ("text", "forms"),
    [
        ("gfx90a", ["gfx90a"]),
        ("gfx906:xnack-", ["gfx906:xnack-", "gfx906", "gfx9-generic"]),
        ("gfx1100", ["gfx1100", "gfx11-generic"]),
    ],
)
def test_runtime_tries_less_specific_forms_in_order(text, forms):
    assert TargetId.parse(text).less_specific() == forms


def test_target_id_with_unknown_feature_is_rejected():
    with pytest.raises(ValueError, match="feature 'foo'"):
        TargetId.parse("gfx90a:foo+")
