"""Fat binaries that cost memory or work out of proportion to their size, and wrappers
that would corrupt the host file: each is one error line, or bounded output, run in a
child process that may not use more than a few hundred MB of address space.

The hostile inputs are built here, byte by byte (:mod:`tests.fatbin.fat_elf`, and the
bundles of :mod:`tests.fatbin.test_bundle`).
"""

from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import click
import msgpack
import pytest

from gfxpack.cli import cli
from gfxpack.fatbin import elf
from gfxpack.fatbin.join import join_tree
from gfxpack.fatbin.reader import HIPF, HIPK, WRAPPER, FatBinary
from gfxpack.fatbin.targets import TargetId
from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE, KpackReader, KpackWriter
from tests.fatbin.fat_elf import PAGE, fat_elf, section_offset_field, shared_bundle
from tests.fatbin.test_bundle import DEVICES, ccob, code_object, uncompressed

# make check skips it: hostile fat binaries, each in a memory-limited child.
pytestmark = pytest.mark.slow

# The address space of one command: Python, gfxpack and its libraries need about
# 100 MB; what the inputs below once cost was 4 GiB and more.
LIMIT = 384 << 20
GiB, TiB = 1 << 30, 1 << 40
BUNDLE = uncompressed(DEVICES)  # 3 pages: a header and two code objects
ZSTD_MAGIC = 0xFD2FB528
ZSTD_BLOCK = 128 << 10
LIMIT_TEXT = f"more than the limit of {DEFAULT_MAX_OBJECT_SIZE:,} bytes per code object"


