"""An apt repository (Debian's repository format) built from .deb files.

    pool/main/<file>.deb
    dists/<suite>/Release, InRelease, Release.gpg (signed with --sign-key)
    dists/<suite>/main/binary-<arch>/Packages, Packages.gz
    dists/<suite>/main/Contents-<arch>.gz
    dists/<suite>/main/debug/...: the same of debug-symbol packages (-dbgsym), once
        there are any; a sources entry of "main" never reads them
    dists/<suite>/**/by-hash/SHA256/<sha256>: every index again under its digest
        (Acquire-By-Hash), those of the last --keep-generations publishes kept

What each .deb says (its stanza and its paths) is read once, when it is added, and
kept in the repository's record (repo/state.py) with the pieces of the indexes it
makes: a publish writes Packages and Contents from those pieces (repo/pieces.py), so
adding a build reads only the build's files. Packages.xz is not written: apt reads
only the first of several xz streams, and compressing the whole index again on every
publish is the cost the pieces avoid.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

from gfxpack._io import file_digests
from gfxpack.formats import DEB
from gfxpack.formats.debug_symbols import AUTO_BUILT
from gfxpack.repo.debfile import InvalidDeb, parse_stanzas, read_deb
from gfxpack.repo.inputs import RepoError
from gfxpack.repo.names import COMPONENT, SUITE, check_suite
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.pieces import IndexWriter, Written, piece
from gfxpack.repo.signing import sign
from gfxpack.repo.state import PackageEntry, Piece, State
from gfxpack.repo.transaction import later_mtime, link_or_copy, place, place_bytes

# Where gfxpack kept the stanzas of pool files before pools had records.
_LEGACY_CACHE = ".gfxpack-apt-cache.json"
# The fields the repository writes into each stanza, after the control file's.
POOL_FIELDS = ("Filename", "Size", "MD5sum", "SHA256")
# Where each index is also published under its digest, beside it (apt's by-hash).
BY_HASH = "by-hash/SHA256"
# The digest a Release lists of each index: SHA256 alone (apt has not trusted MD5Sum
# alone for years, and hashing every index twice is a cost in the repository's size).
ALGORITHMS = ("sha256",)
TOP_FILES = ("Release", "InRelease", "Release.gpg")

# Where debug-symbol packages are published (dists/<suite>/main/debug/binary-<arch>),
# and the prefix of their index pieces' names.
DEBUG_COMPONENT = f"{COMPONENT}/debug"
_DEBUG = "Debug"

__all__ = [
    "COMPONENT",
    "DEBUG_COMPONENT",
    "SUITE",
    "AptIndexes",
    "RepoError",
    "check_suite",
    "compose",
]


# --- one package ------------------------------------------------------------------------


def read_package(path: Path, name: str, size: int, sha256: str) -> PackageEntry:
    """The entry of the .deb at ``path`` (published as ``name``): its Packages stanza
    and its paths."""
    try:
        package = read_deb(str(path))
    except InvalidDeb as e:
        raise RepoError(str(e)) from None
    stanza = {k: v for k, v in package.fields.items() if k not in POOL_FIELDS}
    stanza |= {
        "Filename": f"pool/{COMPONENT}/{name}",
        "Size": str(size),
        "MD5sum": file_digests(path, "md5")[1][0],
        "SHA256": sha256,
    }
    ident = f"{stanza['Package']} {stanza['Version']} {stanza['Architecture']}"
    entry = {"stanza": stanza, "paths": package.paths}
    return PackageEntry(name, DEB.name, size, sha256, ident, stanza["Architecture"], entry)


def is_debug(stanza: dict[str, str]) -> bool:
    """Whether a stanza is a debug-symbol package's (dh_strip's and gfxpack's mark,
    formats/debug_symbols.py): it is published in main/debug, not main."""
    name, value = AUTO_BUILT
    return stanza.get(name) == value


def pieces(entries: Sequence[PackageEntry]) -> dict[str, Piece]:
    """The pieces ``entries`` add to the indexes: ``Packages/<arch>`` (their stanzas)
    and ``Contents/<arch>`` (their paths) for each architecture they have; those of
    debug-symbol packages as ``DebugPackages/<arch>`` and ``DebugContents/<arch>``."""
    by_arch: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for package in entries:
        kind = _DEBUG if is_debug(package.entry["stanza"]) else ""
        by_arch[kind, package.arch].append(package.entry)
    made = {}
    for (kind, arch), members in sorted(by_arch.items()):
        members.sort(key=lambda e: (e["stanza"]["Package"], e["stanza"]["Version"]))
        # Each stanza ends with a blank line, so pieces concatenate into one Packages.
        text = "".join(_stanza_text(e["stanza"]) + "\n" for e in members)
        made[f"{kind}Packages/{arch}"] = piece(text.encode())
        contents = sorted(
            (path, f"{e['stanza'].get('Section', 'misc')}/{e['stanza']['Package']}")
            for e in members
            for path in e["paths"]
        )
        lines = "".join(f"{path:<60} {owner}\n" for path, owner in contents)
        made[f"{kind}Contents/{arch}"] = piece(lines.encode())
    return made


def _stanza_text(stanza: dict[str, str]) -> str:
    return "".join(f"{field}: {value}\n" for field, value in stanza.items())


# --- the indexes ------------------------------------------------------------------------


@dataclass
class AptIndexes:
    """A publish's indexes, written under temporary names in ``work`` and signed; then
    moved in by :meth:`commit`."""

    root: Path
    suite: str
    work: Path
    # (path under dists/<suite>, the file written)
    files: list[tuple[str, Written]]
    release: bytes
    signatures: dict[str, bytes] = field(default_factory=dict)

    @property
    def dist(self) -> Path:
        return self.root / "dists" / self.suite

    @property
    def paths(self) -> list[str]:
        """This generation's by-hash paths (under dists/<suite>)."""
        return sorted(_by_hash_path(name, w.digests.hexdigest()) for name, w in self.files)

    def on_disk(self) -> list[str]:
        """The by-hash paths the Release now in place names."""
        return released(self.dist)

    def commit(self) -> None:
        """Each index under its digest first (what apt fetches, by-hash), then under its
        name, then Release and its signatures."""
        dist = self.dist
        for name, written in self.files:
            target = dist / _by_hash_path(name, written.digests.hexdigest())
            # A by-hash name is its bytes: one already there stays.
            if not target.is_file():
                link_or_copy(written.path, target)
        for name, written in self.files:
            place(written.path, dist / name)
        # A web server's Last-Modified has whole seconds: a Release replaced within the
        # second of the last one must not look unmodified to a client that has it.
        stamp = later_mtime(dist / "InRelease", dist / "Release")
        for name in TOP_FILES:
            data = self.release if name == "Release" else self.signatures.get(name)
            if data is None:
                # A signature of an earlier Release would no longer match it.
                (dist / name).unlink(missing_ok=True)
                continue
            place_bytes(data, self.work / name, dist / name, stamp)

    def stale(self, kept: Sequence[tuple[int, list[str]]]) -> list[Path]:
        """The by-hash files no kept generation names."""
        from gfxpack.repo.generations import stale

        return stale(self.dist, _by_hash_files(self.dist), kept)

    def summary(self) -> dict[str, Any]:
        debug = any(name.startswith(f"{DEBUG_COMPONENT}/") for name, _ in self.files)
        return {"suite": self.suite, "signed": bool(self.signatures)} | (
            {"debug": DEBUG_COMPONENT} if debug else {}
        )


