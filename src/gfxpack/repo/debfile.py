"""Reading a .deb for a repository: its control fields, held to Debian's grammar, and the
paths it installs (deb(5), deb-control(5)).

Everything read here ends up in a signed index, so nothing is trusted: ar sizes are
checked against the file, members are streamed (never read whole), the control file
is bounded, and names, versions, field names and paths are checked before they can
reach ``Packages`` or ``Contents``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import re
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, cast

import zstandard

from gfxpack.errors import GfxpackError
from gfxpack.formats.deb import AR_MAGIC  # what the writer writes
from gfxpack.formats.package_format import DEB
from gfxpack.relations import InvalidRelation

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

AR_HEADER = 60
# A real control.tar is a few KiB; these bound what a hostile one can make us hold.
CONTROL_TAR_LIMIT = 16 << 20
CONTROL_LIMIT = 1 << 20

# deb-control(5) and Debian policy 5.6: what a binary package's fields may be.
PACKAGE_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]*\Z")
VERSION = re.compile(r"(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*\Z")
ARCHITECTURE = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
FIELD_NAME = re.compile(r"[!\"$-,.-9;-~][!-9;-~]*\Z")  # not starting with '#' or '-'
# Tabs and newlines are the only control characters a control file may hold.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_COMPRESSIONS = ("", ".gz", ".xz", ".zst")
# Fields apt parses as relations: one it cannot parse breaks the whole index for apt.
RELATION_FIELDS = (
    "Depends",
    "Pre-Depends",
    "Recommends",
    "Suggests",
    "Enhances",
    "Breaks",
    "Conflicts",
    "Replaces",
    "Provides",
)


class InvalidDeb(GfxpackError, ValueError):
    pass


@dataclass(frozen=True, slots=True)
class DebPackage:
    """What a repository needs of one .deb: its control fields (in their order) and the
    paths it installs, without the leading '/'."""

    fields: dict[str, str]
    paths: list[str]
    # With read_deb(..., digests=True): what each path holds, "sha256:<hex>" for a file
    # (a hard link: its target's), "symlink:<target>" for a symlink, else its tar type.
    digests: dict[str, str] | None = None

    @property
    def name(self) -> str:
        return self.fields["Package"]

    @property
    def version(self) -> str:
        return self.fields["Version"]


class _Member(io.RawIOBase):
    """At most ``size`` bytes of ``file`` from where it stands: one ar member."""

    def __init__(self, file: BinaryIO, size: int) -> None:
        self._file = file
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer, /) -> int:
        view = memoryview(buffer).cast("B")
        if self._left <= 0:
            return 0
        data = self._file.read(min(len(view), self._left))
        self._left -= len(data)
        view[: len(data)] = data
        return len(data)


def _members(file: BinaryIO, name: str, file_size: int) -> Iterator[tuple[str, int]]:
    """(member name, size) of each ar member, leaving the file at the member's data."""
    if file.read(8) != AR_MAGIC:
        raise InvalidDeb(f"{name}: not a Debian package (no ar magic)")
    while header := file.read(AR_HEADER):
        if len(header) < AR_HEADER or header[58:60] != b"`\n":
            raise InvalidDeb(f"{name}: truncated or corrupt ar member header")
        try:
            member = header[:16].decode("ascii").strip().rstrip("/")
            size_field = header[48:58].decode("ascii").strip()
        except UnicodeDecodeError:
            raise InvalidDeb(f"{name}: ar member header is not ASCII") from None
        if not size_field.isdigit() or not size_field.isascii():
            raise InvalidDeb(
                f"{name}: ar member {member!r}: size field {size_field!r} is not a number"
            )
        size = int(size_field)
        start = file.tell()
        if start + size > file_size:
            raise InvalidDeb(
                f"{name}: ar member {member!r} claims {size} bytes, past the end of the file"
            )
        yield member, size
        file.seek(start + size + size % 2)