def gfxpack(*args: str | Path, limit: int = LIMIT) -> subprocess.CompletedProcess[str]:
    """The command line in a child process limited to ``limit`` bytes of address space
    (one malloc arena per thread would reserve 64 MB of it each: two in all)."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "gfxpack", *map(str, args)],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        env={**os.environ, "MALLOC_ARENA_MAX": "2"},
        timeout=120,
    )


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single ``error:`` line of a command that failed cleanly."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@functools.cache
def zstd_bomb(head: bytes, zeros: int) -> bytes:
    """A zstd frame of ``head`` (raw blocks) then ``zeros`` zero bytes in 4-byte RLE
    blocks, declaring no content size: 4 GiB take 128 KiB."""
    frame = bytearray(struct.pack("<I", ZSTD_MAGIC) + bytes([0, (17 - 10) << 3]))  # 128 KiB

    def block(kind: int, size: int, content: bytes, last: bool) -> None:
        frame.extend((size << 3 | kind << 1 | last).to_bytes(3, "little") + content)

    for start in range(0, len(head), ZSTD_BLOCK):
        part = head[start : start + ZSTD_BLOCK]
        block(0, len(part), part, zeros == 0 and start + ZSTD_BLOCK >= len(head))
    while zeros:
        size = min(ZSTD_BLOCK, zeros)
        zeros -= size
        block(1, size, b"\0", zeros == 0)
    return bytes(frame)


@functools.cache
def zlib_bomb(head: bytes, mebibytes: int) -> bytes:
    """A zlib stream of ``head`` then ``mebibytes`` MiB of zeros: after a full flush the
    compressor starts afresh, so each MiB is the same kilobyte; 1 GiB takes 1 MB."""
    compressor = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    first = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush()
    checksum = zlib.adler32(head)
    for _ in range(mebibytes):
        checksum = zlib.adler32(zeros, checksum)
    return first + repeated * mebibytes + end[:-4] + checksum.to_bytes(4, "big")


def ccob_stating(stream: bytes, method: int, version: int, stated: int) -> bytes:
    """A CCOB bundle around an already compressed stream, stating ``stated`` bytes."""
    head = b"CCOB" + struct.pack("<HH", version, method)
    if version == 1:
        return head + struct.pack("<IQ", stated, 0) + stream
    if version == 2:
        return head + struct.pack("<IIQ", 24 + len(stream), stated, 0) + stream
    return head + struct.pack("<QQQ", 32 + len(stream), stated, 0) + stream


def tree_with(tmp_path: Path, data: bytes, name: str = "libbomb.so") -> Path:
    """An install tree holding one library; its path."""
    library = tmp_path / "tree" / "lib" / name
    library.parent.mkdir(parents=True)
    library.write_bytes(data)
    return library


def fat_library(bundle: bytes) -> bytes:
    """A library with one wrapper and one bundle, padded to the pages a split needs."""
    return fat_elf(bundle + bytes(-len(bundle) % PAGE + 2 * PAGE), [(HIPF, 0, 0)])[0]


def assert_untouched(tmp_path: Path, library: Path, before: bytes) -> None:
    """The input as it was (content and link count), no OUT and nothing beside it."""
    assert library.read_bytes() == before
    assert library.stat().st_nlink == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]


# --- compressed bundles stating or holding more than the limit ----------------------------

BOMBS = {
    "zstd-v3-4GiB": lambda: ccob_stating(zstd_bomb(BUNDLE, 4 * GiB), 1, 3, 4 * GiB),
    "zstd-v3-1TiB": lambda: ccob_stating(zstd_bomb(BUNDLE, 4 * GiB), 1, 3, TiB),
    "zstd-v2-4GiB": lambda: ccob_stating(zstd_bomb(BUNDLE, 4 * GiB), 1, 2, 2**32 - 1),
    "zstd-v1-4GiB": lambda: ccob_stating(zstd_bomb(BUNDLE, 4 * GiB), 1, 1, 2**32 - 1),
    "zlib-v3-4GiB": lambda: ccob_stating(zlib_bomb(BUNDLE, 1024), 0, 3, 4 * GiB),
    "zlib-v3-1TiB": lambda: ccob_stating(zlib_bomb(BUNDLE, 1024), 0, 3, TiB),
}


@pytest.mark.parametrize("make", BOMBS.values(), ids=BOMBS.keys())
def test_a_bundle_stating_more_than_the_limit_is_refused_unread(tmp_path: Path, make) -> None:
    packed = make()
    stated = struct.unpack_from("<Q", packed, 16)[0] if packed[4] == 3 else None
    library = tree_with(tmp_path, fat_library(packed))
    before = library.read_bytes()
    error = one_error(gfxpack("split", tmp_path / "tree", "--out", tmp_path / "out", "--name",
                              "bomb_lib", "-j", "2"))  # fmt: skip
    size = f"{stated:,}" if stated is not None else f"{2**32 - 1:,}"
    assert error == (
        f"error: {library}: bundle 0: CCOB header states an uncompressed size of {size} bytes, "
        f"{LIMIT_TEXT} (--max-object-size); refusing to read it; the bundle is at file "
        f"offset {PAGE:#x}"
    )
    assert_untouched(tmp_path, library, before)


@pytest.mark.parametrize("method", [0, 1], ids=["zlib", "zstd"])
def test_a_bundle_holding_more_than_it_states_stops_at_what_it_states(
    tmp_path: Path, method: int
) -> None:
    # It states 64 KiB, within the limit; it holds 1 GiB (zlib) or 4 GiB (zstd).
    stream = zstd_bomb(BUNDLE, 4 * GiB) if method else zlib_bomb(BUNDLE, 1024)
    library = tree_with(tmp_path, fat_library(ccob_stating(stream, method, 2, 64 << 10)))
    before = library.read_bytes()
    error = one_error(gfxpack("split", tmp_path / "tree", "--out", tmp_path / "out", "--name",
                              "bomb_lib", "-j", "2"))  # fmt: skip
    assert error == (
        f"error: {library}: bundle 0: CCOB payload decompresses past its stated 65536 bytes; "
        f"the bundle is at file offset {PAGE:#x}"
    )
    assert_untouched(tmp_path, library, before)


@pytest.mark.parametrize("method", [0, 1], ids=["zlib", "zstd"])
def test_a_bundle_holding_less_than_it_states_allocates_nothing_for_it(
    tmp_path: Path, method: int
) -> None:
    # It states just under the limit, far more than the child's address space: a
    # reader that allocated what the header says would fail with MemoryError.
    packed = ccob(BUNDLE, 3, method)
    stated = DEFAULT_MAX_OBJECT_SIZE - 1
    packed = packed[:16] + struct.pack("<Q", stated) + packed[24:]
    library = tree_with(tmp_path, fat_library(packed))
    before = library.read_bytes()
    error = one_error(gfxpack("split", tmp_path / "tree", "--out", tmp_path / "out", "--name",
                              "bomb_lib", "-j", "2"))  # fmt: skip
    assert error == (
        f"error: {library}: bundle 0: CCOB payload decompresses to {len(BUNDLE)} bytes, header "
        f"says {stated}; the bundle is at file offset {PAGE:#x}"
    )
    assert_untouched(tmp_path, library, before)


BIG = [("hipv4-amdgcn-amd-amdhsa--gfx90a", code_object("gfx90a") + bytes(2 << 20))]


@pytest.mark.parametrize(
    ("bundle", "problem"),
    [
        (ccob(uncompressed(BIG), 3, 1), f"CCOB header states an uncompressed size of "
                                        f"{len(uncompressed(BIG)):,} bytes"),
        (uncompressed(BIG), f"entry 1 ({BIG[0][0]}) is {len(BIG[0][1]):,} bytes"),
    ],
    ids=["compressed", "uncompressed"],
)  # fmt: skip
def test_the_limit_is_the_option_for_every_bundle(tmp_path: Path, bundle: bytes, problem: str):
    # An honest 2 MiB code object: refused under --max-object-size 1M, split under 4M.
    library = tree_with(tmp_path, fat_library(bundle))
    out = tmp_path / "out"
    error = one_error(gfxpack("split", tmp_path / "tree", "--out", out, "--name", "big_lib",
                              "--max-object-size", "1M"))  # fmt: skip
    assert error == (
        f"error: {library}: bundle 0: {problem}, more than the limit of 1,048,576 bytes per "
        f"code object (--max-object-size); refusing to read it; the bundle is at file offset "
        f"{PAGE:#x}"
    )
    assert not out.exists()
    done = gfxpack("split", tmp_path / "tree", "--out", out, "--name", "big_lib",
                   "--max-object-size", "4M", "-j", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    archive = out / "big_lib_gfx90a" / "stage" / ".kpack" / "big_lib_gfx90a.kpack"
    with KpackReader.open(archive, 4 << 20) as reader:
        assert reader.read("stage/lib/libbomb.so#0", "gfx90a") == BIG[0][1]


def test_many_bombs_under_the_limit_stop_at_a_multiple_of_the_file_size(tmp_path: Path) -> None:
    # Each bundle holds 64 MiB (2 KiB compressed), under the limit; 40 of them would make
    # 2.5 GiB of work from a 200 KB file.
    one = zstd_bomb(BUNDLE, 64 << 20)
    bundles = b"".join(
        packed + bytes(-len(packed) % PAGE)
        for packed in [ccob_stating(one, 1, 2, len(BUNDLE) + (64 << 20))] * 40
    )
    step = len(bundles) // 40
    data = fat_elf(bundles, [(HIPF, i * step, 0) for i in range(40)])[0]
    library = tree_with(tmp_path, data)
    error = one_error(gfxpack("split", tmp_path / "tree", "--out", tmp_path / "out", "--name",
                              "bomb_lib", "--max-object-size", "128M", "-j", "2"))  # fmt: skip
    budget = max(128 << 20, 256 * len(data))
    assert error.startswith(
        f"error: {library}: bundle 2: its compressed bundles decompress to more than "
        f"{budget:,} bytes in all (256 times the file's size, or --max-object-size if larger)"
    )


def test_large_compressed_bundles_are_held_one_or_two_at_a_time(tmp_path: Path) -> None:
    # Three honest bundles of 100 MiB each (zeros after the code: 3 KiB compressed).
    # The pool compresses objects ahead of the archives: were every bundle's objects
    # queued at once, the three bundles and their compression buffers (600 MiB) would be
    # in memory together; one bundle and its object at a time need about 200.
    big = [("hipv4-amdgcn-amd-amdhsa--gfx90a", code_object("gfx90a") + bytes(100 << 20))]
    inner = uncompressed(big)
    packed = ccob(inner, 2, 1)
    page = packed + bytes(-len(packed) % PAGE)
    data = fat_elf(page * 3 + bytes(2 * PAGE), [(HIPF, i * len(page), 0) for i in range(3)])[0]
    library = tree_with(tmp_path, data)
    out = tmp_path / "out"
    result = gfxpack("split", tmp_path / "tree", "--out", out, "--name", "big_lib", "-j", "4",
                     limit=448 << 20)  # fmt: skip
    assert result.returncode == 0, result.stderr
    archive = out / "big_lib_gfx90a" / "stage" / ".kpack" / "big_lib_gfx90a.kpack"
    with KpackReader.open(archive) as reader:
        assert [k.original_size for k in reader.kernels] == [len(big[0][1])] * 3
    assert library.stat().st_size < 64 << 10


# --- many wrappers sharing one bundle ------------------------------------------------------

WRAPPERS = 20_000  # 480 KB of wrappers and as many relocations: a 1 MB library


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the tree, its split) of a library whose 20,000 wrappers share one bundle."""
    root = tmp_path_factory.mktemp("shared")
    library = root / "tree" / "lib" / "libshared.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(shared_bundle(BUNDLE + bytes(PAGE), WRAPPERS))
    result = gfxpack("split", root / "tree", "--out", root / "out", "--name", "shared_lib",
                     "-j", "2")  # fmt: skip
    assert result.returncode == 0, result.stderr
    return root / "tree", root / "out"


