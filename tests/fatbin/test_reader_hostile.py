"""Broken fat binaries: one error naming the file (and the bundle), nothing written."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from gfxpack.fatbin import InvalidFatBinary
from gfxpack.fatbin.reader import FatBinary
from gfxpack.fatbin.split import split_tree
from tests.fatbin.conftest import HipBuild


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "tree" / "lib" / "libbad.so"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def _layout(library: Path) -> tuple[int, int, int, int | None]:
    """(fatbin address, fatbin offset, wrapper 1 offset, its relocation entry offset)."""
    with FatBinary(library) as fat:
        assert fat.fatbin is not None
        wrapper = fat.wrappers[1]
        return fat.fatbin.addr, fat.fatbin.offset, wrapper.offset, wrapper.relocation


@pytest.mark.slow
def test_wrapper_pointing_nowhere_names_file_and_bundle(hip_build: HipBuild, tmp_path):
    data = bytearray(hip_build.two_files.read_bytes())
    _address, _offset, wrapper, relocation = _layout(hip_build.two_files)
    assert relocation is not None
    struct.pack_into("<q", data, relocation + 16, 0x7FFF0000)
    struct.pack_into("<Q", data, wrapper + 8, 0x7FFF0000)
    path = _write(tmp_path, bytes(data))
    with pytest.raises(
        InvalidFatBinary, match=r"libbad.so: bundle 1: wrapper 1 points at 0x7fff0000"
    ):
        FatBinary(path)
    with pytest.raises(InvalidFatBinary, match="bundle 1"):
        split_tree(tmp_path / "tree", tmp_path / "out", name="bad_lib")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]  # nothing written


@pytest.mark.slow
def test_corrupt_bundle_names_its_index(hip_build: HipBuild, tmp_path):
    data = bytearray(hip_build.two_files.read_bytes())
    _address, offset, _wrapper, _relocation = _layout(hip_build.two_files)
    with FatBinary(hip_build.two_files) as fat:
        second = fat.devices[1].bundle.offset
    data[offset + second : offset + second + 8] = b"garbage!"
    path = _write(tmp_path, bytes(data))
    with pytest.raises(InvalidFatBinary, match=r"libbad.so: bundle 1: bad magic b'garbage!"):
        FatBinary(path)


@pytest.mark.slow
def test_truncated_file_is_one_error(hip_build: HipBuild, tmp_path):
    data = hip_build.two_files.read_bytes()
    _address, offset, _wrapper, _relocation = _layout(hip_build.two_files)
    path = _write(tmp_path, data[: offset + 5000])
    with pytest.raises(InvalidFatBinary, match=r"libbad.so: .*lies outside the file"):
        FatBinary(path)


@pytest.mark.slow
def test_already_split_binary_is_refused(hip_build: HipBuild, tmp_path):
    split_tree(hip_build.root, tmp_path / "out", name="demo_lib")
    host = tmp_path / "out" / "demo_lib_generic" / "stage" / "libtwo.so"
    with pytest.raises(InvalidFatBinary, match="already split"):
        FatBinary(host)


@pytest.mark.slow
def test_device_code_without_wrappers_is_kept_whole_with_a_note(hip_build: HipBuild, tmp_path):
    data = hip_build.one_file.read_bytes()
    assert data.count(b".hipFatBinSegment\0") == 1
    path = _write(tmp_path, data.replace(b".hipFatBinSegment\0", b".hipFatBinSegmenZ\0"))
    report = split_tree(tmp_path / "tree", tmp_path / "out", name="demo_lib")
    assert report.binaries == 0
    assert report.notes == [f"{path}: kept whole: .hip_fatbin has no .hipFatBinSegment wrappers "
                            "pointing at it"]  # fmt: skip
    copied = tmp_path / "out" / "demo_lib_generic" / "stage" / "lib" / "libbad.so"
    assert copied.read_bytes() == path.read_bytes()
    assert not list((tmp_path / "out").glob("*/stage/.kpack"))