def _decompressed(member: str, raw: BinaryIO) -> BinaryIO:
    """A stream of the member's uncompressed bytes (never all of them in memory)."""
    if member.endswith(".zst"):
        return cast(BinaryIO, zstandard.ZstdDecompressor().stream_reader(raw))
    if member.endswith(".xz"):
        return cast(BinaryIO, lzma.open(raw))
    if member.endswith(".gz"):
        return cast(BinaryIO, gzip.open(raw))
    return raw


def _member_kind(member: str) -> str | None:
    for kind in ("control.tar", "data.tar"):
        if member.startswith(kind) and member[len(kind) :] in _COMPRESSIONS:
            return kind
    return None


def read_deb(path: str, digests: bool = False) -> DebPackage:
    """The control fields and installed paths of the .deb at ``path``, validated; with
    ``digests``, also what each path holds (file contents are hashed as they stream by)."""
    control: str | None = None
    paths: list[str] = []
    contents: dict[str, str] | None = {} if digests else None
    seen: list[str] = []
    try:
        with open(path, "rb") as file:
            file_size = file.seek(0, io.SEEK_END)
            file.seek(0)
            for member, size in _members(file, path, file_size):
                if not seen:
                    if member != "debian-binary" or not file.read(min(size, 16)).startswith(b"2."):
                        raise InvalidDeb(f"{path}: the first ar member is not debian-binary 2.x")
                    seen.append(member)
                    continue
                kind = _member_kind(member)
                if kind is None:
                    if member.startswith(("control.tar", "data.tar")):
                        raise InvalidDeb(f"{path}: {member}: unsupported compression")
                    continue  # deb(5): other members are ignored
                if kind in seen:
                    raise InvalidDeb(f"{path}: two {kind} members")
                if kind == "data.tar" and "control.tar" not in seen:
                    raise InvalidDeb(f"{path}: data.tar before control.tar")
                seen.append(kind)
                if kind == "control.tar":
                    if size > CONTROL_TAR_LIMIT:
                        raise InvalidDeb(
                            f"{path}: {member} is {size} bytes, over the "
                            f"{CONTROL_TAR_LIMIT >> 20} MiB a control archive may have"
                        )
                    control = _control_file(path, member, io.BytesIO(file.read(size)))
                else:
                    paths = _data_paths(path, member, _Member(file, size), contents)
    except InvalidDeb:
        raise
    except (
        OSError,
        EOFError,
        tarfile.TarError,
        lzma.LZMAError,
        zstandard.ZstdError,
        zlib.error,
    ) as e:
        raise InvalidDeb(f"{path}: cannot read: {e}") from None
    if control is None:
        raise InvalidDeb(f"{path}: no control.tar member with a control file")
    if "data.tar" not in seen:
        raise InvalidDeb(f"{path}: no data.tar member")
    return DebPackage(parse_control(control, path), paths, contents)


def _control_file(path: str, member: str, raw: BinaryIO) -> str | None:
    with tarfile.open(fileobj=_decompressed(member, raw), mode="r|") as tar:
        for entry in tar:
            if entry.name.removeprefix("./") != "control":
                continue
            if not entry.isfile():
                raise InvalidDeb(f"{path}: control is not a regular file")
            if entry.size > CONTROL_LIMIT:
                raise InvalidDeb(f"{path}: control file of {entry.size} bytes (over 1 MiB)")
            stream = tar.extractfile(entry)
            assert stream is not None  # a regular file
            try:
                return stream.read().decode("utf-8")
            except UnicodeDecodeError as e:
                raise InvalidDeb(f"{path}: control file is not UTF-8 ({e.reason})") from None
    return None


# What a tar entry that is neither a file nor a link is, for DebPackage.digests.
_TAR_TYPES = {
    tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device",
    tarfile.FIFOTYPE: "fifo",
}


def _data_paths(
    path: str, member: str, raw: _Member, contents: dict[str, str] | None = None
) -> list[str]:
    paths = []
    stream = _decompressed(member, cast(BinaryIO, io.BufferedReader(raw, 1 << 20)))
    with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="strict") as tar:
        for entry in tar:
            if entry.isdir():
                continue
            name = entry.name.removeprefix("./")
            if _CONTROL_CHARACTERS.search(name) or "\n" in name or "\t" in name:
                raise InvalidDeb(f"{path}: data.tar: path {name!r} holds a control character")
            paths.append(name)
            if contents is not None:
                contents[name] = _content(path, tar, entry, contents)
    return paths


