"""The rpm-md repository writer: repodata createrepo_c reads, and incremental runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import createrepo_c as cr
import pytest

from gfxpack.formats import RPM
from gfxpack.repo import run
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.options import PublishOptions
from tests.verify.helpers import write_package


def publish(rpms: list[Path], out: Path, epoch: int) -> dict[str, Any]:
    """One run publishing ``rpms`` (repo/run.py); the rpm-md summary."""
    files = [InputFile(p, *digest(p)) for p in rpms]
    result = run.apply(out, files, run.Request(), PublishOptions("stable", epoch))
    (summary,) = result["formats"]
    assert summary["format"] == RPM.name
    return summary


def primary_names(root: Path) -> list[str]:
    repomd = cr.Repomd(str(root / "repodata/repomd.xml"))
    (record,) = [r for r in repomd.records if r.type == "primary"]
    names: list[str] = []
    cr.xml_parse_primary(
        str(root / record.location_href), pkgcb=lambda p: names.append(p.name) or True
    )
    return sorted(names)


def test_publish_adds_to_the_repository_and_regenerates_repodata(tmp_path):
    out = tmp_path / "repo"
    one = write_package(tmp_path / "b1", RPM, "one", files=("/opt/one",))
    summary = publish([one], out, 1_700_000_000)
    assert (summary["format"], summary["added"], summary["packages"]) == (
        RPM.name,
        [one.name],
        1,
    )
    two = write_package(tmp_path / "b2", RPM, "two", depends=("one",))
    summary = publish([one, two], out, 1_700_000_000)
    assert (summary["added"], summary["packages"]) == ([two.name], 2)
    root = out / "rpm"
    assert primary_names(root) == ["one", "two"]
    # no leftovers: no staging repodata, no partial files
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".gfxpack")) == [
        "Packages",
        "repodata",
    ]
    assert cr.Repomd(str(root / "repodata/repomd.xml")).revision == "1700000000"


def test_a_changed_package_is_refused_and_the_repository_kept(tmp_path):
    out = tmp_path / "repo"
    publish([write_package(tmp_path / "b1", RPM, "one")], out, 0)
    before = (out / "rpm/repodata/repomd.xml").read_bytes()
    changed = write_package(tmp_path / "b2", RPM, "one", files=("/opt/changed",))
    with pytest.raises(RepoError, match="different contents"):
        publish([changed], out, 0)
    assert (out / "rpm/repodata/repomd.xml").read_bytes() == before


def file_times(root: Path) -> dict[str, int]:
    repomd = cr.Repomd(str(root / "repodata/repomd.xml"))
    (record,) = [r for r in repomd.records if r.type == "primary"]
    times: dict[str, int] = {}
    cr.xml_parse_primary(
        str(root / record.location_href),
        pkgcb=lambda p: times.__setitem__(p.name, p.time_file) or True,
    )
    return times


def test_file_times_are_clamped_to_the_epoch_so_two_builds_publish_the_same_indexes(tmp_path):
    """primary.xml's <time file> is the package file's mtime (createrepo_c's rule),
    clamped to the run's epoch: the same package written twice, at two times, gives
    byte-identical repodata; a file older than the epoch keeps its own time."""
    epoch = 1_700_000_000
    made = []
    for build, mtime in (("b1", epoch + 100), ("b2", epoch + 5_000)):
        package = write_package(tmp_path / build, RPM, "one", files=("/opt/one",))
        os.utime(package, (mtime, mtime))
        publish([package], tmp_path / build / "repo", epoch)
        made.append(tmp_path / build / "repo/rpm/repodata")
    assert file_times(made[0].parent) == {"one": epoch}
    assert {p.name: p.read_bytes() for p in made[0].iterdir()} == {
        p.name: p.read_bytes() for p in made[1].iterdir()
    }
    older = write_package(tmp_path / "b3", RPM, "one", files=("/opt/one",))
    os.utime(older, (epoch - 86_400, epoch - 86_400))
    publish([older], tmp_path / "b3/repo", epoch)
    assert file_times(tmp_path / "b3/repo/rpm") == {"one": epoch - 86_400}
