"""Reading an .rpm for a repository: its identity from the headers, held to RPM's grammar,
then createrepo_c's view of it (rpm's doc/manual/format.md).

The lead and both headers are read with every count and offset checked against the
file, before createrepo_c (and so librpm) sees the file at all; the name, epoch,
version, release and arch that end up in the signed metadata are checked here.
"""

from __future__ import annotations

import re
import stat
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
INT16, STRING_ARRAY = 3, 8
OLDFILENAMES, FILEMODES, FILEDIGESTS, FILELINKTOS = 1027, 1030, 1035, 1036
DIRINDEXES, BASENAMES, DIRNAMES, FILEDIGESTALGO = 1116, 1117, 1118, 5011
# rpm's hash numbers (rpmpgp.h) for FILEDIGESTALGO; without the tag, digests are MD5.
DIGEST_ALGORITHMS = {1: "md5", 2: "sha1", 8: "sha256", 9: "sha384", 10: "sha512", 11: "sha224"}
_FILE_KINDS = {
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFIFO: "fifo",
    stat.S_IFSOCK: "socket",
}

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


def _main_header(file: BinaryIO, where: str) -> tuple[dict[int, tuple[int, int, int, int]], bytes]:
    """The main header's entries by tag, and its data store, of a binary .rpm."""
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
    return tags, store


def read_identity(file: BinaryIO, where: str) -> RpmIdentity:
    """Name, epoch, version, release and arch of a binary .rpm, validated."""
    tags, store = _main_header(file, where)
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


def read_files(path: str) -> dict[str, str]:
    """What each path the header of the .rpm at ``path`` lists holds, directories left
    out: "<algorithm>:<hex>" (the header's digest) for a file, "symlink:<target>" for a
    symlink, else its kind. The payload is not read: the header is what rpm verifies."""
    try:
        with open(path, "rb") as file:
            tags, store = _main_header(file, path)
    except OSError as e:
        raise InvalidRpm(f"{path}: cannot read: {e.strerror}") from None
    header = _Arrays(tags, store, path)
    if BASENAMES in tags:
        directories, indexes = header.strings(DIRNAMES), header.numbers(DIRINDEXES, INT32)
        bases = header.strings(BASENAMES)
        if len(indexes) != len(bases) or not all(0 <= i < len(directories) for i in indexes):
            raise InvalidRpm(f"{path}: the header's directory indexes do not match its names")
        names = [directories[i] + base for i, base in zip(indexes, bases, strict=True)]
    else:  # rpm before 4.0 lists whole names; a package of no files has neither tag
        names = header.strings(OLDFILENAMES) if OLDFILENAMES in tags else []
    if not names:
        return {}
    modes, digests = header.numbers(FILEMODES, INT16), header.strings(FILEDIGESTS)
    links = header.strings(FILELINKTOS) if FILELINKTOS in tags else [""] * len(names)
    if not len(modes) == len(digests) == len(links) == len(names):
        raise InvalidRpm(f"{path}: the header's file lists differ in length")
    algorithm = "md5"
    if FILEDIGESTALGO in tags:
        numbers = header.numbers(FILEDIGESTALGO, INT32)
        if len(numbers) != 1 or numbers[0] not in DIGEST_ALGORITHMS:
            raise InvalidRpm(f"{path}: file digest algorithm {numbers} is not one rpm knows")
        algorithm = DIGEST_ALGORITHMS[numbers[0]]
    contents = {}
    for name, mode, digest, link in zip(names, modes, digests, links, strict=True):
        if not name.startswith("/") or _CONTROL_CHARACTERS.search(name):
            raise InvalidRpm(f"{path}: the header lists the file {name!r}, not a clean path")
        if _CONTROL_CHARACTERS.search(link):
            raise InvalidRpm(f"{path}: symlink {name!r} points at a name with a control character")
        kind = stat.S_IFMT(mode)
        if kind == stat.S_IFDIR:
            continue
        if kind == stat.S_IFREG:
            contents[name] = f"{algorithm}:{digest}"
        elif kind == stat.S_IFLNK:
            contents[name] = f"symlink:{link}"
        else:
            contents[name] = _FILE_KINDS.get(kind, f"mode {mode:o}")
    return contents


_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
# What a hostile header can make us hold: no real package lists a million files.
MAX_FILES = 1 << 20


@dataclass(frozen=True, slots=True)
class _Arrays:
    """The array tags of one header, every offset and count checked against its store."""

    tags: dict[int, tuple[int, int, int, int]]
    store: bytes
    where: str

    def _entry(self, tag: int, kinds: tuple[int, ...]) -> tuple[int, int]:
        if tag not in self.tags:
            raise InvalidRpm(f"{self.where}: the header has no tag {tag}")
        _, kind, offset, count = self.tags[tag]
        if kind not in kinds:
            raise InvalidRpm(f"{self.where}: header tag {tag} has type {kind}, not {kinds[0]}")
        if not 0 <= offset <= len(self.store) or not 0 <= count <= MAX_FILES:
            raise InvalidRpm(f"{self.where}: header tag {tag} claims {count} values at {offset}")
        return offset, count

    def numbers(self, tag: int, kind: int) -> list[int]:
        offset, count = self._entry(tag, (kind,))
        values = struct.Struct(f">{count}{'H' if kind == INT16 else 'i'}")
        if offset + values.size > len(self.store):
            raise InvalidRpm(f"{self.where}: header tag {tag} runs past the end of the header")
        return list(values.unpack_from(self.store, offset))

    def strings(self, tag: int) -> list[str]:
        offset, count = self._entry(tag, (STRING_ARRAY, STRING))
        values = []
        for _ in range(count):
            end = self.store.find(b"\0", offset)
            if end < 0:
                raise InvalidRpm(f"{self.where}: header tag {tag} runs past the end of the header")
            try:
                values.append(self.store[offset:end].decode("utf-8"))
            except UnicodeDecodeError:
                raise InvalidRpm(f"{self.where}: header tag {tag} is not UTF-8") from None
            offset = end + 1
        return values
