"""Payload compression: option parsing, and streams the real decompressors read."""

from __future__ import annotations

import io
import re
import subprocess

import pytest

from gfxpack.formats.compress import Compression, InvalidCompression, compressing

DATA = b"".join(b"line %d of a payload\n" % i for i in range(20_000))
TOOLS = {"zstd": ["zstd", "-dc"], "xz": ["xz", "-dc"], "gzip": ["gzip", "-dc"]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("zstd", Compression("zstd", 9)),
        ("zstd:19", Compression("zstd", 19)),
        ("xz:0", Compression("xz", 0)),
        ("gzip", Compression("gzip", 9)),
        ("none", Compression("none", 0)),
    ],
)
def test_parse(text, expected):
    assert Compression.parse(text) == expected
    assert Compression.parse(str(expected)) == expected


@pytest.mark.parametrize("text", ["bzip2", "zstd:23", "xz:-1", "gzip:x", "none:1"])
def test_parse_rejects(text):
    with pytest.raises(InvalidCompression, match=re.escape(f"compression {text!r}: ")):
        Compression.parse(text)


@pytest.mark.parametrize("codec", sorted(TOOLS))
def test_the_real_tool_decompresses_what_compressing_writes(codec):
    out = io.BytesIO()
    with compressing(out, Compression.parse(f"{codec}:1"), len(DATA)) as stream:
        stream.write(DATA[:1000])
        stream.write(DATA[1000:])
    assert not out.closed  # closing the stream leaves its output open
    assert len(out.getvalue()) < len(DATA) // 4
    decompressed = subprocess.run(TOOLS[codec], input=out.getvalue(), capture_output=True)
    assert decompressed.returncode == 0, decompressed.stderr
    assert decompressed.stdout == DATA


def test_output_depends_on_the_input_only():
    def compressed(codec: str) -> bytes:
        out = io.BytesIO()
        with compressing(out, Compression.parse(codec), len(DATA)) as stream:
            stream.write(DATA)
        return out.getvalue()

    for codec in ("zstd", "xz", "gzip"):
        assert compressed(codec) == compressed(codec)
    assert compressed("none") == DATA
