"""An rpm-md repository (what dnf, yum and zypper read).

    Packages/<file>.rpm
    repodata/repomd.xml, repomd.xml.asc (signed with --sign-key) and repomd.xml.key
             (the signing key and any --extra-key, armored),
             <sha256>-primary.xml.gz, -filelists.xml.gz, -other.xml.gz
    debug/repodata/...  the -debuginfo repository (formats/debug_symbols.py), once
             there are debug-symbol packages: its own repomd.xml, signed alike,
             locating its packages in the one pool (../Packages/<file>.rpm)

Each .rpm is read once, by createrepo_c, when it is added: its primary, filelists and
other XML snippets are kept in the repository's record (repo/state.py) as pieces, so a
publish writes each XML file from the pieces of every run (repo/pieces.py) between a
header that counts the packages and a footer, each its own gzip member. The files go
into repodata/ under their digest names (new names: nothing a client may be reading is
replaced), then the key, the signature and repomd.xml last; the files of generations
older than the last --keep-generations go after (as ``createrepo_c --retain-old-md``):
a client that read an earlier repomd.xml still finds every file it names. zypper and
dnf look for ``repomd.xml.key`` when a repomd.xml is signed by a key they were not
given (zypper offers to import it; ``--gpg-auto-import-keys`` accepts it).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import createrepo_c as cr

from gfxpack.formats import RPM
from gfxpack.formats.debug_symbols import SUFFIXES
from gfxpack.repo.inputs import RepoError
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.pieces import IndexWriter, Written, piece
from gfxpack.repo.rpmfile import InvalidRpm, read_rpm
from gfxpack.repo.signing import sign
from gfxpack.repo.state import PackageEntry, Piece, State
from gfxpack.repo.transaction import later_mtime, place, place_bytes
from gfxpack.repo.trust import RPM_MD_KEY, export_armored_key

KINDS = ("primary", "filelists", "other")
REPOMD = "repomd.xml"
SIGNATURE = "repomd.xml.asc"
KEY = Path(RPM_MD_KEY).name
TOP_FILES = (KEY, SIGNATURE, REPOMD)
# Each XML file's text around its packages, as createrepo_c writes it.
_XMLNS = 'xmlns="http://linux.duke.edu/metadata'
_HEADERS = {
    "primary": f'<metadata {_XMLNS}/common" xmlns:rpm="http://linux.duke.edu/metadata/rpm"',
    "filelists": f'<filelists {_XMLNS}/filelists"',
    "other": f'<otherdata {_XMLNS}/other"',
}
_FOOTERS = {"primary": "</metadata>", "filelists": "</filelists>", "other": "</otherdata>"}


# The debuginfo repository: <rpm>/debug/repodata, its packages in the one pool.
DEBUG_DIR = "debug"
_DEBUG_DIR_PREFIX = f"{DEBUG_DIR}/"
_DEBUG_PARTS = "debug/"  # the prefix of its index pieces' names
_NAME = re.compile(r"<name>([^<]*)</name>")
_PACKAGE = b'<package type="rpm"'


def _header(kind: str, count: int) -> bytes:
    element = _HEADERS[kind]
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{element} packages="{count}">\n'.encode()


# --- one package ------------------------------------------------------------------------


def read_package(
    path: Path, name: str, size: int, sha256: str, epoch: int | None = None
) -> PackageEntry:
    """The entry of the .rpm at ``path`` (published as ``name``): its NEVRA and its
    primary, filelists and other snippets, as createrepo_c writes them. primary's
    ``<time file>`` is the file's mtime, clamped to ``epoch`` when given (the
    reproducible-builds rule for SOURCE_DATE_EPOCH): the same packages built twice,
    at two times, then publish the same indexes."""
    try:
        package = read_rpm(str(path), f"Packages/{name}")
    except InvalidRpm as e:
        raise RepoError(str(e)) from None
    if epoch is not None and package.time_file > epoch:
        package.time_file = epoch
    entry = {
        "primary": cr.xml_dump_primary(package),
        "filelists": cr.xml_dump_filelists(package),
        "other": cr.xml_dump_other(package),
    }
    nevra = str(package.nevra())
    return PackageEntry(name, RPM.name, size, sha256, nevra, str(package.arch), entry)


def is_debug(entry: PackageEntry) -> bool:
    """Whether the package is a debug-symbol package (Fedora's ``-debuginfo`` name,
    formats/debug_symbols.py): it is published in the debuginfo repository."""
    found = _NAME.search(str(entry.entry["primary"]))
    return found is not None and found[1].endswith(SUFFIXES[RPM.name])


def pieces(entries: Sequence[PackageEntry]) -> dict[str, Piece]:
    """The pieces ``entries`` add to primary, filelists and other, by file name; those
    of debug-symbol packages as ``debug/primary`` (...), located from the debuginfo
    repository at ``debug/`` (``../Packages/<file>``: one pool serves both)."""
    ordered = sorted(entries, key=lambda e: e.name)
    main = [e for e in ordered if not is_debug(e)]
    made = {kind: piece("".join(str(e.entry[kind]) for e in main).encode()) for kind in KINDS}
    debug = [e for e in ordered if is_debug(e)]
    if debug:
        for kind in KINDS:
            text = "".join(_from_debug_repository(str(e.entry[kind]), e.name) for e in debug)
            made[f"{_DEBUG_PARTS}{kind}"] = piece(text.encode())
    return made


def _from_debug_repository(snippet: str, name: str) -> str:
    """A primary snippet's location as seen from the debuginfo repository."""
    here = f'<location href="Packages/{name}"/>'
    return snippet.replace(here, f'<location href="../Packages/{name}"/>', 1)


