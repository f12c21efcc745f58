""".kpack archives: round trips, spec-built files, an independent reader, bad input."""

from __future__ import annotations

import hashlib
import io
import json
import struct

import msgpack
import pytest
import zstandard
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gfxpack import kpack
from gfxpack.cli import cli
from gfxpack.kpack import InvalidKpack, KpackReader, KpackWriter
from tests.code_objects import code_object

XNACK_ON = 0x300  # e_flags, code object v4 and later

CODE = {
    ("math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#0", "gfx942"): b"\x7fELF"
    + bytes(range(256)) * 40,
    ("math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1", "gfx942"): b"\x7fELF second object" * 99,
    ("math-libs/BLAS/hipBLASLt/stage/lib/libhipblaslt.so#0", "gfx942"): b"",
}


def archive(compression="zstd", code=CODE, **options) -> bytes:
    out = io.BytesIO()
    with KpackWriter(out, "blas_lib", "gfx942", compression, **options) as writer:
        for (key, arch), data in code.items():
            writer.add(key, data, arch)
    return out.getvalue()


def reader(data: bytes) -> KpackReader:
    return KpackReader(io.BytesIO(data), "t.kpack")


# --- round trips -------------------------------------------------------------------------

keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=40)
arches = st.sampled_from(["gfx942", "gfx950", "gfx1100", "gfx90a:xnack+"])
contents = st.dictionaries(st.tuples(keys, arches), st.binary(max_size=3000), max_size=12)


@settings(max_examples=120, deadline=None)
@given(contents, st.sampled_from(["zstd", "none"]))
def test_round_trip(code, compression):
    got = reader(archive(compression, code))
    assert {(k.toc_key, k.arch): got.read_kernel(k) for k in got.kernels} == code
    for (key, arch), data in code.items():
        assert got.read(key, arch) == data
    assert [(k.toc_key, k.arch) for k in got.kernels] == sorted(code)
    assert got.compression == kpack.SCHEMES[compression]
    assert {digest for _, digest in got.verify()} == {
        hashlib.sha256(data).hexdigest() for data in code.values()
    }


def test_writer_is_deterministic():
    assert archive() == archive()
    assert archive("none") == archive("none")


def test_arch_defaults_and_lookup_needs_arch_only_when_ambiguous():
    got = reader(
        archive(code={("k", "gfx942"): b"a", ("k", "gfx950"): b"b", ("j", "gfx942"): b"c"})
    )
    assert got.arches == ["gfx942", "gfx950"]
    assert got.read("j") == b"c"
    with pytest.raises(InvalidKpack, match="'k' exists for gfx942, gfx950: give an arch"):
        got.read("k")
    with pytest.raises(
        InvalidKpack, match=r"no code object 'k' for gfx1100 \(has gfx942, gfx950\)"
    ):
        got.read("k", "gfx1100")


def test_objects_compressed_elsewhere_give_the_same_archive():
    code = {"a#0": bytes(range(256)) * 8000, "b#0": b"\x7fELF small"}  # one past 1 MB
    direct, ahead = io.BytesIO(), io.BytesIO()
    with KpackWriter(direct, "g_lib", "gfx942") as writer:
        digests = [writer.add(key, data) for key, data in code.items()]
    with KpackWriter(ahead, "g_lib", "gfx942") as writer:
        for key, data in code.items():
            writer.add_compressed(key, kpack.compress_code(memoryview(data)))
    assert ahead.getvalue() == direct.getvalue()
    assert digests == [hashlib.sha256(data).hexdigest() for data in code.values()]
    assert KpackReader(io.BytesIO(ahead.getvalue())).read("a#0") == code["a#0"]
    with (
        KpackWriter(io.BytesIO(), "g_lib", "gfx942", compression="none") as plain,
        pytest.raises(ValueError, match="uncompressed"),
    ):
        plain.add_compressed("a#0", kpack.compress_code(b"x"))


def test_duplicate_key_and_arch_is_refused():
    writer = KpackWriter(io.BytesIO(), "g", "gfx942")
    writer.add("k", b"a")
    with pytest.raises(ValueError, match="duplicate code object 'k' for gfx942"):
        writer.add("k", b"b")


def test_one_lookup_decompresses_nothing_else():
    """Corrupt every other frame's bytes: the asked-for one still reads."""
    data = bytearray(archive())
    toc = msgpack.unpackb(data[struct.unpack_from("<Q", data, 8)[0] :])
    wanted = toc["toc"]["math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1"]["gfx942"]["ordinal"]
    for ordinal, prefix in enumerate(toc["zstd_frame_offsets"]):
        if ordinal != wanted:
            size = struct.unpack_from("<I", data, prefix)[0]
            data[prefix + 4 : prefix + 4 + size] = b"\xff" * size
    got = reader(bytes(data))
    assert (
        got.read("math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1")
        == CODE[("math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1", "gfx942")]
    )
    with pytest.raises(InvalidKpack, match=r": not a zstd frame \("):
        got.verify()


