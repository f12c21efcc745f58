"""An apt repository (Debian's repository format) built from .deb files.

    pool/main/<file>.deb
    dists/<suite>/Release, InRelease, Release.gpg (signed with --sign-key)
    dists/<suite>/main/binary-<arch>/Packages, Packages.gz, Packages.xz
    dists/<suite>/main/Contents-<arch>.gz

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
import re
from collections import defaultdict
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

from gfxpack._io import file_digests
from gfxpack.formats.package_format import DEB
from gfxpack.repo.debfile import InvalidDeb, read_deb
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.names import DEFAULT, RELEASE_FIELD, check_name
from gfxpack.repo.signing import sign
from gfxpack.repo.transaction import Transaction, check_published, read_record, stamp

COMPONENT = "main"
# Where gfxpack kept the stanzas of pool files before pools had records.
_LEGACY_CACHE = ".gfxpack-apt-cache.json"
# The fields the repository writes into each stanza, after the control file's.
POOL_FIELDS = ("Filename", "Size", "MD5sum", "SHA256")
# dists/<suite> is one directory: a plain name.
SUITE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")

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

    @property
    def pool(self) -> Path:
        return DEB.pool(self.root)

    def add_files(self, tx: Transaction) -> None:
        """Copy the new files into the pool."""
        for deb in self.added:
            tx.add_to_pool(deb, self.pool)
            self.record[deb.name]["stamp"] = stamp(self.pool / deb.name)

    def commit_record(self, tx: Transaction) -> None:
        """Record the pool (after :meth:`add_files`): its files are published."""
        tx.record(self.pool, self.record)

    def commit_indexes(self, tx: Transaction) -> None:
        """Write the indexes (after :meth:`commit_record`), Release last."""
        dist = self.root / "dists" / self.suite
        for name, data in self.indexes:
            tx.write(dist / name, data)
        tx.write(dist / "Release", self.release)
        for name in ("InRelease", "Release.gpg"):
            if name in self.signatures:
                tx.write(dist / name, self.signatures[name])
            else:
                # A signature of an earlier Release would no longer match it.
                (dist / name).unlink(missing_ok=True)

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
) -> AptUpdate:
    """Everything a run adds to the repository at ``root``, checked and signed, with
    nothing written yet; its Release says ``origin`` and ``label``. A published file
    name with other bytes is an error."""
    check_suite(suite)
    check_name("--origin", origin, RELEASE_FIELD)
    check_name("--label", label, RELEASE_FIELD)
    pool = DEB.pool(root)
    record = _published(pool)
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
    release = _release(suite, indexes, epoch, origin, label).encode()
    signatures = {}
    if sign_key:
        signatures = {
            "InRelease": sign(release, sign_key, gnupghome, "Release", clear=True),
            "Release.gpg": sign(release, sign_key, gnupghome, "Release", clear=False),
        }
    return AptUpdate(root, suite, added, record, indexes, release, signatures)


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
    arches = sorted(a for a in by_arch if a != "all") or ["all"]
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


def _release(
    suite: str, indexes: list[tuple[str, bytes]], epoch: int, origin: str, label: str
) -> str:
    arches = sorted(
        {name.split("/")[1].removeprefix("binary-") for name, _ in indexes if "/binary-" in name}
    )
    lines = [
        f"Origin: {origin}",
        f"Label: {label}",
        f"Suite: {suite}",
        f"Codename: {suite}",
        f"Date: {formatdate(epoch, usegmt=True)}",
        f"Architectures: {' '.join(arches)}",
        f"Components: {COMPONENT}",
        "Description: ROCm packages published by gfxpack",
    ]
    for title, algorithm in (("MD5Sum", "md5"), ("SHA256", "sha256")):
        lines.append(f"{title}:")
        for name, data in indexes:
            digest = hashlib.new(algorithm, data, usedforsecurity=False).hexdigest()
            lines.append(f" {digest} {len(data):>16} {name}")
    return "\n".join(lines) + "\n"