def test_a_bundle_many_wrappers_share_is_stored_once(shared: tuple[Path, Path]) -> None:
    tree, out = shared
    size = (tree / "lib" / "libshared.so").stat().st_size
    archives = sorted(out.glob("*/stage/.kpack/*.kpack"))
    assert [a.name for a in archives] == ["shared_lib_gfx906.kpack", "shared_lib_gfx90a.kpack"]
    for archive in archives:
        with KpackReader.open(archive) as reader:
            assert [k.toc_key for k in reader.kernels] == ["stage/lib/libshared.so#0"]
    # Archives grow with the bundles, not with the wrappers: 53 MB from 0.5 MB once.
    assert sum(a.stat().st_size for a in archives) < 4 * len(BUNDLE)
    written = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert written < 2 * size
    host = out / "shared_lib_generic" / "stage" / "lib" / "libshared.so"
    with FatBinary(host, split=True) as split:
        assert {(w.magic, w.reserved) for w in split.wrappers} == {(HIPK, 0)}  # co_index 0


def test_a_bundle_many_wrappers_share_joins_back(shared: tuple[Path, Path], tmp_path) -> None:
    tree, out = shared
    assert join_tree(out, tmp_path / "joined") == 1
    original = (tree / "lib" / "libshared.so").read_bytes()
    assert (tmp_path / "joined" / "lib" / "libshared.so").read_bytes() == original