def _content(path: str, tar: tarfile.TarFile, entry: tarfile.TarInfo, seen: dict[str, str]) -> str:
    if entry.isreg():
        stream = tar.extractfile(entry)
        assert stream is not None  # a regular file
        digest = hashlib.sha256()
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
        return f"sha256:{digest.hexdigest()}"
    if entry.issym():
        if _CONTROL_CHARACTERS.search(entry.linkname) or set("\n\t") & set(entry.linkname):
            raise InvalidDeb(
                f"{path}: data.tar: symlink {entry.name!r} points at a name with a control "
                "character"
            )
        return f"symlink:{entry.linkname}"
    if entry.islnk():
        # tar(5): a hard link names an earlier member, whose contents it shares.
        target = entry.linkname.removeprefix("./")
        if target not in seen:
            raise InvalidDeb(
                f"{path}: data.tar: hard link {entry.name!r} to {entry.linkname!r}, "
                "which is not an earlier file of the archive"
            )
        return seen[target]
    return _TAR_TYPES.get(entry.type, f"tar type {entry.type!r}")


def parse_control(text: str, where: str) -> dict[str, str]:
    r"""The fields of one binary control paragraph, checked against Debian's grammar.

    Continuation lines are kept with their leading space, so each value can be
    written back as ``Field: value`` without changing the paragraph.

    >>> parse_control("Package: a\nVersion: 1.0-1\nArchitecture: all\n", "x")["Version"]
    '1.0-1'
    """
    if bad := _CONTROL_CHARACTERS.search(text):
        raise InvalidDeb(f"{where}: control file holds the control character {bad[0]!r}")
    fields: dict[str, str] = {}
    last: str | None = None
    ended = False
    for line in text.split("\n"):
        if not line.strip():
            ended = ended or bool(fields)
            last = None
            continue
        if ended:
            raise InvalidDeb(f"{where}: control file holds more than one paragraph")
        if line[0] in " \t":
            if last is None:
                raise InvalidDeb(f"{where}: control file starts with a continuation line")
            fields[last] += "\n" + line.rstrip()
            continue
        if line.startswith("#"):
            continue
        name, colon, value = line.partition(":")
        if not colon or not FIELD_NAME.match(name):
            raise InvalidDeb(f"{where}: control line {line[:60]!r} is not 'Field: value'")
        if name in fields:
            raise InvalidDeb(f"{where}: control field {name} given twice")
        fields[name] = value.strip()
        last = name
    if not fields:
        raise InvalidDeb(f"{where}: empty control file")
    for name, grammar, example in (
        ("Package", PACKAGE_NAME, "lowercase letters, digits, '+', '-', '.'"),
        ("Version", VERSION, "[epoch:]upstream[-revision], starting with a digit"),
        ("Architecture", ARCHITECTURE, "e.g. amd64 or all"),
    ):
        given = fields.get(name)
        if given is None:
            raise InvalidDeb(f"{where}: control file has no {name} field")
        if not grammar.match(given):
            raise InvalidDeb(f"{where}: {name} {given!r} is not valid ({example})")
    for name in RELATION_FIELDS:
        if name in fields:
            try:
                DEB.parse_field(fields[name])
            except InvalidRelation as e:
                raise InvalidDeb(f"{where}: {name}: {e}") from None
    return fields


def parse_stanzas(text: str) -> list[dict[str, str]]:
    r"""deb822 paragraphs: ``Field: value`` with continuation lines kept (leading space);
    lines starting with ``#`` are comments.

    >>> parse_stanzas("# system\nPackage: a\nDescription: x\n more\n\nPackage: b\n")
    [{'Package': 'a', 'Description': 'x\n more'}, {'Package': 'b'}]
    """
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last: str | None = None
    for line in text.split("\n"):
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
