"""Only regular files are read: FIFOs and devices are refused, and never hang a reader."""

from __future__ import annotations

import os

import pytest

from gfxpack.regular_files import NotARegularFile, open_regular, read_regular


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
