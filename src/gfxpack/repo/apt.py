"""An apt repository (Debian's repository format) built from .deb files.

    pool/main/<file>.deb
    dists/<suite>/Release, InRelease, Release.gpg (signed with --sign-key)
    dists/<suite>/main/binary-<arch>/Packages, Packages.gz, Packages.xz
    dists/<suite>/main/Contents-<arch>.gz
    dists/<suite>/**/by-hash/SHA256/<sha256>: every index again under its digest
        (Acquire-By-Hash), those of the last --keep-generations publishes kept

Publishing is incremental: packages already in the pool stay, new ones are
added, and every index is rewritten over the whole pool. What each .deb says
(its stanza and its paths) is kept in the pool's record with its digests, so
a second build added to a large repository reads only the new files (and any
published file whose inode stamp changed, to check it still has its bytes).
:func:`prepare` reads, checks and signs everything into an :class:`AptUpdate`,
which then writes.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

from gfxpack._io import file_digests
from gfxpack.formats import DEB
from gfxpack.repo import generations
from gfxpack.repo.debfile import InvalidDeb, parse_stanzas, read_deb
from gfxpack.repo.entries import retained
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.names import CODENAME, DEFAULT, RELEASE_FIELD, check_lifetimes, check_name
from gfxpack.repo.signing import sign
from gfxpack.repo.transaction import Transaction, check_published, read_record, stamp

COMPONENT = "main"


def pool_of(root: Path) -> Path:
    """Where the apt repository at ``root`` keeps its package files."""
    return root / "pool" / COMPONENT


# Where gfxpack kept the stanzas of pool files before pools had records.
_LEGACY_CACHE = ".gfxpack-apt-cache.json"
# The fields the repository writes into each stanza, after the control file's.
POOL_FIELDS = ("Filename", "Size", "MD5sum", "SHA256")
# dists/<suite> is one directory: a plain name.
SUITE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
# Where each index is also published under its digest, beside it (apt's by-hash).
BY_HASH = "by-hash/SHA256"

__all__ = ["COMPONENT", "SUITE", "AptUpdate", "RepoError", "check_suite", "prepare"]


def check_suite(suite: str) -> None:
    if not SUITE.match(suite):
        raise RepoError(
            f"--suite {suite!r}: expected a plain name such as stable or rocm-8.2 "
            "(letters, digits and ._+-, no '/')"
        )


@dataclass
class AptUpdate:
    """What a run writes to an apt repository: computed, checked and signed beforehand."""

    root: Path
    suite: str
    added: list[InputFile]
    record: dict[str, dict[str, Any]]
    indexes: list[tuple[str, bytes]]
    release: bytes
    signatures: dict[str, bytes] = field(default_factory=dict)
    # The by-hash paths (under dists/<suite>) of each retained generation, oldest first.
    generations: list[list[str]] = field(default_factory=list)

    @property
    def pool(self) -> Path:
        return pool_of(self.root)

    def add_files(self, tx: Transaction) -> None:
        """Copy the new files into the pool."""
        for deb in self.added:
            tx.add_to_pool(deb, self.pool)
            self.record[deb.name]["stamp"] = stamp(self.pool / deb.name)

    def commit_record(self, tx: Transaction) -> None:
        """Record the pool (after :meth:`add_files`): its files are published."""
        tx.record(self.pool, self.record)

    def commit_indexes(self, tx: Transaction) -> None:
        """Write the indexes (after :meth:`commit_record`): each under its digest first
        (what apt fetches, by-hash), then under its name, then Release and its
        signatures; the indexes of generations no longer kept go last."""
        dist = self.root / "dists" / self.suite
        for name, data in self.indexes:
            path = dist / by_hash_path(name, data)
            # A by-hash name is its bytes: one already there (written by a rename) stays.
            if not path.is_file():
                tx.write(path, data)
        for name, data in self.indexes:
            tx.write(dist / name, data)
        tx.write(dist / "Release", self.release)
        for name in ("InRelease", "Release.gpg"):
            if name in self.signatures:
                tx.write(dist / name, self.signatures[name])
            else:
                # A signature of an earlier Release would no longer match it.
                (dist / name).unlink(missing_ok=True)
        tx.write(dist / generations.RECORD, generations.encode(self.generations))
        for path in generations.stale(dist, _by_hash_files(dist), self.generations):
            path.unlink(missing_ok=True)

    def discard(self) -> None:
        """Nothing is prepared on disk: the indexes are held in memory."""

    def summary(self) -> dict[str, Any]:
        return {
            "format": DEB.name,
            "added": [f.name for f in self.added],
            "packages": len(self.record),
            "suite": self.suite,
            "signed": bool(self.signatures),
        }


def recover(root: Path) -> None:
    """What an older gfxpack left in the repository at ``root`` that is no longer used."""
    (root / _LEGACY_CACHE).unlink(missing_ok=True)


def by_hash_path(name: str, data: bytes) -> str:
    """Where apt fetches index ``name`` (under dists/<suite>) with the bytes ``data``."""
    directory = name.rpartition("/")[0]
    sha256 = hashlib.sha256(data).hexdigest()
    return f"{directory}/{BY_HASH}/{sha256}" if directory else f"{BY_HASH}/{sha256}"


def _by_hash_files(dist: Path) -> list[Path]:
    """Every file in a by-hash directory under ``dist`` (symlinks never followed)."""
    found = []
    for directory, _, files in os.walk(dist):
        if Path(directory).relative_to(dist).as_posix().endswith(BY_HASH):
            found += [Path(directory) / name for name in files]
    return found


def _released(dist: Path) -> list[str]:
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
            directory = words[2].rpartition("/")[0]
            prefix = f"{directory}/" if directory else ""
            paths.append(f"{prefix}{BY_HASH}/{words[0]}")
    return paths


def _md5(path: Path) -> str:
    return file_digests(path, "md5")[1][0]


def _entry(path: Path, size: int, sha256: str) -> dict[str, Any]:
    """The record of one .deb: its digests, its Packages stanza and its paths."""
    try:
        package = read_deb(str(path))
    except InvalidDeb as e:
        raise RepoError(str(e)) from None
    stanza = {k: v for k, v in package.fields.items() if k not in POOL_FIELDS}
    md5 = _md5(path)
    stanza |= {
        "Filename": f"pool/{COMPONENT}/{path.name}",
        "Size": str(size),
        "MD5sum": md5,
        "SHA256": sha256,
    }
    return {"size": size, "sha256": sha256, "stanza": stanza, "paths": package.paths}


def _published(pool: Path) -> dict[str, dict[str, Any]]:
    """The record of every .deb in the pool, each checked against its bytes. A pool an
    older gfxpack wrote has no record: its files are read and recorded as they are."""
    record = read_record(pool)
    if record is None:
        files = sorted(pool.glob("*.deb")) if pool.is_dir() else []
        return {p.name: _entry(p, *digest(p)) | {"stamp": stamp(p)} for p in files}
    return {name: check_published(pool, name, entry) for name, entry in record.items()}


def prepare(
    debs: list[InputFile],
    root: Path,
    suite: str,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
    origin: str = DEFAULT,
    label: str = DEFAULT,
    codename: str | None = None,
    keep_generations: int = generations.DEFAULT_KEEP,
    valid_for_days: int | None = None,
    drop: frozenset[str] = frozenset(),
) -> AptUpdate:
    """Everything a run adds to the repository at ``root``, checked and signed, with
    nothing written yet; its Release says ``origin``, ``label`` and ``codename`` (None:
    the suite), and is valid for ``valid_for_days`` from ``epoch`` (None: no end). The
    indexes of the last ``keep_generations`` publishes stay fetchable by hash. A
    published file name with other bytes is an error."""
    check_suite(suite)
    check_name("--origin", origin, RELEASE_FIELD)
    check_name("--label", label, RELEASE_FIELD)
    if codename is not None:
        check_name("--codename", codename, CODENAME)
    check_lifetimes(keep_generations, valid_for_days)
    pool = pool_of(root)
    record = retained(_published(pool), drop)  # what a prune or removal keeps
    added = []
    for deb in debs:
        published = record.get(deb.name)
        if published is None:
            record[deb.name] = _entry(deb.path, deb.size, deb.sha256)
            added.append(deb)
        elif published["sha256"] != deb.sha256:
            raise RepoError(
                f"{pool / deb.name} is already published with different contents; "
                "a published version never changes (raise --release)"
            )
    _one_file_per_version(record, pool)
    indexes = _indexes(record)
    dist = root / "dists" / suite
    kept = generations.following(
        generations.read(dist),
        _released(dist),
        [by_hash_path(name, data) for name, data in indexes],
        keep_generations,
    )
    fields = {
        "Origin": origin,
        "Label": label,
        "Suite": suite,
        "Codename": codename if codename is not None else suite,
        "Date": formatdate(epoch, usegmt=True),
    }
    if valid_for_days is not None:
        fields["Valid-Until"] = formatdate(epoch + valid_for_days * 86400, usegmt=True)
    release = _release(fields, indexes).encode()
    signatures = {}
    if sign_key:
        signatures = {
            "InRelease": sign(release, sign_key, gnupghome, "Release", clear=True),
            "Release.gpg": sign(release, sign_key, gnupghome, "Release", clear=False),
        }
    return AptUpdate(root, suite, added, record, indexes, release, signatures, kept)


def _one_file_per_version(record: dict[str, dict[str, Any]], pool: Path) -> None:
    """A package version is one file: two files for one name, version and arch would
    leave apt to pick either."""
    seen: dict[tuple[str, str, str], str] = {}
    for name in record:  # the published files first, then the new ones
        stanza = record[name]["stanza"]
        key = (stanza["Package"], stanza["Version"], stanza["Architecture"])
        other = seen.setdefault(key, name)
        if other != name:
            raise RepoError(
                f"{name}: {' '.join(key)} is already published as {pool / other}; "
                "a published version never changes (raise --release)"
            )


def _indexes(record: dict[str, dict[str, Any]]) -> list[tuple[str, bytes]]:
    """Packages (plain, .gz, .xz) and Contents of every architecture, by name under
    dists/<suite>."""
    by_arch: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name in sorted(record):
        entry = record[name]
        by_arch[entry["stanza"]["Architecture"]].append(entry)
    arches = sorted(a for a in by_arch if a != "all")
    # Packages of arch all are in every binary-<arch> index (what apt before 1.2 reads)
    # and, when there are others, in binary-all too: the Release lists "all" then.
    if "all" in by_arch:
        arches.append("all")
    indexes: list[tuple[str, bytes]] = []
    for arch in arches:
        members = sorted(
            by_arch[arch] + (by_arch["all"] if arch != "all" else []),
            key=lambda e: (e["stanza"]["Package"], e["stanza"]["Version"]),
        )
        packages = "\n".join(_stanza_text(e["stanza"]) for e in members).encode()
        base = f"{COMPONENT}/binary-{arch}/Packages"
        indexes += [
            (base, packages),
            (base + ".gz", gzip.compress(packages, 9, mtime=0)),
            (base + ".xz", lzma.compress(packages, preset=6)),
        ]
        contents = sorted(
            (path, f"{e['stanza'].get('Section', 'misc')}/{e['stanza']['Package']}")
            for e in members
            for path in e["paths"]
        )
        text = "".join(f"{path:<60} {owner}\n" for path, owner in contents).encode()
        indexes.append((f"{COMPONENT}/Contents-{arch}.gz", gzip.compress(text, 9, mtime=0)))
    return indexes


def _stanza_text(stanza: dict[str, str]) -> str:
    return "".join(f"{field}: {value}\n" for field, value in stanza.items())


def _release(fields: dict[str, str], indexes: list[tuple[str, bytes]]) -> str:
    """The Release of ``indexes``: ``fields`` (Origin to Valid-Until) first."""
    arches = [name.split("/")[1].removeprefix("binary-") for name, _ in indexes]
    arches = list(dict.fromkeys(a for a in arches if not a.startswith("Contents")))
    lines = [f"{name}: {value}" for name, value in fields.items()]
    lines += [
        f"Architectures: {' '.join(arches)}",
        f"Components: {COMPONENT}",
        "Description: ROCm packages published by gfxpack",
        # Every index is also at by-hash/SHA256/<digest> beside it (apt >= 1.1 fetches
        # it there, so an update never mixes two publishes' files).
        "Acquire-By-Hash: yes",
    ]
    if len(arches) > 1 and "all" in arches:
        # binary-<arch> has the arch-all packages too (apt need not fetch binary-all).
        lines.append("No-Support-for-Architecture-all: Packages")
    for title, algorithm in (("MD5Sum", "md5"), ("SHA256", "sha256")):
        lines.append(f"{title}:")
        for name, data in indexes:
            digest = hashlib.new(algorithm, data, usedforsecurity=False).hexdigest()
            lines.append(f" {digest} {len(data):>16} {name}")
    return "\n".join(lines) + "\n"
