"""Reading a .deb: its control fields and the paths it installs (deb(5))."""

from __future__ import annotations

import gzip
import io
import lzma
import tarfile
from collections.abc import Iterator
from typing import BinaryIO

import zstandard

from gfxpack._io import Readable, as_binary_file
from gfxpack.errors import GfxpackError

AR_MAGIC = b"!<arch>\n"


class InvalidDeb(GfxpackError, ValueError):
    pass


def _members(file: BinaryIO, name: str) -> Iterator[tuple[str, int]]:
    """(member name, size) of each ar member, leaving the file at the member's data."""
    if file.read(8) != AR_MAGIC:
        raise InvalidDeb(f"{name}: not a Debian package (no ar magic)")
    while header := file.read(60):
        if len(header) < 60 or header[58:60] != b"`\n":
            raise InvalidDeb(f"{name}: truncated or corrupt ar member header")
        member = header[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip() or 0)
        start = file.tell()
        yield member, size
        file.seek(start + size + size % 2)


def _decompressed(member: str, data: bytes) -> Readable:
    """A stream of the member's uncompressed bytes (never all of them in memory)."""
    raw = io.BytesIO(data)
    if member.endswith(".zst"):
        return zstandard.ZstdDecompressor().stream_reader(raw)
    if member.endswith(".xz"):
        return lzma.open(raw)
    if member.endswith(".gz"):
        return gzip.open(raw)
    return raw


def read_deb(path: str) -> tuple[str, list[str]]:
    """(control file text, installed paths without the leading '/') of a .deb."""
    control = None
    paths: list[str] = []
    try:
        with open(path, "rb") as file:
            for member, size in _members(file, path):
                if member.startswith(("control.tar", "data.tar")):
                    stream = _decompressed(member, file.read(size))
                    with tarfile.open(fileobj=as_binary_file(stream), mode="r|") as tar:
                        for entry in tar:
                            name = entry.name.removeprefix("./")
                            if member.startswith("control.tar") and name == "control":
                                member_file = tar.extractfile(entry)
                                if member_file is None:
                                    raise InvalidDeb(
                                        f"{path}: its control member is not a regular file"
                                    )
                                control = member_file.read().decode("utf-8")
                            elif member.startswith("data.tar") and not entry.isdir():
                                paths.append(name)
    except (OSError, tarfile.TarError, KeyError, lzma.LZMAError, zstandard.ZstdError) as e:
        raise InvalidDeb(f"{path}: cannot read: {e}") from None
    if control is None:
        raise InvalidDeb(f"{path}: no control file")
    return control, paths


def parse_stanzas(text: str) -> list[dict[str, str]]:
    r"""deb822 paragraphs: ``Field: value`` with continuation lines kept (leading space);
    lines starting with ``#`` are comments.

    >>> parse_stanzas("# system\nPackage: a\nDescription: x\n more\n\nPackage: b\n")
    [{'Package': 'a', 'Description': 'x\n more'}, {'Package': 'b'}]
    """
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            if current:
                stanzas.append(current)
            current, last = {}, None
        elif line.startswith("#"):
            continue
        elif line[0] in " \t" and last is not None:
            current[last] += "\n" + line
        elif ":" in line:
            field, _, value = line.partition(":")
            last = field.strip()
            current[last] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas
