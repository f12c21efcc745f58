"""A small fat extension wheel, built with Debian's hipcc (gfx90a, gfx1030, gfx906:xnack-).

The package ``hipdemo`` holds two fat libraries (``hipdemo/_native.so``: two
bundles; ``hipdemo/lib/libone.so``: one), an ``__init__.py`` that loads both with
ctypes and calls a host function of each, and a dist-info whose RECORD lists
every member. The wheel is assembled here with zipfile, not with gfxpack's own
writer, so the splitter reads a wheel it did not make. Tests skip, naming hipcc,
when it is not installed (``build_once`` of the fat-binary tests builds the libraries).
"""

from __future__ import annotations

import base64
import hashlib
import struct
import sys
import zipfile
from pathlib import Path

import pytest
from tests.fatbin.conftest import build_once

NAME = "hipdemo"
VERSION = "1.2.0"
ARCHES = ("gfx1030", "gfx906", "gfx90a")
PYTAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
WHEEL_NAME = f"{NAME}-{VERSION}-{PYTAG}-{PYTAG}-linux_x86_64.whl"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
INIT = """import ctypes, os
_here = os.path.dirname(__file__)
native = ctypes.CDLL(os.path.join(_here, "_native.so"))
one = ctypes.CDLL(os.path.join(_here, "lib", "libone.so"))
ANSWERS = (native.a_answer(), native.b_answer(), one.a_answer())
"""
METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: A fat HIP extension for the tests
Requires-Python: >=3.11

A long description stays in the body.
"""
WHEEL = f"""Wheel-Version: 1.0
Generator: the gfxpack tests
Root-Is-Purelib: false
Tag: {PYTAG}-{PYTAG}-linux_x86_64
"""


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def make_wheel(
    path: Path, members: list[tuple[str, int, bytes]], dist_info: str = DIST_INFO
) -> Path:
    """A wheel of ``(name, mode, bytes)`` members and a RECORD listing them."""
    record = "".join(record_line(name, data) for name, _mode, data in members)
    record += f"{dist_info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, mode, data in [*members, (f"{dist_info}/RECORD", 0o644, record.encode())]:
            info = zipfile.ZipInfo(name, (2024, 1, 2, 3, 4, 6))
            info.create_system = 3
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, data, zipfile.ZIP_DEFLATED)
    return path


def demo_members(native: bytes, one: bytes) -> list[tuple[str, int, bytes]]:
    return [
        (f"{NAME}/__init__.py", 0o644, INIT.encode()),
        (f"{NAME}/_native.so", 0o755, native),
        (f"{NAME}/lib/libone.so", 0o755, one),
        (f"{DIST_INFO}/METADATA", 0o644, METADATA.encode()),
        (f"{DIST_INFO}/WHEEL", 0o644, WHEEL.encode()),
    ]


@pytest.fixture(scope="session")
def fat_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fat wheel, made once per session."""
    build = build_once(tmp_path_factory)
    root = tmp_path_factory.mktemp("wheel")
    members = demo_members(build.two_files.read_bytes(), build.one_file.read_bytes())
    return make_wheel(root / WHEEL_NAME, members)


def central_entry(data: bytes, name: str) -> int:
    """Where the central directory entry of ``name`` starts in the zip ``data``."""
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) >= 0:
        name_length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + name_length] == name.encode():
            return at
        at += 4
    raise AssertionError(f"{name} is not in the zip")


def declare(data: bytes, name: str, size: int) -> bytes:
    """The zip ``data`` with the central directory declaring ``size`` bytes for ``name``."""
    at = central_entry(data, name) + 24  # uncompressed size
    return data[:at] + struct.pack("<I", size) + data[at + 4 :]
