"""The host wheel's METADATA: device extras added where the installers' parser reads
them, whatever the line endings; read back and checked; names and versions agreeing
with the file name; tags within the wheel spec's characters."""

from __future__ import annotations

import email.feedparser
import json
import os
import subprocess
import sys
import zipfile

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from packaging.metadata import parse_email
from tests.fatbin.conftest import build_once
from tests.wheels.conftest import DIST_INFO, NAME, VERSION, WHEEL_NAME, demo_members, make_wheel

from gfxpack.cli import cli
from gfxpack.wheels.archive import WheelError
from gfxpack.wheels.metadata import (
    EMAIL_HEADER,
    WheelName,
    check_host_metadata,
    check_identity,
    device_filename,
    host_metadata,
)

pytestmark = pytest.mark.slow  # make check skips it: property tests, and wheels built with hipcc

HOST = WheelName("demo-1.0-py3-none-linux_x86_64.whl")
ARCHES = ["gfx942", "gfx1100"]
DEVICES = {arch: device_filename(HOST, arch) for arch in ARCHES}
HEADERS = [
    "Metadata-Version: 2.1",
    "Name: demo",
    "Version: 1.0",
    "Summary: a demo",
    "Keywords: one,",
    "  two",  # a continuation line
    "Requires-Dist: numpy",
]
BODY = ["A long description.", "", "Provides-Extra: not-a-header, it is the body's"]
ENDINGS = [b"\n", b"\r\n", b"\r"]


def metadata(endings: list[bytes], body: bool = True) -> bytes:
    """HEADERS, an empty line and BODY, line i ending with endings[i % len(endings)]."""
    lines = [*HEADERS, "", *BODY] if body else HEADERS
    return b"".join(
        line.encode() + endings[number % len(endings)] for number, line in enumerate(lines)
    )


def assert_extras_seen(original: bytes, written: bytes) -> None:
    """As the installers' parser reads it: every extra and requirement in the header,
    the body unchanged, and the original's bytes kept, the added lines aside."""
    raw, unparsed = parse_email(written)
    before, _ = parse_email(original)
    assert unparsed == {}
    assert raw["provides_extra"] == ["device-gfx942", "device-gfx1100", "device-all"]
    assert raw["requires_dist"] == [
        "numpy",
        'demo-device-gfx942==1.0; extra == "device-gfx942"',
        'demo-device-gfx1100==1.0; extra == "device-gfx1100"',
        'demo-device-gfx942==1.0; extra == "device-all"',
        'demo-device-gfx1100==1.0; extra == "device-all"',
    ]
    assert raw.get("description") == before.get("description")
    added = [line for line in written.splitlines(keepends=True) if b"device-" in line]
    assert len(added) == 7
    assert b"".join(line for line in written.splitlines(keepends=True) if line not in added) == (
        original if original.endswith((b"\n", b"\r")) else original + added[0][-1:]
    )
    check_host_metadata("demo.whl", written, DEVICES)


@pytest.mark.parametrize(
    "endings",
    [[b"\n"], [b"\r\n"], [b"\r"], [b"\r\n", b"\n"], [b"\n", b"\r"], [b"\r", b"\r\n", b"\n"]],
    ids=["LF", "CRLF", "CR", "CRLF-LF", "LF-CR", "CR-CRLF-LF"],
)
def test_the_extras_go_into_the_header_whatever_the_line_endings(endings):
    original = metadata(endings)
    assert_extras_seen(original, host_metadata("demo.whl", original, HOST, ARCHES))


@given(st.lists(st.sampled_from(ENDINGS), min_size=1, max_size=12), st.booleans())
def test_any_mix_of_line_endings_keeps_the_extras_in_the_header(endings, body):
    original = metadata(endings, body)
    assert_extras_seen(original, host_metadata("demo.whl", original, HOST, ARCHES))


def test_a_header_ending_without_a_line_ending_gets_one():
    original = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0"
    written = host_metadata("demo.whl", original, HOST, ARCHES)
    assert written.startswith(original + b"\nProvides-Extra: device-gfx942\n")
    check_host_metadata("demo.whl", written, DEVICES)


def test_a_line_that_is_no_header_ends_the_header_as_the_parser_ends_it():
    original = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nnot a header\nSummary: x\n"
    written = host_metadata("demo.whl", original, HOST, ARCHES)
    assert written.index(b"Provides-Extra") < written.index(b"not a header")
    check_host_metadata("demo.whl", written, DEVICES)


