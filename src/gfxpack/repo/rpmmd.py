"""An rpm-md repository (what dnf, yum and zypper read), made with createrepo_c's bindings.

    Packages/<file>.rpm
    repodata/repomd.xml, repomd.xml.asc (signed with --sign-key) and repomd.xml.key
             (the signing key, armored), <sha256>-primary.xml.gz, -filelists.xml.gz,
             -other.xml.gz

Incremental like the apt side: packages already published stay (checked against
the pool's record first); the metadata is regenerated over every package
(createrepo_c reads only RPM headers, fast enough not to need a cache). The new
repodata is made and signed in a temporary directory by :func:`prepare` and
swapped in whole by :meth:`RpmUpdate.commit_indexes`, so readers never see a
half-written repository, nor a key that is not the one of the signature beside it.
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
from gfxpack.formats.package_format import RPM, RPM_MD_KEY
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.rpmfile import InvalidRpm, read_rpm
from gfxpack.repo.signing import sign
from gfxpack.repo.transaction import (
    Transaction,
    check_published,
    make_dirs,
    read_record,
    stamp,
)
from gfxpack.repo.trust import export_armored_key

KINDS = ("primary", "filelists", "other")


@dataclass
class RpmUpdate:
    """What a run writes to an rpm-md repository: new pool files, repodata made beside."""

    root: Path
    added: list[InputFile]
    record: dict[str, dict[str, Any]]
    staging: Path
    signed: bool

    @property
    def pool(self) -> Path:
        return RPM.pool(self.root)

    def add_files(self, tx: Transaction) -> None:
        """Copy the new files into the pool."""
        for rpm in self.added:
            tx.add_to_pool(rpm, self.pool)
            self.record[rpm.name]["stamp"] = stamp(self.pool / rpm.name)

    def commit_record(self, tx: Transaction) -> None:
        """Record the pool (after :meth:`add_files`): its files are published."""
        tx.record(self.pool, self.record)

    def commit_indexes(self, tx: Transaction) -> None:
        """Swap the new repodata in (after :meth:`commit_record`)."""
        tx.swap_in(self.staging, self.root / "repodata")

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
    """Undo what an interrupted run left in the repository at ``root``: repodata it moved
    aside is put back (or, when new repodata made it in, removed) and the repodata it
    was making is removed."""
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
) -> RpmUpdate:
    """Read and check every package, published and new, and make (and sign) the new
    repodata in ``root/.repodata-XXXX``; nothing else is written."""
    pool = RPM.pool(root)
    record = read_record(pool)
    if record is None:  # a pool an older gfxpack wrote: recorded as it is
        files = sorted(pool.glob("*.rpm")) if pool.is_dir() else []
        record = {p.name: {"size": (d := digest(p))[0], "sha256": d[1]} for p in files}
        record = {name: entry | {"stamp": stamp(pool / name)} for name, entry in record.items()}
    else:
        record = {name: check_published(pool, name, entry) for name, entry in record.items()}
    packages = {name: _package(pool / name, name) for name in record}
    added = []
    for rpm in rpms:
        published = record.get(rpm.name)
        if published is None:
            packages[rpm.name] = _package(rpm.path, rpm.name)
            record[rpm.name] = {"size": rpm.size, "sha256": rpm.sha256}
            added.append(rpm)
        elif published["sha256"] != rpm.sha256:
            raise RepoError(
                f"{pool / rpm.name} is already published with different contents; "
                "a published version never changes (raise --release)"
            )
    seen: dict[str, str] = {}
    for name in packages:  # the published files first, then the new ones
        nevra = str(packages[name].nevra())
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
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return RpmUpdate(root, added, record, staging, signed)


def _metadata(packages: list[cr.Package], staging: Path, epoch: int) -> bytes:
    """primary, filelists and other of ``packages`` and their repomd.xml, in ``staging``."""
    paths = {kind: staging / f"{kind}.xml.gz" for kind in KINDS}
    primary = cr.PrimaryXmlFile(str(paths["primary"]))
    filelists = cr.FilelistsXmlFile(str(paths["filelists"]))
    other = cr.OtherXmlFile(str(paths["other"]))
    xmls = (primary, filelists, other)
    for xml in xmls:
        xml.set_num_of_pkgs(len(packages))
    for package in packages:
        for xml in xmls:
            xml.add_pkg(package)
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
