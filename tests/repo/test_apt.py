"""The apt repository writer: its pool, incremental runs and the indexes apt reads."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from gfxpack.formats import DEB
from gfxpack.repo import run as repo_run
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.options import PublishOptions
from tests.conftest import run
from tests.verify.helpers import write_package


def publish(debs: list[Path], out: Path, suite: str = "stable", epoch: int = 0) -> dict[str, Any]:
    """One run publishing ``debs`` (repo/run.py); the apt summary."""
    files = [InputFile(p, *digest(p)) for p in debs]
    result = repo_run.apply(out, files, repo_run.Request(), PublishOptions(suite, epoch))
    (summary,) = result["formats"]
    assert summary["format"] == DEB.name
    return summary


def test_published_files_are_copied_once_and_a_changed_one_is_refused(tmp_path):
    build = tmp_path / "build"
    one = write_package(build, DEB, "one")
    two = write_package(build, DEB, "two")
    out = tmp_path / "repo"
    assert publish([one], out)["added"] == [one.name]
    pool = out / "apt/pool/main"
    # Copied, not hard-linked: the pool is not the build (tests/repo/test_pool_copy.py).
    assert not (pool / one.name).samefile(one)
    assert (pool / one.name).read_bytes() == one.read_bytes()
    assert publish([one, two], out)["added"] == [two.name]
    assert sorted(p.name for p in pool.glob("*.deb")) == [one.name, two.name]
    assert not list(pool.glob(".*partial"))  # nothing partial left
    rebuilt = write_package(tmp_path / "rebuilt", DEB, "one", files=("/opt/changed",))
    assert rebuilt.name == one.name
    with pytest.raises(RepoError, match="already published with different contents"):
        publish([rebuilt], out)


def test_publish_indexes_every_package_of_the_pool(tmp_path):
    first = [write_package(tmp_path / "b1", DEB, "one", files=("/opt/one",))]
    second = [write_package(tmp_path / "b2", DEB, "two", depends=("one",))]
    out = tmp_path / "repo"
    assert publish(first, out)["added"] == [first[0].name]
    result = publish(second, out)
    assert (result["format"], result["added"], result["packages"], result["signed"]) == (
        DEB.name,
        [second[0].name],
        2,
        False,
    )
    dist = out / "apt/dists/stable"
    stanzas = parse_stanzas((dist / "main/binary-amd64/Packages").read_text())
    assert [s["Package"] for s in stanzas] == ["one", "two"]
    for stanza in stanzas:
        deb = out / "apt" / stanza["Filename"]
        assert stanza["Size"] == str(deb.stat().st_size)
        assert stanza["SHA256"] == run("sha256sum", str(deb)).stdout.split()[0]
        assert stanza["MD5sum"] == run("md5sum", str(deb)).stdout.split()[0]
    contents = gzip.decompress((dist / "main/Contents-amd64.gz").read_bytes()).decode()
    assert contents.split() == ["opt/one", "misc/one"]
    release = parse_stanzas((dist / "Release").read_text())[0]
    assert release["Suite"] == "stable" and not (dist / "InRelease").exists()
