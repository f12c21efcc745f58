"""The rpm-md repository writer: repodata createrepo_c reads, and incremental runs."""

from __future__ import annotations

import createrepo_c as cr
import pytest

from gfxpack.formats import RPM
from gfxpack.repo.apt import RepoError
from gfxpack.repo.rpmmd import publish
from tests.verify.helpers import write_package


def primary_names(out) -> list[str]:
    repomd = cr.Repomd(str(out / "repodata/repomd.xml"))
    (record,) = [r for r in repomd.records if r.type == "primary"]
    names: list[str] = []
    cr.xml_parse_primary(
        str(out / record.location_href), pkgcb=lambda p: names.append(p.name) or True
    )
    return sorted(names)


def test_publish_adds_to_the_repository_and_regenerates_repodata(tmp_path):
    out = tmp_path / "rpm"
    one = write_package(tmp_path / "b1", RPM, "one", files=("/opt/one",))
    assert publish([one], out, 1_700_000_000) == {"added": [one.name], "packages": 1}
    two = write_package(tmp_path / "b2", RPM, "two", depends=("one",))
    assert publish([one, two], out, 1_700_000_000) == {"added": [two.name], "packages": 2}
    assert primary_names(out) == ["one", "two"]
    assert sorted(p.name for p in out.iterdir()) == ["Packages", "repodata"]  # no leftovers
    assert cr.Repomd(str(out / "repodata/repomd.xml")).revision == "1700000000"


def test_a_changed_package_is_refused_and_the_repository_kept(tmp_path):
    out = tmp_path / "rpm"
    publish([write_package(tmp_path / "b1", RPM, "one")], out, 0)
    before = (out / "repodata/repomd.xml").read_bytes()
    changed = write_package(tmp_path / "b2", RPM, "one", files=("/opt/changed",))
    with pytest.raises(RepoError, match="different contents"):
        publish([changed], out, 0)
    assert (out / "repodata/repomd.xml").read_bytes() == before
