"""RPM v4 binary packages, written natively.

An .rpm is a 96-byte lead, a signature header (digests and sizes of what
follows), the main header (metadata, dependencies, the file list) and the
compressed cpio payload. Headers are index entries (tag, type, offset, count)
over a data store, sealed by a region tag (rpm's doc/manual/format.md).

The payload is written first, to a spool, hashing every file and the
compressed stream as it goes; the headers that describe it follow.

The signature header holds header-only digests (SHA-256, and SHA-1 for rpm
before 4.14) and no MD5 over header and payload: that legacy digest would
cost a second pass over the compressed payload, and the payload's SHA-256 in
the main header, which the header digests and signatures cover, already
protects it (rpm >= 4.14 checks it; rpm >= 4.16 no longer adds legacy
header+payload signatures to such packages, nFPM writes no MD5 either).
"""

from __future__ import annotations

import hashlib
import posixpath
import shutil
import stat
import struct
from dataclasses import dataclass
from typing import Any

from gfxpack._io import HashingWriter, Writable, spool
from gfxpack.formats import rpm_policy
from gfxpack.formats.compress import compressing
from gfxpack.formats.info import PackageInfo
from gfxpack.formats.payload import (
    Entry,
    EntryKind,
    archive_size_hint,
    installed_size,
    write_cpio,
)

# Data types (rpm's rpmTagType).
INT16, INT32, INT64, STRING, BIN, STRING_ARRAY, I18NSTRING = 3, 4, 5, 6, 7, 8, 9
_ALIGN = {INT16: 2, INT32: 4, INT64: 8}
# Dependency sense flags.
LESS, GREATER, EQUAL = 0x02, 0x04, 0x08
RPMLIB = 1 << 24
_SENSE = {"<": LESS, "<=": LESS | EQUAL, "=": EQUAL, ">=": GREATER | EQUAL, ">": GREATER}
PAYLOAD_COMPRESSOR = {"zstd": "zstd", "xz": "xz", "gzip": "gzip", "none": "identity"}
_RPMLIB_PAYLOAD = {
    "zstd": ("rpmlib(PayloadIsZstd)", "5.4.18-1"),
    "xz": ("rpmlib(PayloadIsXz)", "5.2-1"),
}
SHA256_ALGO = 8
HEADER_MAGIC = b"\x8e\xad\xe8\x01\x00\x00\x00\x00"
LEAD_MAGIC = b"\xed\xab\xee\xdb"