# --- the indexes ------------------------------------------------------------------------


@dataclass
class RpmIndexes:
    """A publish's repodata, written under temporary names in ``work`` and signed; then
    moved in by :meth:`commit`."""

    root: Path
    work: Path
    # (the digest-named file in repodata/, the file written)
    files: list[tuple[str, Written]]
    repomd: bytes
    signature: bytes | None
    key: bytes | None

    @property
    def paths(self) -> list[str]:
        """This generation's repodata/ file names."""
        return sorted(name for name, _ in self.files)

    def on_disk(self) -> list[str]:
        """The repodata/ files the repomd.xml now in place names."""
        return named(self.root / "repodata")

    def commit(self) -> None:
        """The digest-named files first, then the key, the signature and repomd.xml."""
        repodata = self.root / "repodata"
        for name, written in self.files:
            if not (repodata / name).is_file():
                place(written.path, repodata / name)
        stamp = later_mtime(repodata / REPOMD)
        for name, data in ((KEY, self.key), (SIGNATURE, self.signature), (REPOMD, self.repomd)):
            if data is None:
                # A signature (or its key) of an earlier repomd.xml would not match it.
                (repodata / name).unlink(missing_ok=True)
                continue
            place_bytes(data, self.work / f"rpm-{name}", repodata / name, stamp)

    def stale(self, kept: Sequence[tuple[int, list[str]]]) -> list[Path]:
        """The repodata/ files no kept generation names."""
        from gfxpack.repo.generations import stale

        repodata = self.root / "repodata"
        candidates = [
            p
            for p in (repodata.iterdir() if repodata.is_dir() else ())
            if p.name not in TOP_FILES and p.is_file() and not p.is_symlink()
        ]
        return stale(repodata, candidates, kept)

    def summary(self) -> dict[str, Any]:
        return {"signed": self.signature is not None}


@dataclass
class WithDebugRepository:
    """The repository's indexes and those of its debuginfo repository at ``debug/``,
    published as one: their files' names are those of ``main`` and ``debug/`` + those
    of ``debug``."""

    main: RpmIndexes
    debug: RpmIndexes

    @property
    def paths(self) -> list[str]:
        return sorted([*self.main.paths, *(_DEBUG_DIR_PREFIX + p for p in self.debug.paths)])

    def on_disk(self) -> list[str]:
        return [*self.main.on_disk(), *(_DEBUG_DIR_PREFIX + p for p in self.debug.on_disk())]

    def commit(self) -> None:
        self.debug.commit()
        self.main.commit()

    def stale(self, kept: Sequence[tuple[int, list[str]]]) -> list[Path]:
        start = len(_DEBUG_DIR_PREFIX)
        debug_kept = [
            (number, [p[start:] for p in paths if p.startswith(_DEBUG_DIR_PREFIX)])
            for number, paths in kept
        ]
        return [*self.main.stale(kept), *self.debug.stale(debug_kept)]

    def summary(self) -> dict[str, Any]:
        return {**self.main.summary(), "debug": DEBUG_DIR}