def compose(state: State, root: Path, options: PublishOptions, work: Path) -> AptIndexes:
    """Packages, Packages.gz and Contents-<arch>.gz of every live .deb in ``state``, and
    the Release naming them (signed with ``options.sign_key``), under ``work``."""
    parts = state.parts(DEB.name)
    found = {part.split("/", 1)[1] for part in parts}
    arches = sorted(a for a in found if a != "all")
    # Packages of arch all are in every binary-<arch> index (what apt before 1.2 reads)
    # and, when there are others, in binary-all too: the Release lists "all" then.
    if "all" in found:
        arches.append("all")
    # Debug-symbol packages go to main/debug, which a sources entry of "main" never
    # reads (Debian's debug archive is apart the same way); it exists only when some.
    components = [(COMPONENT, "")]
    if any(part.startswith(_DEBUG) for part in parts):
        components.append((DEBUG_COMPONENT, _DEBUG))
    segments = state.segments(DEB.name)
    files: list[tuple[str, Written]] = []
    for component, kind in components:
        for arch in arches:
            files += _component_indexes(state, segments, work, component, kind, arch)
    fields = {
        "Origin": options.names.origin,
        "Label": options.names.label,
        "Suite": options.suite,
        "Codename": options.names.codename or options.suite,
        "Date": formatdate(options.epoch, usegmt=True),
    }
    if options.names.valid_for_days is not None:
        until = options.epoch + options.names.valid_for_days * 86400
        fields["Valid-Until"] = formatdate(until, usegmt=True)
    release = _release(fields, arches, [c for c, _ in components], files).encode()
    signatures = {}
    if options.sign_key:
        key, home = options.sign_key, options.gnupghome
        signatures = {
            "InRelease": sign(release, key, home, "Release", clear=True),
            "Release.gpg": sign(release, key, home, "Release", clear=False),
        }
    return AptIndexes(root, options.suite, work, files, release, signatures)


