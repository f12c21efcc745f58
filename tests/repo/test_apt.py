"""The apt repository writer: its pool, incremental runs and the indexes apt reads."""

from __future__ import annotations

import gzip

import pytest

from gfxpack.formats import DEB
from gfxpack.repo.apt import RepoError, add_to_pool, new_files, publish
from gfxpack.repo.debfile import parse_stanzas
from tests.conftest import run
from tests.verify.helpers import write_package


def test_new_files_skips_published_ones_and_refuses_changed_ones(tmp_path):
    build = tmp_path / "build"
    one = write_package(build, DEB, "one")
    two = write_package(build, DEB, "two")
    pool = tmp_path / "pool"
    assert new_files([one, two], pool) == [one, two]
    add_to_pool([one], pool)
    assert (pool / one.name).samefile(one)  # hard-linked, not copied
    assert sorted(p.name for p in pool.iterdir()) == [one.name]  # nothing partial left
    assert new_files([one, two], pool) == [two]
    rebuilt = write_package(tmp_path / "rebuilt", DEB, "one", files=("/opt/changed",))
    assert rebuilt.name == one.name
    with pytest.raises(RepoError, match="already published with different contents"):
        new_files([rebuilt], pool)


def test_publish_indexes_every_package_of_the_pool(tmp_path):
    first = [write_package(tmp_path / "b1", DEB, "one", files=("/opt/one",))]
    second = [write_package(tmp_path / "b2", DEB, "two", depends=("one",))]
    out = tmp_path / "apt"
    assert publish(first, out, "stable", 0)["added"] == [first[0].name]
    result = publish(second, out, "stable", 0)
    assert (result["added"], result["packages"], result["signed"]) == ([second[0].name], 2, False)
    dist = out / "dists/stable"
    stanzas = parse_stanzas((dist / "main/binary-amd64/Packages").read_text())
    assert [s["Package"] for s in stanzas] == ["one", "two"]
    for stanza in stanzas:
        deb = out / stanza["Filename"]
        assert stanza["Size"] == str(deb.stat().st_size)
        assert stanza["SHA256"] == run("sha256sum", str(deb)).stdout.split()[0]
    contents = gzip.decompress((dist / "main/Contents-amd64.gz").read_bytes()).decode()
    assert contents.split() == ["opt/one", "misc/one"]
    release = parse_stanzas((dist / "Release").read_text())[0]
    assert release["Suite"] == "stable" and not (dist / "InRelease").exists()