# Tags used below (rpm's rpmtag.h).
SIG_REGION, HEADER_REGION, I18NTABLE = 62, 63, 100
SIG_SHA1, SIG_SHA256, SIG_SIZE, SIG_PAYLOADSIZE = 269, 273, 1000, 1007
# The 64-bit forms of the sizes, for a package past 4 GiB (rpm's "Large File Support").
SIG_LONGSIZE, SIG_LONGARCHIVESIZE, LONGSIZE = 270, 271, 5009
NAME, VERSION, RELEASE, SUMMARY, DESCRIPTION = 1000, 1001, 1002, 1004, 1005
BUILDTIME, BUILDHOST, SIZE, VENDOR, LICENSE, GROUP, URL, OS, ARCH = (
    1006,
    1007,
    1009,
    1011,
    1014,
    1016,
    1020,
    1021,
    1022,
)
PREIN, POSTIN, PREUN, POSTUN = 1023, 1024, 1025, 1026
FILESIZES, FILEMODES, FILERDEVS, FILEMTIMES, FILEDIGESTS, FILELINKTOS, FILEFLAGS = (
    1028,
    1030,
    1033,
    1034,
    1035,
    1036,
    1037,
)
FILEUSERNAME, FILEGROUPNAME, SOURCERPM, FILEVERIFYFLAGS = 1039, 1040, 1044, 1045
PROVIDENAME, REQUIREFLAGS, REQUIRENAME, REQUIREVERSION = 1047, 1048, 1049, 1050
CONFLICTFLAGS, CONFLICTNAME, CONFLICTVERSION = 1053, 1054, 1055
PREINPROG, POSTINPROG, PREUNPROG, POSTUNPROG = 1085, 1086, 1087, 1088
OBSOLETENAME, FILEDEVICES, FILEINODES, FILELANGS, PREFIXES = 1090, 1095, 1096, 1097, 1098
PROVIDEFLAGS, PROVIDEVERSION, OBSOLETEFLAGS, OBSOLETEVERSION = 1112, 1113, 1114, 1115
DIRINDEXES, BASENAMES, DIRNAMES = 1116, 1117, 1118
PAYLOADFORMAT, PAYLOADCOMPRESSOR, PAYLOADFLAGS = 1124, 1125, 1126
FILEDIGESTALGO, RECOMMENDNAME, RECOMMENDVERSION, RECOMMENDFLAGS = 5011, 5046, 5047, 5048
SUGGESTNAME, SUGGESTVERSION, SUGGESTFLAGS, ENCODING = 5049, 5050, 5051, 5062
PAYLOADDIGEST, PAYLOADDIGESTALGO = 5092, 5093
PACKAGER, CHANGELOGTIME, CHANGELOGNAME, CHANGELOGTEXT = 1015, 1080, 1081, 1082
# %transfiletriggerin, as rpmbuild 4.18 writes it: one script (its text and
# interpreter, its priority), and per path prefix its name, the script's index, an
# empty version and the sense flag saying "in" (RPMSENSE_TRIGGERIN).
TRANSFILETRIGGERSCRIPTS, TRANSFILETRIGGERSCRIPTPROG = 5076, 5077
TRANSFILETRIGGERNAME, TRANSFILETRIGGERINDEX = 5079, 5080
TRANSFILETRIGGERVERSION, TRANSFILETRIGGERFLAGS = 5081, 5082
TRANSFILETRIGGERPRIORITIES = 5085
SENSE_TRIGGERIN = 1 << 16
DEFAULT_FILE_TRIGGER_PRIORITY = 1_000_000  # rpmbuild's, without -P

_SCRIPTS = {
    "preinst": (PREIN, PREINPROG),
    "postinst": (POSTIN, POSTINPROG),
    "prerm": (PREUN, PREUNPROG),
    "postrm": (POSTUN, POSTUNPROG),
}
_ISA = {"x86_64": "x86-64", "aarch64": "aarch-64", "ppc64le": "ppc-64"}


def filename(info: PackageInfo) -> str:
    return f"{info.name}-{info.version}-{info.release}.{info.arch}.rpm"


@dataclass(frozen=True, slots=True)
class Dependency:
    name: str
    flags: int = 0
    version: str = ""


def parse_dependency(text: str) -> Dependency:
    """``name``, ``name >= 1.0-1`` or a rich ``(a or b)`` kept whole.

    >>> parse_dependency("amdrocm-runtime8.2 >= 8.2.0-1")
    Dependency(name='amdrocm-runtime8.2', flags=12, version='8.2.0-1')
    """
    text = text.strip()
    if text.startswith("("):
        return Dependency(text)
    name, *rest = text.split()
    if len(rest) == 2 and rest[0] in _SENSE:
        return Dependency(name, _SENSE[rest[0]], rest[1])
    return Dependency(name)


