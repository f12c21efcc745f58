""".kpack archives built to hurt: forged sizes, shared frames, huge listings, FIFOs,
tampered content, unwritable outputs. Each must be one clear error, in bounded time
and memory, never a traceback, a hang or an allocation sized by the archive."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import msgpack
import pytest
import zstandard
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE, InvalidKpack, KpackReader, KpackWriter
from tests.test_kpack import spec_built, toc_of, with_toc

GiB = 1 << 30


def assemble(frames: list[bytes], entries: dict[str, dict[str, dict]]) -> bytes:
    """A zstd-per-kernel archive from given frames and TOC entries, laid out as the spec
    says (no gfxpack writer), so its sizes can lie."""
    blob = struct.pack("<I", len(frames)) + b"".join(struct.pack("<I", len(f)) + f for f in frames)
    toc = {
        "format_version": 1,
        "group_name": "g",
        "gfx_arch_family": "gfx942",
        "gfx_arches": ["gfx942"],
        "compression_scheme": "zstd-per-kernel",
        "toc": entries,
        "zstd_offset": 64,
        "zstd_size": len(blob),
    }
    header = struct.pack("<4sIQ", b"KPAK", 1, 64 + len(blob))
    return header + bytes(48) + blob + msgpack.packb(toc, use_bin_type=True)


def entry(ordinal: int, size: int) -> dict:
    return {"type": "hsaco", "ordinal": ordinal, "original_size": size}


def frame(data: bytes, declare_size: bool = True) -> bytes:
    return zstandard.ZstdCompressor(level=3, write_content_size=declare_size).compress(data)


class CountingFile(io.BytesIO):
    """An in-memory archive that counts the bytes read from it."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data

    def readinto(self, buffer) -> int:  # msgpack's streaming unpacker reads this way
        count = super().readinto(buffer)
        self.bytes_read += count
        return count


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


# --- forged sizes ------------------------------------------------------------------------------

# 262 KB of real content whose TOC entry claims 8 GiB.
PAYLOAD = os.urandom(1 << 12) * 64
CLAIMS_8_GIB = assemble(
    [frame(PAYLOAD, declare_size=False)], {"lib.so#0": {"gfx942": entry(0, 8 * GiB)}}
)


def test_an_object_claiming_8_gib_is_refused_before_its_frame_is_read():
    archive = CountingFile(CLAIMS_8_GIB)
    reader = KpackReader(archive, "claims.kpack")
    opened = archive.bytes_read
    with pytest.raises(InvalidKpack) as caught:
        reader.read("lib.so#0")
    assert str(caught.value) == (
        "claims.kpack: 'lib.so#0' for gfx942: original_size 8,589,934,592 bytes exceeds the "
        f"limit of {DEFAULT_MAX_OBJECT_SIZE:,} bytes per code object; refusing to read it "
        "(raise the limit if the object is genuine)"
    )
    assert archive.bytes_read == opened  # not one byte of the frame was read


def test_the_cli_names_the_object_and_the_option_raises_the_limit(tmp_path):
    path = tmp_path / "claims.kpack"
    path.write_bytes(CLAIMS_8_GIB)
    for command in ("list", "verify"):
        result = run("kpack", command, str(path))
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1
        assert "'lib.so#0' for gfx942: original_size 8,589,934,592 bytes exceeds" in result.stderr
    # With a raised limit the frame is read, and found to hold far less than it claims.
    raised = run(
        "kpack",
        "extract",
        str(path),
        "lib.so#0",
        "-o",
        str(tmp_path / "o"),
        "--max-object-size",
        "16G",
    )
    assert raised.exit_code == 1
    assert raised.stderr == (
        f"error: {path}: 'lib.so#0' for gfx942: frame decompresses to {len(PAYLOAD)} bytes, "
        "original_size says 8589934592\n"
    )
    assert not (tmp_path / "o").exists()
    bad_option = run("kpack", "list", str(path), "--max-object-size", "lots")
    assert bad_option.exit_code == 2 and "expected a size such as" in bad_option.stderr


def test_a_frame_without_a_size_and_original_size_2_40_costs_no_memory():
    data = assemble([frame(PAYLOAD, declare_size=False)], {"k": {"gfx942": entry(0, 1 << 40)}})
    reader = KpackReader(io.BytesIO(data), "t.kpack", max_object_size=1 << 41)
    tracemalloc.start()
    try:
        with pytest.raises(
            InvalidKpack,
            match=r"frame decompresses to 262144 bytes, original_size says 1099511627776",
        ):
            reader.read("k")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # the content, a chunk and change: not 2^40 bytes


