"""An rpm-md repository (what dnf, yum and zypper read), made with createrepo_c's bindings.

    Packages/<file>.rpm
    repodata/repomd.xml, <sha256>-primary.xml.gz, -filelists.xml.gz, -other.xml.gz

Incremental like the apt side: packages already published stay; the metadata
is regenerated over every package (createrepo_c reads only RPM headers, fast
enough not to need a cache). The new repodata is written to a temporary
directory and swapped in, so readers never see a half-written repository.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import createrepo_c as cr

from gfxpack.repo.apt import add_to_pool, new_files


def publish(rpms: list[Path], out: Path, epoch: int) -> dict[str, Any]:
    """Add ``rpms`` to the repository at ``out`` and regenerate its repodata."""
    packages = out / "Packages"
    added = new_files(rpms, packages)
    add_to_pool(added, packages)
    files = sorted(packages.glob("*.rpm"))
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".repodata-", dir=out))
    try:
        paths = {kind: staging / f"{kind}.xml.gz" for kind in ("primary", "filelists", "other")}
        primary = cr.PrimaryXmlFile(str(paths["primary"]))
        filelists = cr.FilelistsXmlFile(str(paths["filelists"]))
        other = cr.OtherXmlFile(str(paths["other"]))
        for xml in (primary, filelists, other):
            xml.set_num_of_pkgs(len(files))
        for rpm in files:
            package = cr.package_from_rpm(str(rpm), cr.SHA256, f"Packages/{rpm.name}")
            for xml in (primary, filelists, other):
                xml.add_pkg(package)
        for xml in (primary, filelists, other):
            xml.close()
        repomd = cr.Repomd()
        repomd.set_revision(str(epoch))
        for kind, path in paths.items():
            record = cr.RepomdRecord(kind, str(path))
            record.fill(cr.SHA256)
            record.rename_file()  # <checksum>-<kind>.xml.gz, as createrepo_c names them
            record.set_timestamp(epoch)
            repomd.set_record(record)
        (staging / "repomd.xml").write_text(repomd.xml_dump(), encoding="utf-8")
        old = out / "repodata"
        retired = out / ".repodata-old"
        if old.exists():
            os.replace(old, retired)
        os.replace(staging, old)
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {"added": [p.name for p in added], "packages": len(files)}