class HeaderBuilder:
    """Collects (tag, type, value) entries and lays out one header blob."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[int, Any]] = {}

    def add(self, tag: int, kind: int, value: Any) -> None:
        self._entries[tag] = (kind, value)

    def add_size(self, tags: tuple[int, int], size: int) -> None:
        """A size under its 32-bit tag, or past 4 GiB under its 64-bit one."""
        small, large = tags
        if size < 0xFFFFFFFF:
            self.add(small, INT32, size)
        else:
            self.add(large, INT64, size)

    def add_dependencies(self, tags: tuple[int, int, int], deps: list[Dependency]) -> None:
        if deps:
            name_tag, flags_tag, version_tag = tags
            self.add(name_tag, STRING_ARRAY, [d.name for d in deps])
            self.add(flags_tag, INT32, [d.flags for d in deps])
            self.add(version_tag, STRING_ARRAY, [d.version for d in deps])

    def build(self, region: int) -> bytes:
        tags = sorted(self._entries)
        count = len(tags) + 1  # plus the region tag
        index = []
        store = bytearray()
        for tag in tags:
            kind, value = self._entries[tag]
            encoded, items = _encode(kind, value)
            store += b"\0" * (-len(store) % _ALIGN.get(kind, 1))
            index.append(struct.pack(">iiii", tag, kind, len(store), items))
            store += encoded
        # The region trailer: an index entry whose offset points back over the index.
        trailer_offset = len(store)
        store += struct.pack(">iiii", region, BIN, -count * 16, 16)
        region_entry = struct.pack(">iiii", region, BIN, trailer_offset, 16)
        return (
            HEADER_MAGIC
            + struct.pack(">ii", count, len(store))
            + region_entry
            + b"".join(index)
            + bytes(store)
        )


def _encode(kind: int, value: Any) -> tuple[bytes, int]:
    if kind == STRING:
        return value.encode() + b"\0", 1
    if kind in (STRING_ARRAY, I18NSTRING):
        return b"".join(v.encode() + b"\0" for v in value), len(value)
    if kind == BIN:
        return bytes(value), len(value)
    values = value if isinstance(value, list) else [value]
    code = {INT16: "H", INT32: "I", INT64: "Q"}[kind]
    return struct.pack(f">{len(values)}{code}", *values), len(values)


def write(info: PackageInfo, out: Writable, scratch: str | None = None) -> None:
    info = rpm_policy.apply(info)
    entries = info.entries
    with spool(scratch) as payload:
        compressed = HashingWriter(payload, "sha256")
        with compressing(compressed, info.compression, archive_size_hint(entries)) as stream:
            raw = HashingWriter(stream)  # counting only: the uncompressed size
            digests = write_cpio(raw, entries)
        header = _main_header(info, entries, digests, compressed).build(HEADER_REGION)
        signature = HeaderBuilder()
        signature.add(SIG_SHA1, STRING, hashlib.sha1(header, usedforsecurity=False).hexdigest())
        signature.add(SIG_SHA256, STRING, hashlib.sha256(header).hexdigest())
        signature.add_size((SIG_SIZE, SIG_LONGSIZE), len(header) + compressed.size)
        signature.add_size((SIG_PAYLOADSIZE, SIG_LONGARCHIVESIZE), raw.size)
        sig = signature.build(SIG_REGION)
        out.write(_lead(info))
        out.write(sig + b"\0" * (-len(sig) % 8))
        out.write(header)
        payload.seek(0)
        shutil.copyfileobj(payload, out, 1 << 20)


def _lead(info: PackageInfo) -> bytes:
    name = f"{info.name}-{info.version}-{info.release}".encode()[:65]
    # major 3, minor 0, binary (0), arch 1, name, os 1 (Linux), signature type 5.
    return LEAD_MAGIC + struct.pack(">BBhh66shh16x", 3, 0, 0, 1, name, 1, 5)


def _main_header(
    info: PackageInfo,
    entries: tuple[Entry, ...],
    digests: dict[str, str],
    compressed: HashingWriter,
) -> HeaderBuilder:
    h = HeaderBuilder()
    h.add(I18NTABLE, STRING_ARRAY, ["C"])
    h.add(NAME, STRING, info.name)
    h.add(VERSION, STRING, info.version)
    h.add(RELEASE, STRING, info.release)
    h.add(SUMMARY, I18NSTRING, [info.summary or info.name])
    h.add(DESCRIPTION, I18NSTRING, [info.description or info.summary or info.name])
    h.add(BUILDTIME, INT32, info.mtime)
    h.add(BUILDHOST, STRING, "gfxpack")
    h.add_size((SIZE, LONGSIZE), installed_size(entries))
    h.add(LICENSE, STRING, info.license or "Unknown")
    h.add(GROUP, I18NSTRING, [info.group or "Unspecified"])
    h.add(OS, STRING, "linux")
    h.add(ARCH, STRING, info.arch)
    h.add(SOURCERPM, STRING, f"{info.name}-{info.version}-{info.release}.src.rpm")
    if info.vendor:
        h.add(VENDOR, STRING, info.vendor)
    if info.homepage:
        h.add(URL, STRING, info.homepage)
    if info.maintainer:
        h.add(PACKAGER, STRING, info.maintainer)
    changes = rpm_policy.changelog(info)
    h.add(CHANGELOGTIME, INT32, [when for when, _, _ in changes])
    h.add(CHANGELOGNAME, STRING_ARRAY, [author for _, author, _ in changes])
    h.add(CHANGELOGTEXT, STRING_ARRAY, [text for _, _, text in changes])
    for script, (tag, prog_tag) in _SCRIPTS.items():
        if info.scripts.get(script) == rpm_policy.LDCONFIG_ONLY:
            h.add(prog_tag, STRING_ARRAY, [rpm_policy.LDCONFIG])
        elif script in info.scripts:
            h.add(tag, STRING, info.scripts[script])
            h.add(prog_tag, STRING_ARRAY, ["/bin/sh"])
    _add_file_trigger(h, info)
    _add_relations(h, info)
    if entries:
        _add_files(h, entries, digests)
        h.add(PREFIXES, STRING_ARRAY, [info.prefix])
    h.add(PAYLOADFORMAT, STRING, "cpio")
    h.add(PAYLOADCOMPRESSOR, STRING, PAYLOAD_COMPRESSOR[info.compression.codec])
    h.add(PAYLOADFLAGS, STRING, str(info.compression.level))
    h.add(ENCODING, STRING, "utf-8")
    h.add(PAYLOADDIGEST, STRING_ARRAY, [compressed.hexdigest()])
    h.add(PAYLOADDIGESTALGO, INT32, SHA256_ALGO)
    return h


def _add_file_trigger(h: HeaderBuilder, info: PackageInfo) -> None:
    """The %transfiletriggerin scriptlet on ``info.triggers``, when there are both."""
    script = info.scripts.get("transfiletriggerin")
    if not info.triggers or script is None:
        return
    count = len(info.triggers)
    h.add(TRANSFILETRIGGERSCRIPTS, STRING_ARRAY, [script])
    h.add(TRANSFILETRIGGERSCRIPTPROG, STRING_ARRAY, ["/bin/sh"])
    h.add(TRANSFILETRIGGERPRIORITIES, INT32, [DEFAULT_FILE_TRIGGER_PRIORITY])
    h.add(TRANSFILETRIGGERNAME, STRING_ARRAY, list(info.triggers))
    h.add(TRANSFILETRIGGERINDEX, INT32, [0] * count)
    h.add(TRANSFILETRIGGERVERSION, STRING_ARRAY, [""] * count)
    h.add(TRANSFILETRIGGERFLAGS, INT32, [SENSE_TRIGGERIN] * count)


def _add_relations(h: HeaderBuilder, info: PackageInfo) -> None:
    evr = info.full_version
    provides = [Dependency(info.name, EQUAL, evr)]
    if info.arch in _ISA:
        provides.append(Dependency(f"{info.name}({_ISA[info.arch]})", EQUAL, evr))
    provides += [parse_dependency(p) for p in info.provides]
    requires = [parse_dependency(r) for r in info.depends]
    requires += [Dependency(name, flags) for name, flags in rpm_policy.script_requirements(info)]
    rpmlib = [
        ("rpmlib(CompressedFileNames)", "3.0.4-1"),
        ("rpmlib(FileDigests)", "4.6.0-1"),
        ("rpmlib(PayloadFilesHavePrefix)", "4.0-1"),
    ]
    if info.compression.codec in _RPMLIB_PAYLOAD:
        rpmlib.append(_RPMLIB_PAYLOAD[info.compression.codec])
    if any(r.name.startswith("(") for r in requires):
        rpmlib.append(("rpmlib(RichDependencies)", "4.12.0-1"))
    requires += [Dependency(name, RPMLIB | LESS | EQUAL, version) for name, version in rpmlib]
    h.add_dependencies((PROVIDENAME, PROVIDEFLAGS, PROVIDEVERSION), provides)
    h.add_dependencies((REQUIRENAME, REQUIREFLAGS, REQUIREVERSION), requires)
    for tags, texts in (
        ((CONFLICTNAME, CONFLICTFLAGS, CONFLICTVERSION), info.conflicts),
        ((OBSOLETENAME, OBSOLETEFLAGS, OBSOLETEVERSION), info.replaces),
        ((RECOMMENDNAME, RECOMMENDFLAGS, RECOMMENDVERSION), info.recommends),
        ((SUGGESTNAME, SUGGESTFLAGS, SUGGESTVERSION), info.suggests),
    ):
        h.add_dependencies(tags, [parse_dependency(t) for t in texts])


def _add_files(h: HeaderBuilder, entries: tuple[Entry, ...], digests: dict[str, str]) -> None:
    dirnames: dict[str, int] = {}
    indexes, basenames = [], []
    for entry in entries:
        parent, base = posixpath.split(entry.path)
        indexes.append(dirnames.setdefault(parent.rstrip("/") + "/", len(dirnames)))
        basenames.append(base)
    for entry in entries:
        if entry.size > 0xFFFFFFFF:
            raise OSError(f"{entry.path}: files over 4 GiB are not supported yet")
    kind_bits = {
        EntryKind.FILE: stat.S_IFREG,
        EntryKind.DIR: stat.S_IFDIR,
        EntryKind.SYMLINK: stat.S_IFLNK,
    }
    n = len(entries)
    h.add(
        FILESIZES,
        INT32,
        [
            e.size if e.is_file else len(e.link.encode()) if e.kind == EntryKind.SYMLINK else 4096
            for e in entries
        ],
    )
    h.add(
        FILEMODES,
        INT16,
        [kind_bits[e.kind] | (0o777 if e.kind == EntryKind.SYMLINK else e.mode) for e in entries],
    )
    h.add(FILERDEVS, INT16, [0] * n)
    h.add(FILEMTIMES, INT32, [e.mtime for e in entries])
    h.add(FILEDIGESTS, STRING_ARRAY, [digests[e.path] if e.is_file else "" for e in entries])
    h.add(
        FILELINKTOS,
        STRING_ARRAY,
        [e.target if e.kind == EntryKind.SYMLINK else "" for e in entries],
    )
    h.add(FILEFLAGS, INT32, [rpm_policy.file_flags(e) for e in entries])
    h.add(FILEUSERNAME, STRING_ARRAY, ["root"] * n)
    h.add(FILEGROUPNAME, STRING_ARRAY, ["root"] * n)
    h.add(FILEVERIFYFLAGS, INT32, [0xFFFFFFFF] * n)
    h.add(FILEDEVICES, INT32, [1] * n)
    h.add(FILEINODES, INT32, list(range(1, n + 1)))
    h.add(FILELANGS, STRING_ARRAY, [""] * n)
    h.add(DIRINDEXES, INT32, indexes)
    h.add(BASENAMES, STRING_ARRAY, basenames)
    h.add(DIRNAMES, STRING_ARRAY, list(dirnames))
    h.add(FILEDIGESTALGO, INT32, SHA256_ALGO)