def test_a_zstd_bomb_is_stopped_at_its_declared_size():
    """64 MiB of zeros compress to a few KB; the entry says 1 MiB: decompression stops
    just past 1 MiB instead of producing the rest."""
    bomb = frame(bytes(64 << 20), declare_size=False)
    data = assemble([bomb], {"k": {"gfx942": entry(0, 1 << 20)}})
    reader = KpackReader(io.BytesIO(data), "t.kpack")
    tracemalloc.start()
    try:
        with pytest.raises(
            InvalidKpack, match=r"frame decompresses to more than original_size \(1048576 bytes\)"
        ):
            reader.verify()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_a_frame_larger_than_its_object_could_need_is_not_read():
    huge = os.urandom(1 << 20)
    data = assemble([frame(huge)], {"k": {"gfx942": entry(0, 10)}})
    archive = CountingFile(data)
    reader = KpackReader(archive, "t.kpack")
    before = archive.bytes_read
    with pytest.raises(
        InvalidKpack,
        match=r"'k' for gfx942: frame 0 has [\d,]+ bytes, more than a zstd frame of "
        "original_size 10 can need",
    ):
        reader.read("k")
    assert archive.bytes_read - before < 1024


def test_a_declared_frame_size_beyond_original_size_is_refused_before_decompressing():
    data = assemble([frame(bytes(4 << 20))], {"k": {"gfx942": entry(0, 100)}})
    with pytest.raises(
        InvalidKpack, match="frame decompresses to 4194304 bytes, original_size says 100"
    ):
        KpackReader(io.BytesIO(data), "t.kpack").read("k")


# --- shared frames, large listings ---------------------------------------------------------------


def shared_frame_archive(keys: int) -> bytes:
    return assemble(
        [frame(os.urandom(1 << 20))],
        {f"lib{i}.so#0": {"gfx942": entry(0, 1 << 20)} for i in range(keys)},
    )


def test_twenty_keys_on_one_frame_decompress_it_once():
    one, twenty = CountingFile(shared_frame_archive(1)), CountingFile(shared_frame_archive(20))
    for archive in (one, twenty):
        assert len({digest for _, digest in KpackReader(archive, "t.kpack").verify()}) == 1
    # Reading the frame is most of the work: twenty keys read it as often as one does.
    frame_size = len(frame(os.urandom(1 << 20)))
    assert one.bytes_read > frame_size
    assert twenty.bytes_read - one.bytes_read < frame_size // 10


def listing_archive(count: int) -> Path:
    out = io.BytesIO()
    with KpackWriter(out, "g", "gfx942") as writer:
        for i in range(count):
            writer.add(f"stage/lib/lib{i % 10}.so#{i}", b"\x7fELF" + i.to_bytes(4, "little") * 8)
    return out.getvalue()


def test_listing_reads_each_object_once():
    """Bytes and read calls grow with the number of objects, not faster: the 8x archive
    costs 8x (give or take the header), where a rescan per key would cost 64x."""
    costs = []
    for count in (500, 4000):
        archive = CountingFile(listing_archive(count))
        reader = KpackReader(archive, "t.kpack")
        assert sum(1 for _ in reader.verified()) == count
        costs.append(archive.bytes_read)
    assert costs[1] < 8.5 * costs[0]