# --- compatibility ------------------------------------------------------------------------


def spec_built(scheme: str, objects: list[tuple[str, str, bytes]], index: bool = False) -> bytes:
    """An archive assembled byte by byte from kpack.md, without gfxpack's writer."""
    blob = bytearray()
    entries: dict = {}
    locations = []
    if scheme == "zstd-per-kernel":
        blob += struct.pack("<I", len(objects))
    for ordinal, (key, arch, code) in enumerate(objects):
        entries.setdefault(key, {})[arch] = {
            "type": "hsaco",
            "ordinal": ordinal,
            "original_size": len(code),
        }
        if scheme == "none":
            locations.append({"offset": 64 + len(blob), "size": len(code)})
            blob += code
        else:
            frame = zstandard.ZstdCompressor(level=3).compress(code)
            blob += struct.pack("<I", len(frame)) + frame
    toc = {
        "format_version": 1,
        "group_name": "g",
        "gfx_arch_family": "gfx942",
        "gfx_arches": ["gfx942"],
        "compression_scheme": scheme,
        "toc": entries,
    }
    if scheme == "none":
        toc["blobs"] = locations
    else:
        toc["zstd_offset"], toc["zstd_size"] = 64, len(blob)
    header = struct.pack("<4sIQ", b"KPAK", 1, 64 + len(blob))
    return header + b"\0" * 48 + bytes(blob) + msgpack.packb(toc, use_bin_type=True)


OBJECTS = [
    ("b/lib.so#0", "gfx942", b"second" * 50),
    ("a/lib.so#0", "gfx942", b"first" * 70),
    ("a/lib.so#1", "gfx942", b""),
]


@pytest.mark.parametrize("scheme", ["none", "zstd-per-kernel"])
def test_reads_an_archive_built_from_the_spec(scheme):
    got = reader(spec_built(scheme, OBJECTS))
    for key, arch, code in OBJECTS:
        assert got.read(key, arch) == code
    assert len(got.verify()) == 3


def independent_read(data: bytes) -> dict[tuple[str, str], bytes]:
    """The spec's reading rules, written without any gfxpack code."""
    magic, version, toc_offset = struct.unpack_from("<4sIQ", data, 0)
    assert (magic, version) == (b"KPAK", 1)
    assert data[16:64] == b"\0" * 48
    toc = msgpack.unpackb(data[toc_offset:], raw=False)
    if toc["compression_scheme"] == "none":
        objects = [data[b["offset"] : b["offset"] + b["size"]] for b in toc["blobs"]]
    else:
        position = toc["zstd_offset"]
        (count,) = struct.unpack_from("<I", data, position)
        position += 4
        objects = []
        for _ in range(count):
            (size,) = struct.unpack_from("<I", data, position)
            frame = data[position + 4 : position + 4 + size]
            objects.append(zstandard.ZstdDecompressor().decompressobj().decompress(frame))
            position += 4 + size
        assert position == toc["zstd_offset"] + toc["zstd_size"] == toc_offset
    return {
        (key, arch): objects[e["ordinal"]]
        for key, by_arch in toc["toc"].items()
        for arch, e in by_arch.items()
    }


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_our_output_reads_with_an_independent_reader(compression):
    assert independent_read(archive(compression)) == CODE


def test_toc_lists_keys_and_arches_sorted():
    data = archive(code={("z", "gfx950"): b"1", ("a", "gfx950"): b"2", ("a", "gfx942"): b"3"})
    toc = msgpack.unpackb(data[struct.unpack_from("<Q", data, 8)[0] :])
    assert list(toc["toc"]) == ["a", "z"] and list(toc["toc"]["a"]) == ["gfx942", "gfx950"]
    assert toc["gfx_arches"] == ["gfx942", "gfx950"]


# --- bad input --------------------------------------------------------------------------------


def toc_of(data: bytes) -> dict:
    return msgpack.unpackb(data[struct.unpack_from("<Q", data, 8)[0] :], raw=False)


def with_toc(data: bytes, change) -> bytes:
    """The archive with its TOC replaced by change(toc)."""
    toc_offset = struct.unpack_from("<Q", data, 8)[0]
    toc = toc_of(data)
    new = change(toc)
    return data[:toc_offset] + msgpack.packb(toc if new is None else new, use_bin_type=True)


GOOD = archive()
GOOD_NONE = archive("none")
GOOD_SPEC = spec_built("zstd-per-kernel", OBJECTS)  # no frame index: readers walk prefixes
TOC_AT = struct.unpack_from("<Q", GOOD, 8)[0]
FIRST_FRAME = toc_of(GOOD)["zstd_frame_offsets"][0]

