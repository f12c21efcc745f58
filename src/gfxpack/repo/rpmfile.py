"""Reading an .rpm for a repository: its identity from the headers, held to RPM's grammar,
then createrepo_c's view of it (rpm's doc/manual/format.md).

The lead and both headers are read with every count and offset checked against the
file, before createrepo_c (and so librpm) sees the file at all; the name, epoch,
version, release and arch that end up in the signed metadata are checked here.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import BinaryIO

import createrepo_c as cr

from gfxpack.errors import GfxpackError
from gfxpack.formats.rpm import HEADER_MAGIC, LEAD_MAGIC  # what the writer writes

LEAD = struct.Struct(">4sBBhh66shh16x")
HEADER_COUNTS = struct.Struct(">ii")
INDEX_ENTRY = struct.Struct(">iiii")
# rpm's own limits (header.c: HEADER_TAGS_MAX, HEADER_DATA_MAX).
MAX_TAGS = 0xFFFF
MAX_DATA = 256 << 20
STRING, INT32 = 6, 4
NAME, VERSION, RELEASE, EPOCH, ARCH = 1000, 1001, 1002, 1003, 1022
SOURCEPACKAGE = 1106

# What createrepo_c and dnf accept in the NEVRA of a published package: no whitespace,
# no path separators, no '-' inside version or release.
RPM_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9._+-]*\Z")
RPM_VERSION = re.compile(r"[A-Za-z0-9._+~^]+\Z")
RPM_ARCH = re.compile(r"[A-Za-z0-9_]+\Z")


class InvalidRpm(GfxpackError, ValueError):
    pass


@dataclass(frozen=True, slots=True)
class RpmIdentity:
    name: str
    epoch: int
    version: str
    release: str
    arch: str


def _header(
    file: BinaryIO, where: str, which: str
) -> tuple[list[tuple[int, int, int, int]], bytes]:
    """The index entries (tag, type, offset, count) and data store of one header."""
    head = file.read(len(HEADER_MAGIC) + HEADER_COUNTS.size)
    if len(head) < len(HEADER_MAGIC) + HEADER_COUNTS.size or not head.startswith(HEADER_MAGIC):
        raise InvalidRpm(f"{where}: no {which} header where one belongs")
    count, size = HEADER_COUNTS.unpack_from(head, len(HEADER_MAGIC))
    if not 0 < count <= MAX_TAGS or not 0 <= size <= MAX_DATA:
        raise InvalidRpm(f"{where}: {which} header claims {count} tags and {size} bytes")
    index = file.read(count * INDEX_ENTRY.size)
    store = file.read(size)
    if len(index) < count * INDEX_ENTRY.size or len(store) < size:
        raise InvalidRpm(f"{where}: truncated {which} header")
    return list(INDEX_ENTRY.iter_unpack(index)), store


def _string(store: bytes, entry: tuple[int, int, int, int], where: str) -> str:
    tag, kind, offset, _ = entry
    end = store.find(b"\0", offset) if 0 <= offset < len(store) else -1
    if kind != STRING or end < 0:
        raise InvalidRpm(f"{where}: header tag {tag} is not a string inside the header")
    try:
        return store[offset:end].decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRpm(f"{where}: header tag {tag} is not UTF-8") from None


def read_identity(file: BinaryIO, where: str) -> RpmIdentity:
    """Name, epoch, version, release and arch of a binary .rpm, validated."""
    lead = file.read(LEAD.size)
    if len(lead) < LEAD.size or not lead.startswith(LEAD_MAGIC):
        raise InvalidRpm(f"{where}: not an RPM package (no lead magic)")
    _, major, _, kind, _, _, _, signature_type = LEAD.unpack(lead)
    if major < 3 or signature_type != 5:
        raise InvalidRpm(f"{where}: RPM format {major} with signature type {signature_type}")
    if kind != 0:
        raise InvalidRpm(f"{where}: a source package, not a binary one")
    _, signature = _header(file, where, "signature")
    file.read(-len(signature) % 8)  # the signature header is padded to 8 bytes
    entries, store = _header(file, where, "main")
    tags = {entry[0]: entry for entry in entries}
    if SOURCEPACKAGE in tags:
        raise InvalidRpm(f"{where}: a source package, not a binary one")
    values = {}
    for tag, label in ((NAME, "name"), (VERSION, "version"), (RELEASE, "release"), (ARCH, "arch")):
        if tag not in tags:
            raise InvalidRpm(f"{where}: the header has no {label}")
        values[label] = _string(store, tags[tag], where)
    epoch = 0
    if EPOCH in tags:
        _, kind, offset, count = tags[EPOCH]
        if kind != INT32 or count != 1 or not 0 <= offset <= len(store) - 4:
            raise InvalidRpm(f"{where}: header epoch is not one number")
        (epoch,) = struct.unpack_from(">i", store, offset)
        if epoch < 0:
            raise InvalidRpm(f"{where}: negative epoch {epoch}")
    for label, grammar in (
        ("name", RPM_NAME),
        ("version", RPM_VERSION),
        ("release", RPM_VERSION),
        ("arch", RPM_ARCH),
    ):
        if not grammar.match(values[label]):
            raise InvalidRpm(f"{where}: {label} {values[label]!r} is not valid for RPM")
    return RpmIdentity(values["name"], epoch, values["version"], values["release"], values["arch"])


def read_rpm(path: str, location: str) -> cr.Package:
    """createrepo_c's package of the .rpm at ``path``, to be published at ``location``
    (relative to the repository), after its headers were validated."""
    try:
        with open(path, "rb") as file:
            read_identity(file, path)
        return cr.package_from_rpm(path, cr.SHA256, location)
    except OSError as e:
        raise InvalidRpm(f"{path}: cannot read: {e.strerror}") from None
    except cr.CreaterepoCError as e:
        raise InvalidRpm(f"{path}: not a readable RPM package: {e}") from None