def test_resolving_many_wrappers_reads_their_object_once(
    shared: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = shared
    installed = tmp_path / "installed"
    for part in ("shared_lib_generic", "shared_lib_gfx90a"):
        shutil.copytree(out / part / "stage", installed, dirs_exist_ok=True)
    codes = tmp_path / "codes"
    result = gfxpack("kpack", "resolve", installed / "lib" / "libshared.so", "--arch", "gfx90a",
                     "--out", codes)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == WRAPPERS
    assert set(lines) == {
        f"0: stage/lib/libshared.so#0 [gfx90a] in {installed}/.kpack/shared_lib_gfx90a.kpack "
        f"({len(DEVICES[0][1]):,} bytes)"
    }
    assert [p.name for p in codes.iterdir()] == ["0.hsaco"]
    assert (codes / "0.hsaco").read_bytes() == DEVICES[0][1]


# --- a forged split binary: many wrappers, one long reference ------------------------------

PATHS = 2500  # search paths in the reference: 55 KB, under the runtime's 64 KiB


def forged_split(tmp_path: Path, count: int, indexes: int) -> Path:
    """A split binary of ``count`` HIPK wrappers (co_index cycling over ``indexes``
    values) pointing at one reference with PATHS search paths, of which only the last
    names an archive (holding each index's object for gfx90a)."""
    paths = [f"p{i}/@GFXARCH@.kpack" for i in range(PATHS)]
    reference = msgpack.packb({"kernel_name": "lib/x.so", "kpack_search_paths": paths})
    wrappers = [(HIPK, 0, i % indexes) for i in range(count)]
    binary = tmp_path / "lib" / "x.so"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(fat_elf(reference, wrappers, ".rocm_kpack_ref", relocate=False)[0])
    archive = tmp_path / "lib" / f"p{PATHS - 1}" / "gfx90a.kpack"
    archive.parent.mkdir()
    with open(archive, "wb") as handle, KpackWriter(handle, "x_lib", "gfx90a") as writer:
        for index in range(indexes):
            writer.add(f"lib/x.so#{index}", code_object("gfx90a") + index.to_bytes(4, "little"))
    return binary


def test_resolving_many_wrappers_of_one_long_reference_is_bounded(tmp_path: Path) -> None:
    # 8,000 wrappers once parsed the reference 8,000 times and held 24 million paths.
    binary = forged_split(tmp_path, 8000, 4)
    assert binary.stat().st_size < 300_000
    result = gfxpack("kpack", "resolve", binary, "--arch", "gfx90a", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["code_objects"]
    assert [row["index"] for row in rows] == [i % 4 for i in range(8000)]
    assert {row["size"] for row in rows} == {len(code_object("gfx90a")) + 4}


def test_no_archive_for_a_long_reference_is_one_short_line(tmp_path: Path) -> None:
    binary = forged_split(tmp_path, 8000, 1)
    result = gfxpack("kpack", "resolve", binary, "--arch", "gfx1030")
    error = one_error(result)
    arches = TargetId.parse("gfx1030").compatible()  # the kpack runtime tries no generic archive
    tried = [f"{binary.parent}/p{i}/{arch}.kpack" for i in range(PATHS) for arch in arches]
    assert len(tried) > 5
    # What exists instead (one archive, for gfx90a) is found within the bounded work.
    assert error == (
        f"error: {binary}: wrapper 0: no archive found; tried {', '.join(tried[:5])} and "
        f"{len(tried) - 5} more; archives for other target ids: "
        f"{binary.parent}/p{PATHS - 1}/gfx90a.kpack (gfx90a)"
    )


# --- wrappers over the ELF header -----------------------------------------------------------


def test_a_wrapper_over_the_elf_header_is_refused(tmp_path: Path) -> None:
    # .hipFatBinSegment's file offset moved onto e_entry, which reads as HIPF version 1;
    # its relocation (matched by address) still points the wrapper at the bundle.
    data, layout = fat_elf(BUNDLE + bytes(2 * PAGE), [(HIPF, 0, 0)])
    forged = bytearray(data)
    struct.pack_into("<Q", forged, 24, HIPF | 1 << 32)  # e_entry
    struct.pack_into("<Q", forged, section_offset_field(layout, ".hipFatBinSegment"), 24)
    library = tree_with(tmp_path, bytes(forged))
    error = one_error(gfxpack("split", tmp_path / "tree", "--out", tmp_path / "out", "--name",
                              "bad_lib"))  # fmt: skip
    assert error == (
        f"error: {library}: wrapper 0 of .hipFatBinSegment (file offset 0x18, 24 bytes) "
        "overlaps the ELF header (0x0-0x40); a wrapper lies in its own data section"
    )
    assert_untouched(tmp_path, library, bytes(forged))


def test_a_relocation_over_its_own_wrapper_is_refused(tmp_path: Path) -> None:
    # .rela.dyn laid over .hipFatBinSegment: the entry's r_offset is the wrapper's magic
    # and version, its r_info the pointer field (8, R_X86_64_RELATIVE), its addend the
    # reserved field. Patching both would write 8 bytes too many into the host file.
    data, layout = fat_elf(BUNDLE + bytes(2 * PAGE), [(HIPF, 0, 0)])
    forged = bytearray(data)
    at = layout.wrappers
    address = (HIPF | 1 << 32) - 8  # where the wrapper must be for r_offset to name it
    WRAPPER.pack_into(forged, at, HIPF, 1, elf.R_X86_64_RELATIVE, PAGE)
    struct.pack_into("<Q", forged, section_offset_field(layout, ".rela.dyn"), at)
    struct.pack_into("<Q", forged, section_offset_field(layout, ".hipFatBinSegment") - 8, address)
    library = tree_with(tmp_path, bytes(forged))
    error = one_error(gfxpack("split", tmp_path / "tree", "--out", tmp_path / "out", "--name",
                              "bad_lib"))  # fmt: skip
    assert error == (
        f"error: {library}: cannot rewrite: bytes to patch at {at} and at {at + 16} overlap"
    )
    assert_untouched(tmp_path, library, bytes(forged))


# --- one option, one default ---------------------------------------------------------------

READERS = [
    ("split",),
    ("join",),
    ("kpack", "resolve"),
    ("kpack", "list"),
    ("kpack", "extract"),
    ("kpack", "verify"),
    ("descriptors", "list-engines"),
    ("descriptors", "lint"),
    ("descriptors", "pack"),
]


@pytest.mark.parametrize("path", READERS, ids=" ".join)
def test_every_reader_of_code_objects_takes_the_one_limit(path: tuple[str, ...]) -> None:
    command: click.Command = cli
    context = click.Context(cli)
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(context, name)
        assert found is not None, name
        command, context = found, click.Context(found, parent=context)
    option = next(p for p in command.params if p.name == "max_object_size")
    assert option.opts == ["--max-object-size"]
    assert option.type_cast_value(context, option.default) == DEFAULT_MAX_OBJECT_SIZE