def test_metadata_whose_extras_an_installer_would_not_see_is_refused():
    # The extras after the header's end: the body, a long description, to the parser.
    original = metadata([b"\r\n", b"\n"])
    written = host_metadata("x", original, HOST, ARCHES).splitlines(keepends=True)
    hidden = original + b"".join(line for line in written if b"device-" in line)
    assert parse_email(hidden)[0]["description"].count("Provides-Extra: device-") == 3
    with pytest.raises(WheelError) as refused:
        check_host_metadata("demo.whl", hidden, DEVICES)
    assert str(refused.value) == (
        "demo.whl: the host METADATA, read back, does not offer the extra device-gfx942 "
        f"requiring demo-device-gfx942==1.0 ({DEVICES['gfx942']}); "
        "an installer would install no device code"
    )


def test_metadata_requiring_another_version_than_the_device_wheels_is_refused():
    written = host_metadata("x", metadata([b"\n"]), HOST, ARCHES)
    other = {arch: name.replace("-1.0-", "-1.1-") for arch, name in DEVICES.items()}
    with pytest.raises(WheelError, match=r"requiring demo-device-gfx942==1\.1 "):
        check_host_metadata("demo.whl", written, other)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ("Name: other\nVersion: 1.0\n", "other 1.0"),
        ("Name: demo\nVersion: 1.1\n", "demo 1.1"),
        ("Name: Demo\nVersion: 1.0.dev\n", "Demo 1.0.dev"),
        ("Version: 1.0\n", "(no Name) 1.0"),
        ("Name: demo\nVersion: not a version\n", "demo not a version"),
    ],
)
def test_a_name_or_version_unlike_the_file_names_is_refused(fields, says):
    with pytest.raises(WheelError) as refused:
        check_identity("demo.whl", f"Metadata-Version: 2.1\n{fields}".encode(), HOST)
    assert str(refused.value) == (
        f"demo.whl: METADATA says {says}, the file name demo 1.0; they must agree"
    )


def test_the_same_name_and_version_spelled_otherwise_agree():
    check_identity("demo.whl", b"Metadata-Version: 2.1\nName: DEMO\nVersion: 1.0.0\n", HOST)


@pytest.mark.parametrize(
    "filename",
    [
        "demo-1.0-py3-none-linux_x86_64+x.whl",
        "demo-1.0-py3-none-any%2F.whl",
        "demo-1.0-py3-abi'3-any.whl",
        "demo-1.0-py3-none-linux x86_64.whl",
        "demo-1.0-1%-py3-none-any.whl",
    ],
)
def test_a_tag_outside_the_wheel_specs_characters_is_refused(filename):
    with pytest.raises(WheelError, match=r"tag .* holds characters outside the wheel spec's"):
        WheelName(filename)


# --- split, end to end: what pip sees ---------------------------------------------------------


@pytest.mark.parametrize("ending", ["CR", "mixed"])
def test_pip_sees_the_extras_of_a_split_wheel_with_odd_line_endings(
    ending, tmp_path, tmp_path_factory
):
    build = build_once(tmp_path_factory)
    members = demo_members(build.two_files.read_bytes(), build.one_file.read_bytes())
    lines = (
        f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: s\n\nbody\n"
    ).splitlines()
    if ending == "CR":
        original = "\r".join(lines).encode() + b"\r"
    else:  # CRLF in the header, LF at its end and in the body: the bug's METADATA
        original = ("\r\n".join(lines[:4]) + "\r\n\n" + "\n".join(lines[5:]) + "\n").encode()
    members = [
        (name, mode, original if name.endswith("/METADATA") else data)
        for name, mode, data in members
    ]
    (tmp_path / "in").mkdir()
    wheel = make_wheel(tmp_path / "in" / WHEEL_NAME, members)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["split", str(wheel), "--out", str(out)])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out / WHEEL_NAME) as archive:
        written = archive.read(f"{DIST_INFO}/METADATA")
    # The original byte for byte, and the added lines (in its header: pip sees them).
    kept = [line for line in written.splitlines(keepends=True) if b"device-" not in line]
    assert b"".join(kept) == original
    # The referee: pip, resolving from the split wheels alone.
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-index",
         "--disable-pip-version-check", "--find-links", str(out), "--report", str(report),
         f"{NAME}[device-gfx90a]"],
        check=True, capture_output=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )  # fmt: skip
    chosen = json.loads(report.read_text())["install"]
    assert sorted(item["metadata"]["name"] for item in chosen) == [
        NAME,
        f"{NAME}-device-gfx90a",
    ]


def test_the_header_line_pattern_is_the_email_parsers():
    assert EMAIL_HEADER.pattern == email.feedparser.headerRE.pattern  # type: ignore[attr-defined]
