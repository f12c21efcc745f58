"""rpm-md repodata generations: digest-named files, the last N publishes' kept (as
createrepo_c --retain-old-md), repomd.xml replaced last. dnf makecache (own
configuration, loopback HTTP) succeeds after every publish, and also for a client that
still holds an earlier repomd.xml; older generations are gone."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import createrepo_c as cr
import pytest

from gfxpack.formats import RPM
from gfxpack.repo import RepositoryNames, publish
from tests.verify.clients import Dnf, repo_section
from tests.verify.helpers import serve, write_package

pytestmark = pytest.mark.skipif(shutil.which("dnf") is None, reason="needs dnf")
EPOCH = 1_700_000_000


def _named(repomd: Path) -> set[str]:
    """The repodata/ files ``repomd`` names."""
    return {Path(r.location_href).name for r in cr.Repomd(str(repomd)).records}


def _dnf(home: Path, url: str) -> Dnf:
    return Dnf(home, home / "root", repo_section("gfx", f"{url}/rpm", None))


def test_dnf_reads_every_publish_and_an_earlier_repomd(tmp_path):
    out = tmp_path / "repo"
    keep = 2
    names = RepositoryNames(keep_generations=keep)
    repodata = out / "rpm/repodata"
    repomds: list[bytes] = []
    stale = tmp_path / "stale/rpm"  # an earlier repomd.xml beside the live files
    with serve(out) as url, serve(tmp_path / "stale") as stale_url:
        for n in range(keep + 2):
            build = tmp_path / f"build-{n}"
            write_package(build, RPM, "tool", version=f"8.{n}.0", files=(f"/opt/tool-{n}",))
            publish(build, out, "stable", EPOCH + n, names=names)
            repomds.append((repodata / "repomd.xml").read_bytes())
            dnf = _dnf(tmp_path / f"dnf-{n}", url)
            dnf.run("makecache")
            listed = dnf.run("repoquery", "--qf", "%{version}\n", "tool").stdout.split()
            assert sorted(listed) == [f"8.{i}.0" for i in range(n + 1)]
        (stale / "repodata").mkdir(parents=True)
        (stale / "repodata/repomd.xml").write_bytes(repomds[-2])
        for path in repodata.iterdir():
            if path.name != "repomd.xml":
                (stale / "repodata" / path.name).symlink_to(path)
        (stale / "Packages").symlink_to(out / "rpm/Packages")
        dnf = _dnf(tmp_path / "dnf-stale", stale_url)
        dnf.run("makecache")
        listed = dnf.run("repoquery", "--qf", "%{version}\n", "tool").stdout.split()
        assert sorted(listed) == [f"8.{i}.0" for i in range(keep + 1)]
    generations = []
    for data in repomds:
        (tmp_path / "repomd.xml").write_bytes(data)
        generations.append(_named(tmp_path / "repomd.xml"))
    # Digest-named, primary, filelists and other in every generation.
    for named in generations:
        assert {re.sub(r"^[0-9a-f]{64}-", "", n) for n in named} == {
            "primary.xml.gz",
            "filelists.xml.gz",
            "other.xml.gz",
        }
    kept = set().union(*generations[-keep:])
    on_disk = {p.name for p in repodata.iterdir()} - {"repomd.xml"}
    assert on_disk == kept
    assert generations[0] - kept  # the oldest generation's files were removed