def calls_made(function, *args):
    """How many Python and C functions a call makes (a deterministic measure of work),
    and its result."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        result = function(*args)
    finally:
        sys.setprofile(None)
    return count, result


def test_kpack_list_work_is_linear_in_the_keys(tmp_path):
    """The command as a whole (reader, digests, formatting): 8x the keys make at most
    about 8x the calls, where any per-key rescan would make 64x."""
    work = {}
    for count in (200, 1600):
        path = tmp_path / f"{count}.kpack"
        path.write_bytes(listing_archive(count))
        for form in ("text", "json"):
            extra = ["--json"] if form == "json" else []
            work[form, count], result = calls_made(run, "kpack", "list", *extra, str(path))
            assert result.exit_code == 0 and result.stdout.count("stage/lib/") == count
    for form in ("text", "json"):
        assert work[form, 1600] < 9 * work[form, 200], work


def test_kpack_list_streams_rows_before_it_fails(tmp_path):
    """A corrupt last object: every row before it is already printed when the error comes."""
    data = bytearray(listing_archive(50))
    toc = toc_of(bytes(data))
    last_key = sorted(toc["toc"])[-1]  # listed last
    last = toc["toc"][last_key]["gfx942"]["ordinal"]
    prefix = toc["zstd_frame_offsets"][last]
    data[prefix + 4 : prefix + 8] = b"\xff\xff\xff\xff"  # the frame's magic
    path = tmp_path / "t.kpack"
    path.write_bytes(bytes(data))
    result = run("kpack", "list", str(path))
    assert result.exit_code == 1
    rows = [line for line in result.stdout.splitlines() if "stage/lib/" in line]
    assert len(rows) == 49 and last_key not in result.stdout
    assert result.stderr.startswith(f"error: {path}: '{last_key}' for gfx942: not a zstd frame")


def test_kpack_list_json_is_one_document(tmp_path):
    path = tmp_path / "t.kpack"
    path.write_bytes(listing_archive(3))
    listed = json.loads(run("kpack", "list", "--json", str(path)).stdout)
    assert [k["toc_key"] for k in listed["kernels"]] == [
        "stage/lib/lib0.so#0",
        "stage/lib/lib1.so#1",
        "stage/lib/lib2.so#2",
    ]
    empty = tmp_path / "empty.kpack"
    with open(empty, "wb") as out, KpackWriter(out, "g", "gfx942"):
        pass
    assert json.loads(run("kpack", "list", "--json", str(empty)).stdout)["kernels"] == []


# --- only regular files ---------------------------------------------------------------------------


def gfxpack(*args: str) -> subprocess.CompletedProcess:
    """The real command in a child process: a hang fails the test instead of the suite."""
    return subprocess.run(
        [sys.executable, "-m", "gfxpack", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("command", ["list", "verify", "extract"])
def test_a_fifo_is_refused_without_being_opened(tmp_path, command):
    fifo = tmp_path / "archive.kpack"
    os.mkfifo(fifo)
    extra = ["k", "-o", str(tmp_path / "out.co")] if command == "extract" else []
    result = gfxpack("kpack", command, str(fifo), *extra)
    assert result.returncode == 1
    assert result.stderr == f"error: {fifo}: cannot open: not a regular file (a FIFO)\n"


def test_a_device_is_refused():
    result = gfxpack("kpack", "list", "/dev/zero")
    assert result.returncode == 1
    assert (
        result.stderr == "error: /dev/zero: cannot open: not a regular file (a character device)\n"
    )


def test_create_refuses_a_fifo_input(tmp_path):
    fifo = tmp_path / "code.co"
    os.mkfifo(fifo)
    result = gfxpack(
        "kpack", "create", str(tmp_path / "o.kpack"), "--group", "g", "--arch", "gfx942", str(fifo)
    )
    assert result.returncode == 1
    assert result.stderr == f"error: {fifo}: not a regular file (give a code-object file)\n"


# --- unwritable outputs ---------------------------------------------------------------------------


def unwritable(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "file").write_text("x")
    return {
        "missing directory": (tmp_path / "nowhere/out.kpack", f"{tmp_path}/nowhere does not exist"),
        "parent is a file": (tmp_path / "file/out.kpack", f"{tmp_path}/file is not a directory"),
        # /proc refuses new files even to root: a directory that is really read-only.
        "read-only directory": (Path("/proc/out.kpack"), ""),
    }


@pytest.mark.parametrize("case", ["missing directory", "parent is a file", "read-only directory"])
def test_create_into_an_unwritable_place_is_one_error_line(tmp_path, case):
    out, why = unwritable(tmp_path)[case]
    code = tmp_path / "a.co"
    code.write_bytes(b"\x7fELF")
    result = run("kpack", "create", str(out), "--group", "g", "--arch", "gfx942", str(code))
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: cannot write {out}: ") and why in result.stderr
    assert result.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.co", "file"]


@pytest.mark.parametrize("case", ["missing directory", "parent is a file", "read-only directory"])
def test_extract_into_an_unwritable_place_is_one_error_line(tmp_path, case):
    out, why = unwritable(tmp_path)[case]
    archive = tmp_path / "a.kpack"
    archive.write_bytes(listing_archive(1))
    result = run("kpack", "extract", str(archive), "stage/lib/lib0.so#0", "-o", str(out))
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: cannot write {out}: ") and why in result.stderr
    assert result.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.kpack", "file"]


# --- content digests --------------------------------------------------------------------------


def flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x01]) + data[offset + 1 :]


def written(compression: str, objects: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with KpackWriter(out, "blas_lib", "gfx942", compression) as writer:
        for key, code in objects.items():
            writer.add(key, code)
    return out.getvalue()


def test_the_writer_records_each_objects_sha256():
    import hashlib

    large = os.urandom(3 << 20)  # hashed on a second thread while it compresses
    for compression in ("zstd", "none"):
        data = written(compression, {"a#0": b"first", "b#0": large})
        entries = toc_of(data)["toc"]
        assert entries["a#0"]["gfx942"]["sha256"] == hashlib.sha256(b"first").hexdigest()
        assert entries["b#0"]["gfx942"]["sha256"] == hashlib.sha256(large).hexdigest()


def test_verify_finds_a_flipped_byte_in_a_none_archive(tmp_path):
    data = written("none", {"lib/a.so#0": b"A" * 100, "lib/b.so#0": b"B" * 100})
    offset = toc_of(data)["blobs"][toc_of(data)["toc"]["lib/b.so#0"]["gfx942"]["ordinal"]]["offset"]
    path = tmp_path / "t.kpack"
    path.write_bytes(flip(data, offset + 50))
    result = run("kpack", "verify", str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: {path}: content differs from the recorded digest for 1 code object(s): "
        "'lib/b.so#0' for gfx942 has sha256 "
    )
    assert "lib/a.so" not in result.stderr and result.stdout == ""


def test_verify_finds_a_flipped_byte_inside_a_raw_zstd_block(tmp_path):
    """Random bytes do not compress: zstd stores them as a raw block, and without a
    checksum a flipped byte there decompresses silently. Only the digest catches it."""
    code = os.urandom(4096)
    data = written("zstd", {"lib/a.so#0": code})
    prefix = toc_of(data)["zstd_frame_offsets"][0]
    tampered = flip(data, prefix + 4 + 2048)
    got = KpackReader(io.BytesIO(tampered), "t.kpack").read("lib/a.so#0")
    assert got != code and len(got) == len(code)  # zstd itself noticed nothing
    path = tmp_path / "t.kpack"
    path.write_bytes(tampered)
    result = run("kpack", "verify", str(path))
    assert result.exit_code == 1
    assert "'lib/a.so#0' for gfx942 has sha256" in result.stderr
    assert "the TOC records" in result.stderr


def test_verify_says_when_no_digests_were_recorded(tmp_path):
    path = tmp_path / "upstream.kpack"
    path.write_bytes(spec_built("zstd-per-kernel", [("a#0", "gfx942", b"x" * 10)]))
    result = run("kpack", "verify", str(path))
    assert result.exit_code == 0
    assert result.stdout == (
        f"{path}: OK, 1 code objects (zstd-per-kernel); no digests recorded: structure, "
        "frames and sizes checked, content not\n"
    )
    report = json.loads(run("kpack", "verify", "--json", str(path)).stdout)
    assert report["archives"][0]["digests_recorded"] == 0 and report["archives"][0]["ok"]


def test_verify_goes_on_to_the_next_archive(tmp_path):
    good, bad = tmp_path / "good.kpack", tmp_path / "bad.kpack"
    good.write_bytes(written("zstd", {"a#0": b"a"}))
    bad.write_bytes(b"KPAK")
    result = run("kpack", "verify", str(bad), str(good))
    assert result.exit_code == 1
    assert (
        result.stdout
        == f"{good}: OK, 1 code objects (zstd-per-kernel); every sha256 matches the TOC\n"
    )
    assert result.stderr.startswith(f"error: {bad}: truncated")


def test_a_malformed_recorded_digest_is_refused_on_open():
    data = with_toc(
        written("zstd", {"a#0": b"a"}), lambda toc: toc["toc"]["a#0"]["gfx942"].update(sha256="XYZ")
    )
    with pytest.raises(
        InvalidKpack, match="TOC entry 'a#0' for 'gfx942': sha256 must be 64 lowercase hex digits"
    ):
        KpackReader(io.BytesIO(data), "t.kpack")


def test_a_toc_repeating_a_key_is_refused():
    """msgpack maps may repeat keys; a second 'toc' must not add (or replace) entries."""
    good = written("zstd", {"a#0": b"a"})
    toc_offset = struct.unpack_from("<Q", good, 8)[0]
    toc = toc_of(good)
    fields = [msgpack.packb(k) + msgpack.packb(v, use_bin_type=True) for k, v in toc.items()]
    extra = msgpack.packb("toc") + msgpack.packb({"b#0": {"gfx942": entry(0, 1)}})
    repeated = b"\xdf" + struct.pack(">I", len(fields) + 1) + b"".join(fields) + extra
    with pytest.raises(InvalidKpack, match="TOC repeats the key 'toc'"):
        KpackReader(io.BytesIO(good[:toc_offset] + repeated), "t.kpack")


def test_a_stored_object_claiming_8_gib_is_refused_by_the_limit_too():
    data = with_toc(
        written("none", {"a#0": b"x" * 100}),
        lambda toc: toc["toc"]["a#0"]["gfx942"].update(original_size=8 * GiB),
    )
    reader = KpackReader(io.BytesIO(data), "t.kpack")
    for read in (lambda: reader.read("a#0"), reader.verify):
        with pytest.raises(
            InvalidKpack, match="original_size 8,589,934,592 bytes exceeds the limit"
        ):
            read()
