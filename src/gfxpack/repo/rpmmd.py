"""An rpm-md repository (what dnf, yum and zypper read), made with createrepo_c's bindings.

    Packages/<file>.rpm
    repodata/repomd.xml, repomd.xml.asc (signed with --sign-key) and repomd.xml.key
             (the signing key, armored), <sha256>-primary.xml.gz, -filelists.xml.gz,
             -other.xml.gz

Incremental like the apt side: packages already published stay (checked against
the pool's record first); the metadata is regenerated over every package
(createrepo_c reads only RPM headers, fast enough not to need a cache). The new
repodata is made and signed in a temporary directory by :func:`prepare`; then
:meth:`RpmUpdate.commit_indexes` moves its digest-named files into repodata/ (new
names: nothing a client may be reading is replaced), then the key, the signature and
repomd.xml last, and only then removes the files of generations older than the last
--keep-generations (as ``createrepo_c --retain-old-md``): a client that read an
earlier repomd.xml still finds every file it names.
zypper and dnf look for ``repomd.xml.key`` when a repomd.xml is signed by a key they
were not given (zypper offers to import it; ``--gpg-auto-import-keys`` accepts it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import createrepo_c as cr

from gfxpack._io import DIRECTORY_MODE, FILE_MODE
from gfxpack.formats import RPM
from gfxpack.repo import generations
from gfxpack.repo.entries import RpmEntry, new_rpm_entry, retained, rpm_entries
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.names import check_lifetimes
from gfxpack.repo.rpmfile import InvalidRpm, read_rpm
from gfxpack.repo.signing import sign
from gfxpack.repo.transaction import (
    Transaction,
    check_published,
    make_dirs,
    read_record,
    stamp,
)
from gfxpack.repo.trust import RPM_MD_KEY, export_armored_key

KINDS = ("primary", "filelists", "other")
REPOMD = "repomd.xml"
SIGNATURE = "repomd.xml.asc"
KEY = Path(RPM_MD_KEY).name


def pool_of(root: Path) -> Path:
    """Where the rpm-md repository at ``root`` keeps its package files."""
    return root / "Packages"


@dataclass
class RpmUpdate:
    """What a run writes to an rpm-md repository: new pool files, repodata made beside."""

    root: Path
    added: list[InputFile]
    record: dict[str, dict[str, Any]]
    staging: Path
    signed: bool
    # The repodata/ file names of each retained generation, oldest first.
    generations: list[list[str]]

    @property
    def pool(self) -> Path:
        return pool_of(self.root)

    def add_files(self, tx: Transaction) -> None:
        """Copy the new files into the pool."""
        for rpm in self.added:
            tx.add_to_pool(rpm, self.pool)
            self.record[rpm.name]["stamp"] = stamp(self.pool / rpm.name)

    def commit_record(self, tx: Transaction) -> None:
        """Record the pool (after :meth:`add_files`): its files are published."""
        tx.record(self.pool, self.record)

    def commit_indexes(self, tx: Transaction) -> None:
        """Move the new repodata in (after :meth:`commit_record`), repomd.xml last; then
        remove what no retained generation names."""
        repodata = self.root / "repodata"
        make_dirs(repodata)
        tops = (KEY, SIGNATURE, REPOMD)
        for path in sorted(self.staging.iterdir()):
            if path.name not in tops:
                os.replace(path, repodata / path.name)
        for name in tops:
            if (self.staging / name).exists():
                os.replace(self.staging / name, repodata / name)
            elif name != REPOMD:
                # A signature (or its key) of an earlier repomd.xml would not match it.
                (repodata / name).unlink(missing_ok=True)
        tx.write(self.root / generations.RECORD, generations.encode(self.generations))
        named = [p for p in repodata.iterdir() if p.name not in tops]
        for path in generations.stale(repodata, named, self.generations):
            if path.is_file() and not path.is_symlink():
                path.unlink()

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def summary(self) -> dict[str, Any]:
        return {
            "format": RPM.name,
            "added": [f.name for f in self.added],
            "packages": len(self.record),
            "signed": self.signed,
        }


def recover(root: Path, note: Callable[[str], None]) -> None:
    """Undo what an interrupted run left in the repository at ``root``: repodata an older
    gfxpack moved aside (it swapped the directory whole) is put back (or, when new
    repodata made it in, removed) and the repodata a run was making is removed; files
    it moved into repodata/ before its repomd.xml are removed by the next publish, which
    keeps only what a retained generation names."""
    retired = root / ".repodata-old"
    if retired.is_dir():
        if (root / "repodata").is_dir():
            shutil.rmtree(retired)
        else:
            os.replace(retired, root / "repodata")
            note(f"{root / 'repodata'}: put back from an interrupted run")
    for staging in root.glob(".repodata-*") if root.is_dir() else ():
        shutil.rmtree(staging)


def _package(path: Path, name: str) -> cr.Package:
    try:
        return read_rpm(str(path), f"Packages/{name}")
    except InvalidRpm as e:
        raise RepoError(str(e)) from None


def prepare(
    rpms: list[InputFile],
    root: Path,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
    keep_generations: int = generations.DEFAULT_KEEP,
    drop: frozenset[str] = frozenset(),
) -> RpmUpdate:
    """Read and check every package, published and new, and make (and sign) the new
    repodata in ``root/.repodata-XXXX``; nothing else is written. The repodata of the
    last ``keep_generations`` publishes stays."""
    check_lifetimes(keep_generations, None)
    pool = pool_of(root)
    record = read_record(pool)
    if record is None:  # a pool an older gfxpack wrote: recorded as it is
        files = sorted(pool.glob("*.rpm")) if pool.is_dir() else []
        record = {p.name: {"size": (d := digest(p))[0], "sha256": d[1]} for p in files}
        record = {name: entry | {"stamp": stamp(pool / name)} for name, entry in record.items()}
    else:
        record = {name: check_published(pool, name, entry) for name, entry in record.items()}
    record = retained(record, drop)
    packages = rpm_entries(record, pool, _package)
    added = []
    for rpm in rpms:
        published = record.get(rpm.name)
        if published is None:
            record[rpm.name] = {"size": rpm.size, "sha256": rpm.sha256}
            packages[rpm.name] = new_rpm_entry(record[rpm.name], _package(rpm.path, rpm.name))
            added.append(rpm)
        elif published["sha256"] != rpm.sha256:
            raise RepoError(
                f"{pool / rpm.name} is already published with different contents; "
                "a published version never changes (raise --release)"
            )
    seen: dict[str, str] = {}
    for name in packages:  # the published files first, then the new ones
        nevra = packages[name].nevra
        other = seen.setdefault(nevra, name)
        if other != name:
            raise RepoError(
                f"{name}: {nevra} is already published as {pool / other}; "
                "a published version never changes (raise --release)"
            )
    make_dirs(root)
    staging = Path(tempfile.mkdtemp(prefix=".repodata-", dir=root))
    try:
        repomd = _metadata([packages[name] for name in sorted(packages)], staging, epoch)
        signed = False
        if sign_key:
            signature = sign(repomd, sign_key, gnupghome, "repomd.xml", clear=False)
            (staging / "repomd.xml.asc").write_bytes(signature)
            # Made beside the signature, in the repodata swapped in whole (RPM_MD_KEY
            # is below repodata/).
            key = export_armored_key(sign_key, gnupghome)
            (staging / Path(RPM_MD_KEY).relative_to("repodata")).write_bytes(key)
            signed = True
        for path in staging.iterdir():
            path.chmod(FILE_MODE)
        staging.chmod(DIRECTORY_MODE)
        new = [p.name for p in staging.iterdir() if p.name not in (REPOMD, SIGNATURE, KEY)]
        kept = generations.following(
            generations.read(root), _named(root / "repodata"), new, keep_generations
        )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return RpmUpdate(root, added, record, staging, signed, kept)


def _named(repodata: Path) -> list[str]:
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


def _metadata(packages: list[RpmEntry], staging: Path, epoch: int) -> bytes:
    """primary, filelists and other of ``packages`` and their repomd.xml, in ``staging``."""
    paths = {kind: staging / f"{kind}.xml.gz" for kind in KINDS}
    primary = cr.PrimaryXmlFile(str(paths["primary"]))
    filelists = cr.FilelistsXmlFile(str(paths["filelists"]))
    other = cr.OtherXmlFile(str(paths["other"]))
    xmls = (primary, filelists, other)
    for xml in xmls:
        xml.set_num_of_pkgs(len(packages))
    for package in packages:
        for kind, xml in zip(KINDS, xmls, strict=True):
            xml.add_chunk(package.chunk(kind))
    for xml in xmls:
        xml.close()
    repomd = cr.Repomd()
    repomd.set_revision(str(epoch))
    for kind, path in paths.items():
        record = cr.RepomdRecord(kind, str(path))
        record.fill(cr.SHA256)
        record.rename_file()  # <checksum>-<kind>.xml.gz, as createrepo_c names them
        record.set_timestamp(epoch)
        repomd.set_record(record)
    data = str(repomd.xml_dump()).encode("utf-8")
    (staging / "repomd.xml").write_bytes(data)
    return data
