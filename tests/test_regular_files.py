"""Only regular files are read: FIFOs and devices are refused, and never hang a reader."""

from __future__ import annotations

import os

import pytest

from gfxpack.regular_files import (
    NotARegularFile,
    UnreadableFile,
    open_regular,
    read_capped,
    read_regular,
    read_small_file,
    read_small_text,
    size_in_words,
)


def test_reads_a_regular_file_and_a_symlink_to_one(tmp_path):
    data = os.urandom(200_000)  # several reads' worth
    (tmp_path / "f").write_bytes(data)
    (tmp_path / "link").symlink_to(tmp_path / "f")
    for checked in (False, True):
        assert read_regular(tmp_path / "link", checked) == data
    assert read_regular(tmp_path / "f") == data


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: os.mkfifo(p), "a FIFO"),
        (lambda p: p.mkdir(), "a directory"),
        (lambda p: p.symlink_to("/dev/zero"), "a character device"),
    ],
)
def test_refuses_what_is_not_a_regular_file(tmp_path, make, kind):
    path = tmp_path / "x"
    make(path)
    for attempt in (lambda: read_regular(path), lambda: open_regular(path)):
        with pytest.raises(NotARegularFile) as caught:
            attempt()
        assert caught.value.strerror == f"not a regular file ({kind})"


def test_a_walked_path_swapped_for_a_fifo_or_device_does_not_hang(tmp_path):
    """checked=True trusts an earlier classification, but not blindly: a FIFO without a
    writer reads as empty at once, and a device streaming more than one read is refused."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_regular(fifo, checked=True) == b""
    with pytest.raises(NotARegularFile, match="a character device"):
        read_regular("/dev/zero", checked=True)


# --- the one reader of small input files ---------------------------------------------------


def test_a_small_file_is_read_up_to_its_cap_and_refused_beyond(tmp_path):
    path = tmp_path / "waivers.toml"
    path.write_bytes(b"x" * 1024)
    assert read_small_file(path, 1024, "waiver file") == b"x" * 1024
    path.write_bytes(b"x" * 1025)
    with pytest.raises(UnreadableFile) as caught:
        read_small_file(path, 1024, "waiver file")
    assert str(caught.value) == f"{path}: a waiver file of at most 1 KiB is expected"
    assert caught.value.problem == "a waiver file of at most 1 KiB is expected"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO, expected a regular file"),
        (lambda p: p.mkdir(), "is a directory, expected a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "is a character device, expected a regular file"),
        (lambda p: None, "file not found"),
    ],
    ids=["fifo", "directory", "device", "missing"],
)
def test_a_small_file_that_is_no_regular_file_is_one_error_naming_it(tmp_path, make, problem):
    path = tmp_path / "kernels.json"
    make(path)
    for read in (read_small_file, read_small_text):
        with pytest.raises(UnreadableFile) as caught:
            read(path, 1 << 20, "kernel list")
        assert str(caught.value) == f"{path}: {problem}"
        assert caught.value.missing == (problem == "file not found")


def test_a_small_file_must_be_utf8_text(tmp_path):
    path = tmp_path / "changelog"
    path.write_bytes(b"* Tue \xff")
    assert read_small_file(path, 100, "changelog") == b"* Tue \xff"
    with pytest.raises(UnreadableFile) as caught:
        read_small_text(path, 100, "changelog")
    assert str(caught.value) == f"{path}: not UTF-8 text (byte 6)"
    path.write_text("é\n")
    assert read_small_text(path, 100, "changelog") == "é\n"


def test_a_symlink_is_followed_unless_the_caller_says_not(tmp_path):
    (tmp_path / "real.json").write_text("[]")
    link = tmp_path / "package.json"
    link.symlink_to("real.json")
    assert read_small_text(link, 100, "package list") == "[]"
    with pytest.raises(UnreadableFile) as caught:
        read_small_text(link, 100, "manifest", follow_symlinks=False)
    assert str(caught.value) == f"{link}: is a symlink; gfxpack does not follow it"


def test_a_path_that_cannot_be_one_line_is_shown_as_one(tmp_path):
    path = tmp_path / "a\nb"
    with pytest.raises(UnreadableFile) as caught:
        read_small_file(path, 100, "waiver file")
    assert str(caught.value) == f"{tmp_path}/a\\x0ab: file not found"


def test_read_capped_reads_a_descriptor_the_caller_opened(tmp_path):
    path = tmp_path / "properties"
    path.write_text("simd_count 64\n")
    assert read_capped(open_regular(path), path, 14, "properties file") == b"simd_count 64\n"
    with pytest.raises(UnreadableFile, match="a properties file of at most 13 bytes is expected"):
        read_capped(open_regular(path), path, 13, "properties file")


@pytest.mark.parametrize(
    ("size", "words"),
    [(1 << 20, "1 MiB"), (64 << 10, "64 KiB"), (1 << 30, "1 GiB"), (1000, "1,000 bytes")],
)
def test_caps_are_said_as_people_write_them(size, words):
    assert size_in_words(size) == words