def compose(
    state: State, root: Path, options: PublishOptions, work: Path
) -> RpmIndexes | WithDebugRepository:
    """primary, filelists and other of every live .rpm in ``state`` and their repomd.xml
    (signed with ``options.sign_key``), under ``work``; those of the debug-symbol
    packages in a repository of their own at ``debug/`` (Fedora's ``-debuginfo``
    repositories: a .repo of the repository never installs them), once there are any."""
    segments = state.segments(RPM.name)
    debug_count = sum(
        part.plain.count(_PACKAGE)
        for segment in segments
        for part in state.pieces(segment, [f"{_DEBUG_PARTS}primary"])
    )
    main = _compose(state, root, options, work, "", state.live_count(RPM.name) - debug_count)
    if not debug_count and not (root / DEBUG_DIR / "repodata" / REPOMD).is_file():
        return main
    (work / DEBUG_DIR).mkdir()
    debug_root, debug_work = root / DEBUG_DIR, work / DEBUG_DIR
    debug = _compose(state, debug_root, options, debug_work, _DEBUG_PARTS, debug_count)
    return WithDebugRepository(main, debug)


def _compose(
    state: State, root: Path, options: PublishOptions, work: Path, parts: str, count: int
) -> RpmIndexes:
    """The repodata of the ``count`` packages whose pieces are named ``parts`` + kind."""
    segments = state.segments(RPM.name)
    repomd = cr.Repomd()
    repomd.set_revision(str(options.epoch))
    files: list[tuple[str, Written]] = []
    for kind in KINDS:
        writer = IndexWriter(work / f"{kind}.xml.gz", ("sha256",), packed=True)
        writer.add_text(_header(kind, count))
        for segment in segments:
            for part in state.pieces(segment, [parts + kind]):
                writer.add(part)
        writer.add_text(_FOOTERS[kind].encode())
        written = writer.close()
        assert written.plain is not None
        name = f"{written.digests.hexdigest()}-{kind}.xml.gz"
        record = cr.RepomdRecord(kind, None)
        record.location_href = f"repodata/{name}"
        record.checksum = written.digests.hexdigest()
        record.checksum_type = "sha256"
        record.checksum_open = written.plain.hexdigest()
        record.checksum_open_type = "sha256"
        record.size = written.digests.size
        record.size_open = written.plain.size
        record.timestamp = options.epoch
        repomd.set_record(record)
        files.append((name, written))
    data = str(repomd.xml_dump()).encode("utf-8")
    signature = key = None
    if options.sign_key:
        signature = sign(data, options.sign_key, options.gnupghome, REPOMD, clear=False)
        key = export_armored_key(options.sign_key, options.gnupghome, options.extra_keys or ())
    return RpmIndexes(root, work, files, data, signature, key)


def named(repodata: Path) -> list[str]:
    """The repodata/ files the repomd.xml there names (none: there is none)."""
    path = repodata / REPOMD
    if not path.is_file():
        return []
    try:
        repomd = cr.Repomd(str(path))
    except (cr.CreaterepoCError, OSError) as e:
        raise RepoError(f"{path}: not a repomd.xml ({e}); restore it from a backup") from None
    return [
        Path(r.location_href).name
        for r in repomd.records
        if Path(r.location_href).parent.as_posix() == "repodata"
    ]


def recover(root: Path, note: Callable[[str], None]) -> None:
    """Undo what an older gfxpack's interrupted run left in the repository at ``root``:
    repodata it moved aside (it swapped the directory whole) is put back (or, when new
    repodata made it in, removed), and the repodata it was making is removed."""
    retired = root / ".repodata-old"
    if retired.is_dir():
        if (root / "repodata").is_dir():
            shutil.rmtree(retired)
        else:
            os.replace(retired, root / "repodata")
            note(f"{root / 'repodata'}: put back from an interrupted run")
    for staging in root.glob(".repodata-*") if root.is_dir() else ():
        shutil.rmtree(staging)