def _component_indexes(
    state: State, segments: list[int], work: Path, component: str, kind: str, arch: str
) -> list[tuple[str, Written]]:
    """Packages, Packages.gz and Contents-<arch>.gz of one component and architecture
    (``kind``: the prefix of its pieces' names), written under ``work``."""
    wanted = [arch] if arch == "all" else [arch, "all"]
    base = f"{component}/binary-{arch}/Packages"
    number = f"{kind}{arch}"
    plain = IndexWriter(work / f"Packages-{number}", ALGORITHMS, packed=False)
    packed = IndexWriter(work / f"Packages-{number}.gz", ALGORITHMS, packed=True)
    contents = IndexWriter(work / f"Contents-{number}.gz", ALGORITHMS, packed=True)
    for segment in segments:
        for part in state.pieces(segment, [f"{kind}Packages/{a}" for a in wanted]):
            plain.add(part)
            packed.add(part)
        for part in state.pieces(segment, [f"{kind}Contents/{a}" for a in wanted]):
            contents.add(part)
    return [
        (base, plain.close()),
        (base + ".gz", packed.close()),
        (f"{component}/Contents-{arch}.gz", contents.close()),
    ]


def _release(
    fields: dict[str, str],
    arches: list[str],
    components: list[str],
    files: list[tuple[str, Written]],
) -> str:
    """The Release of ``files``: ``fields`` (Origin to Valid-Until) first."""
    lines = [f"{name}: {value}" for name, value in fields.items()]
    lines += [
        f"Architectures: {' '.join(arches)}",
        f"Components: {' '.join(components)}",
        "Description: ROCm packages published by gfxpack",
        # Every index is also at by-hash/SHA256/<digest> beside it (apt >= 1.1 fetches
        # it there, so an update never mixes two publishes' files).
        "Acquire-By-Hash: yes",
    ]
    if len(arches) > 1 and "all" in arches:
        # binary-<arch> has the arch-all packages too (apt need not fetch binary-all).
        lines.append("No-Support-for-Architecture-all: Packages")
    lines.append("SHA256:")
    for name, written in files:
        digests = written.digests
        lines.append(f" {digests.hexdigest()} {digests.size:>16} {name}")
    return "\n".join(lines) + "\n"


def _by_hash_path(name: str, sha256: str) -> str:
    """Where apt fetches index ``name`` (under dists/<suite>) with that digest."""
    directory = name.rpartition("/")[0]
    return f"{directory}/{BY_HASH}/{sha256}" if directory else f"{BY_HASH}/{sha256}"


def _by_hash_files(dist: Path) -> list[Path]:
    """Every file in a by-hash directory under ``dist`` (symlinks never followed)."""
    found = []
    for directory, _, names in os.walk(dist):
        if Path(directory).relative_to(dist).as_posix().endswith(BY_HASH):
            found += [Path(directory) / name for name in names]
    return found


def released(dist: Path) -> list[str]:
    """The by-hash paths of the indexes the Release in ``dist`` names (none: no
    Release, or one without them)."""
    try:
        text = (dist / "Release").read_text(errors="replace")
    except FileNotFoundError:
        return []
    stanzas = parse_stanzas(text)
    paths = []
    for line in (stanzas[0].get("SHA256", "") if stanzas else "").splitlines():
        words = line.split()
        if len(words) == 3 and re.fullmatch(r"[0-9a-f]{64}", words[0]):
            paths.append(_by_hash_path(words[2], words[0]))
    return paths


def recover(root: Path) -> None:
    """What an older gfxpack left in the repository at ``root`` that is no longer used."""
    (root / _LEGACY_CACHE).unlink(missing_ok=True)
