"""gfxpack repo: the indexes an apt client and a dnf client read, and incremental runs."""

from __future__ import annotations

import gzip
import hashlib
import json

import createrepo_c as cr
import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB
from gfxpack.repo.debfile import parse_stanzas
from tests.conftest import run
from tests.verify.helpers import make_repo

pytestmark = pytest.mark.slow  # make check skips it: whole repositories, read by apt and dnf


def publish(*args: str):
    result = CliRunner().invoke(cli, ["repo", *args])
    assert result.exit_code == 0, result.output + result.stderr
    return result


def test_release_lists_every_index_with_its_size_and_digests(example_release, tmp_path):
    publish("--in", str(example_release.out), "--out", str(tmp_path / "r"), "--suite", "rocm")
    dist = tmp_path / "r/apt/dists/rocm"
    release = parse_stanzas((dist / "Release").read_text())[0]
    assert release["Suite"] == "rocm" and release["Architectures"] == "amd64"
    assert "MD5Sum" not in release  # SHA256 only (repo/apt.py)
    for field, algorithm in (("SHA256", "sha256"),):
        listed = [line.split() for line in release[field].splitlines() if line.strip()]
        assert {name for _, _, name in listed} == {
            "main/binary-amd64/Packages",
            "main/binary-amd64/Packages.gz",
            "main/Contents-amd64.gz",
        }
        for digest, size, name in listed:
            data = (dist / name).read_bytes()
            assert (hashlib.new(algorithm, data).hexdigest(), len(data)) == (digest, int(size))
    packages = (dist / "main/binary-amd64/Packages").read_bytes()
    assert gzip.decompress((dist / "main/binary-amd64/Packages.gz").read_bytes()) == packages
    # No Packages.xz: apt reads only the first of several xz streams (repo/apt.py).
    assert not (dist / "main/binary-amd64/Packages.xz").exists()


def test_packages_stanzas_are_what_dpkg_deb_says(example_release, tmp_path):
    publish("--in", str(example_release.out), "--out", str(tmp_path / "r"))
    root = tmp_path / "r/apt"
    stanzas = parse_stanzas((root / "dists/stable/main/binary-amd64/Packages").read_text())
    assert len(stanzas) == len(example_release.files("deb"))
    for stanza in stanzas[:10]:
        deb = root / stanza["Filename"]
        info = parse_stanzas(run("dpkg-deb", "--field", str(deb)).stdout)[0]
        assert {k: v for k, v in stanza.items() if k in info} == info
        assert stanza["Size"] == str(deb.stat().st_size)
        assert stanza["SHA256"] == hashlib.sha256(deb.read_bytes()).hexdigest()


def test_rpm_metadata_lists_every_package(example_release, tmp_path):
    publish("--in", str(example_release.out), "--out", str(tmp_path / "r"))
    repomd = cr.Repomd(str(tmp_path / "r/rpm/repodata/repomd.xml"))
    assert {r.type for r in repomd.records} == {"primary", "filelists", "other"}
    names = []

    def collect(package):
        names.append(package.name)
        return True

    primary = next(r for r in repomd.records if r.type == "primary")
    cr.xml_parse_primary(str(tmp_path / "r/rpm" / primary.location_href), pkgcb=collect)
    expected = run(
        "rpm", "-qp", "--qf", "%{NAME}\\n", *map(str, example_release.files("rpm").values())
    )
    assert sorted(names) == sorted(expected.stdout.split())


def test_a_second_run_adds_nothing_and_says_so(example_release, tmp_path):
    out = str(tmp_path / "r")
    first = json.loads(publish("--in", str(example_release.out), "--out", out, "--json").output)
    again = publish("--in", str(example_release.out), "--out", out)
    count = len(example_release.files("deb"))
    assert [len(r["added"]) for r in first] == [count, count]
    assert f"deb: 0 new, {count} in" in again.output and f"rpm: 0 new, {count} in" in again.output
    assert f"deb [trusted=yes] {(tmp_path / 'r/apt').as_uri()} stable main" in again.output


def test_publishing_unsigned_removes_old_signatures(tmp_path):
    root = make_repo(tmp_path, DEB, {"tool": {}})
    dist = root / "apt/dists/stable"
    (dist / "InRelease").write_text("a signature of an older Release\n")
    (dist / "Release.gpg").write_text("a signature of an older Release\n")
    publish("--in", str(tmp_path / "build-deb"), "--out", str(root))
    assert not (dist / "InRelease").exists() and not (dist / "Release.gpg").exists()