BAD = {
    "empty": (b"", "truncated: 0 bytes, a .kpack header needs 16"),
    "short-header": (GOOD[:10], "truncated: 10 bytes, a .kpack header needs 16"),
    "no-magic": (
        b"PK\x03\x04" + GOOD[4:],
        "bad magic b'PK\\x03\\x04' (expected b'KPAK'): not a .kpack file",
    ),
    "container-version": (
        GOOD[:4] + struct.pack("<I", 2) + GOOD[8:],
        "unsupported container version 2 (expected 1)",
    ),
    "toc-past-end": (
        GOOD[:8] + struct.pack("<Q", len(GOOD) + 5) + GOOD[16:],
        f"TOC offset {len(GOOD) + 5} is outside the file (the blob starts at 64, "
        f"the file has {len(GOOD)} bytes)",
    ),
    "truncated-toc": (GOOD[: TOC_AT + 20], f"TOC at offset {TOC_AT} is not MessagePack"),
    "toc-not-msgpack": (
        GOOD[:TOC_AT] + b"\xc1garbage",
        f"TOC at offset {TOC_AT} is not MessagePack",
    ),
    "toc-not-map": (with_toc(GOOD, lambda toc: [1, 2]), "TOC is a list, expected a map"),
    "no-toc-key": (with_toc(GOOD, lambda toc: toc.pop("toc") and None), "TOC has no 'toc'"),
    "no-group": (
        with_toc(GOOD, lambda toc: toc.pop("group_name") and None),
        "TOC has no 'group_name'",
    ),
    "format-version": (
        with_toc(GOOD, lambda toc: toc.update(format_version=2)),
        "unsupported format_version 2 (expected 1)",
    ),
    "scheme-unknown": (
        with_toc(GOOD, lambda toc: toc.update(compression_scheme="lz4")),
        "unknown compression_scheme 'lz4' (expected 'none' or 'zstd-per-kernel')",
    ),
    "zstd-offset-missing": (
        with_toc(GOOD, lambda toc: toc.pop("zstd_offset") and None),
        "TOC needs integer 'zstd_offset' and 'zstd_size' (zstd-per-kernel)",
    ),
    "zstd-blob-past-toc": (
        with_toc(GOOD, lambda toc: toc.update(zstd_size=TOC_AT)),
        f"zstd blob (offset 64, size {TOC_AT}) lies outside the blob area (64..{TOC_AT})",
    ),
    "entry-missing-ordinal": (
        with_toc(
            GOOD,
            lambda toc: (
                next(iter(next(iter(toc["toc"].values())).values())).pop("ordinal") and None
            ),
        ),
        "TOC entry 'math-libs/BLAS/hipBLASLt/stage/lib/libhipblaslt.so#0' for 'gfx942' has no "
        "'ordinal'",
    ),
    "ordinal-past-blob": (
        with_toc(
            GOOD, lambda toc: next(iter(next(iter(toc["toc"].values())).values())).update(ordinal=7)
        ),
        "TOC entry 'math-libs/BLAS/hipBLASLt/stage/lib/libhipblaslt.so#0' for 'gfx942': "
        "ordinal 7 is past the blob (3 code objects)",
    ),
    "blob-past-area": (
        with_toc(GOOD_NONE, lambda toc: toc["blobs"][1].update(size=10**6)),
        f"blob 1 (offset {toc_of(GOOD_NONE)['blobs'][1]['offset']}, size 1000000) lies outside "
        "the blob area "
        f"(64..{struct.unpack_from('<Q', GOOD_NONE, 8)[0]})",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_archive_on_open(case):
    data, message = BAD[case]
    with pytest.raises(InvalidKpack) as caught:
        reader(data)
    assert str(caught.value).startswith(f"t.kpack: {message}")


def _frame_size_at(data: bytes, prefix: int) -> int:
    return struct.unpack_from("<I", data, prefix)[0]


def _set_u32(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<I", value) + data[offset + 4 :]


def test_frame_past_the_blob_when_walking():
    frame_prefix = 68  # the first frame of a spec-built archive
    bad = _set_u32(GOOD_SPEC, frame_prefix, 10**6)
    with pytest.raises(
        InvalidKpack,
        match=r"frame 0 \(size 1000000\) overruns the zstd blob, "
        r"which ends at \d+",
    ):
        reader(bad).read("b/lib.so#0")


def test_frame_past_the_blob_with_the_index():
    bad = _set_u32(GOOD, FIRST_FRAME, 10**6)
    with pytest.raises(
        InvalidKpack,
        match=rf"frame 0 \(offset {FIRST_FRAME}, size 1000000\) "
        r"overruns the zstd blob",
    ):
        reader(bad).read_kernel(next(k for k in reader(bad).kernels if k.ordinal == 0))


def test_more_frames_declared_than_stored():
    bad = _set_u32(GOOD_SPEC, 64, 9)
    with pytest.raises(InvalidKpack, match=r"frame 3 starts past the zstd blob \(9 declared\)"):
        reader(bad).verify()


def test_decompressed_size_differs_from_original_size():
    bad = with_toc(
        GOOD,
        lambda toc: toc["toc"]["math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1"]["gfx942"].update(
            original_size=5
        ),
    )
    with pytest.raises(InvalidKpack) as caught:
        reader(bad).read("math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1")
    assert str(caught.value) == (
        "t.kpack: 'math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1' for gfx942: frame "
        "decompresses to 1782 bytes, original_size says 5"
    )


def test_raw_size_differs_from_original_size():
    bad = with_toc(
        GOOD_NONE,
        lambda toc: toc["toc"]["math-libs/BLAS/rocBLAS/stage/lib/librocblas.so#1"]["gfx942"].update(
            original_size=5
        ),
    )
    with pytest.raises(InvalidKpack, match="1782 bytes, original_size says 5"):
        reader(bad).verify()


def test_frame_index_that_disagrees_is_caught_by_verify():
    bad = with_toc(
        GOOD, lambda toc: toc.update(zstd_frame_offsets=list(reversed(toc["zstd_frame_offsets"])))
    )
    with pytest.raises(InvalidKpack, match="zstd_frame_offsets disagrees with the frame size"):
        reader(bad).verify()


# --- files and the command line ------------------------------------------------------------------


def test_write_kpack_is_atomic(tmp_path):
    out = tmp_path / "x.kpack"
    with pytest.raises(FileNotFoundError):
        kpack.write_kpack(out, [("a", b"1"), ("b", tmp_path / "missing.co")], "g", "gfx942")
    assert list(tmp_path.iterdir()) == []


def cli_run(*args):
    return CliRunner().invoke(cli, ["kpack", *args])


def test_cli_create_list_extract_verify(tmp_path):
    first, second = tmp_path / "a.co", tmp_path / "b.co"
    first.write_bytes(code_object("gfx942", b"-a" * 2968))  # 6,000 bytes
    # A variant of the processor (xnack on) belongs in its archive too.
    second.write_bytes(code_object("gfx942", b"-b" * 10, flags=XNACK_ON))
    out = tmp_path / "blas_lib_gfx942.kpack"
    made = cli_run(
        "create",
        str(out),
        "--group",
        "blas_lib",
        "--arch",
        "gfx942",
        f"{second}=lib/librocblas.so#1",
        f"{first}=lib/librocblas.so#0",
    )
    assert made.exit_code == 0, made.output
    listed = json.loads(cli_run("list", str(out), "--json").stdout)
    assert listed == {
        "group": "blas_lib",
        "arches": ["gfx942"],
        "compression": "zstd-per-kernel",
        "kernels": [
            {
                "toc_key": "lib/librocblas.so#0",
                "arch": "gfx942",
                "size": 6000,
                "sha256": hashlib.sha256(first.read_bytes()).hexdigest(),
            },
            {
                "toc_key": "lib/librocblas.so#1",
                "arch": "gfx942",
                "size": 84,
                "sha256": hashlib.sha256(second.read_bytes()).hexdigest(),
            },
        ],
    }
    extracted = tmp_path / "out.co"
    assert cli_run("extract", str(out), "lib/librocblas.so#1", "-o", str(extracted)).exit_code == 0
    assert extracted.read_bytes() == second.read_bytes()
    verified = cli_run("verify", str(out))
    assert verified.stdout == (
        f"{out}: OK, 2 code objects (zstd-per-kernel); every sha256 matches the TOC\n"
    )
    # Order of the arguments does not change the bytes.
    again = tmp_path / "again.kpack"
    cli_run(
        "create",
        str(again),
        "--group",
        "blas_lib",
        "--arch",
        "gfx942",
        f"{first}=lib/librocblas.so#0",
        f"{second}=lib/librocblas.so#1",
    )
    assert again.read_bytes() == out.read_bytes()


def test_cli_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.kpack"
    bad.write_bytes(b"NOPE" + bytes(60))
    for command in (["verify", str(bad)], ["list", str(bad)], ["extract", str(bad), "k"]):
        result = cli_run(*command)
        assert result.exit_code == 1
        assert result.stderr == (
            f"error: {bad}: bad magic b'NOPE' (expected b'KPAK'): not a .kpack file\n"
        )
    missing = cli_run(
        "create", str(tmp_path / "x.kpack"), "--group", "g", "--arch", "gfx942", "nofile.co"
    )
    assert missing.stderr == "error: nofile.co: no such file (give FILE or FILE=TOCKEY)\n"
    assert cli_run("verify", str(tmp_path / "none.kpack")).stderr.startswith(
        f"error: {tmp_path / 'none.kpack'}: cannot open: No such file or directory"
    )
