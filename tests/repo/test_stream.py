"""repo/stream.py: adds read only the new packages; prune, remove and promote."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.repo import publish
from gfxpack.repo.names import RepositoryNames
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.retention import Retention
from gfxpack.repo.state import DATABASE
from gfxpack.repo.stream import prune, read_builds, remove
from tests.conftest import build_example, generate_example

VERSIONS = ("8.2.0", "8.2.1", "8.2.2")
DAY = 86_400
EPOCH = 1_700_000_000


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    """The example built (small) at three ROCm versions."""
    base = tmp_path_factory.mktemp("stream")
    artifacts = generate_example(base / "artifacts", 0.02)
    return {v: build_example(artifacts, base / v, version=v).out for v in VERSIONS}


@pytest.fixture(scope="module")
def rsa_key(tmp_path_factory):
    """A throwaway gpg home with an RSA signing key (as tests/verify/conftest.py's)."""
    from tests.verify.signed import make_key

    home = tmp_path_factory.mktemp("gnupg-rsa")
    yield make_key(home, "rsa4096")
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)


def _publish_all(builds: dict[str, Path], repo: Path, keep: int = 1) -> None:
    """The three builds, ten days apart. Each publish keeps the indexes of the last
    ``keep`` (so pool files leave as soon as the last index naming them is gone)."""
    names = RepositoryNames(keep_generations=keep)
    for i, version in enumerate(VERSIONS):
        publish(builds[version], repo, "stable", EPOCH + i * 10 * DAY, names=names)


def _at(epoch: int) -> PublishOptions:
    return PublishOptions("", epoch)


def _files(repo: Path) -> dict[str, tuple[int, int, int]]:
    """Every file under ``repo``: (inode, mtime, size)."""
    found = {}
    for path in sorted(repo.rglob("*")):
        if path.is_file():
            info = path.stat()
            found[str(path.relative_to(repo))] = (info.st_ino, info.st_mtime_ns, info.st_size)
    return found


def _pool(repo: Path) -> set[str]:
    pools = ("apt/pool/main", "rpm/Packages")
    return {p.name for d in pools for p in (repo / d).iterdir() if p.suffix in (".deb", ".rpm")}


def _indexed(repo: Path) -> str:
    return (repo / "apt/dists/stable/main/binary-amd64/Packages").read_text()


def test_an_add_opens_none_of_the_published_packages(builds, tmp_path):
    repo = tmp_path / "repo"
    publish(builds["8.2.0"], repo, "stable", EPOCH)
    first = {p.name for p in builds["8.2.0"].iterdir() if p.suffix in (".deb", ".rpm")}
    opened: list[str] = []
    recording = [True]  # an audit hook stays for the session: it records this add only

    def audit(event: str, args: tuple) -> None:
        if recording[0] and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            opened.append(os.fsdecode(args[0]))

    sys.addaudithook(audit)
    try:
        publish(builds["8.2.1"], repo, "stable", EPOCH + DAY)
    finally:
        recording[0] = False
    pools = [p for p in opened if Path(p).name in first]
    assert first and not pools, pools
    # The new build's files were opened (the hook sees what the add reads).
    assert any(Path(p).name.startswith("amdrocm-base") and "8.2.1" in p for p in opened)
    assert "8.2.0-1" in _indexed(repo) and "8.2.1-1" in _indexed(repo)
    assert [b.version for b in read_builds(repo)] == ["8.2.0-1", "8.2.1-1"]


def test_prune_by_count_keeps_the_newest(builds, tmp_path):
    repo = tmp_path / "repo"
    _publish_all(builds, repo)
    before = _pool(repo)
    result = prune(repo, Retention.parse("2builds"), _at(EPOCH + 30 * DAY))
    assert result["removed_versions"] == ["8.2.0-1"]
    gone = {n for n in before if "8.2.0-1" in n}
    assert gone and set(result["removed_files"]) == gone == set(result["deleted_files"])
    assert _pool(repo) == before - gone
    assert "8.2.0-1" not in _indexed(repo) and "8.2.2-1" in _indexed(repo)
    repomd = (repo / "rpm/repodata/repomd.xml").read_text()
    href = re.search(r'<location href="([^"]*-primary\.xml\.gz)"', repomd)
    assert href is not None
    primary = gzip.decompress((repo / "rpm" / href[1]).read_bytes())
    assert b'ver="8.2.0"' not in primary and b'ver="8.2.2"' in primary
    # A policy that would remove everything still keeps the newest.
    prune(repo, Retention.parse("1d"), _at(EPOCH + 400 * DAY))
    assert [b.version for b in read_builds(repo)] == ["8.2.2-1"]
    assert all("8.2.2-1" in n for n in _pool(repo))


def test_dry_run_changes_nothing(builds, tmp_path):
    repo = tmp_path / "repo"
    _publish_all(builds, repo)
    before = _files(repo)
    result = CliRunner().invoke(
        cli, ["stream", "prune", "--repo", str(repo), "--retain", "1builds", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "would remove build 8.2.0-1" in result.output
    assert "would remove build 8.2.1-1" in result.output
    assert "removed" not in result.output  # a dry run never says it did
    assert _files(repo) == before


def test_remove_a_version_and_named_packages(builds, tmp_path):
    repo = tmp_path / "repo"
    _publish_all(builds, repo)
    runner = CliRunner()
    result = runner.invoke(cli, ["stream", "remove", "--repo", str(repo), "--version", "8.2.1-1"])
    assert result.exit_code == 0, result.output
    assert not any("8.2.1-1" in n for n in _pool(repo))
    assert "8.2.1-1" not in _indexed(repo) and "8.2.0-1" in _indexed(repo)
    deb = "amdrocm-base_8.2.0-1_amd64.deb"
    assert deb in _pool(repo)
    result = runner.invoke(cli, ["stream", "remove", "--repo", str(repo), "--package", deb])
    assert result.exit_code == 0, result.output
    assert deb not in _pool(repo) and f"pool/main/{deb}" not in _indexed(repo)
    assert "amdrocm-base8.2_8.2.0-1_amd64.deb" in _pool(repo)
    result = runner.invoke(cli, ["stream", "remove", "--repo", str(repo), "--version", "9.9-1"])
    assert result.exit_code == 1
    assert result.output.count("error:") == 1 and "no build 9.9-1" in result.output


def _sha256s(directory: Path) -> dict[str, str]:
    packages = [p for p in directory.iterdir() if p.suffix in (".deb", ".rpm")]
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in packages}


def test_promote_keeps_the_bytes_and_verifies_signed(rsa_key, builds, tmp_path):
    from tests.verify.signed import gfxpack, signed_build

    nightly, weekly = tmp_path / "nightly", tmp_path / "weekly"
    build = signed_build(rsa_key, builds["8.2.1"], tmp_path / "signed")
    gfxpack(rsa_key, "repo", "--in", str(build), "--out", str(nightly), "--sign-key",
            rsa_key.fingerprint)  # fmt: skip
    before = {**_sha256s(nightly / "apt/pool/main"), **_sha256s(nightly / "rpm/Packages")}
    gfxpack(rsa_key, "stream", "promote", "--from", str(nightly), "--to", str(weekly),
            "--version", "8.2.1-1", "--sign-key", rsa_key.fingerprint)  # fmt: skip
    after = {**_sha256s(weekly / "apt/pool/main"), **_sha256s(weekly / "rpm/Packages")}
    assert before and after == before
    (promoted,) = read_builds(weekly)
    assert promoted.version == "8.2.1-1"
    assert promoted.promoted_from is not None and promoted.promoted_from["stream"] == "nightly"
    key = rsa_key.export(tmp_path / "key.gpg")
    out = gfxpack(rsa_key, "verify", "--repo", str(weekly), "--deep", "--keyring", str(key))
    assert "error" not in out.lower()


def test_repo_retain_prunes_on_publish(builds, tmp_path):
    repo = tmp_path / "repo"
    runner = CliRunner()
    for version in VERSIONS:
        result = runner.invoke(
            cli, ["repo", "--in", str(builds[version]), "--out", str(repo), "--retain", "2builds",
                  "--keep-generations", "1"],
            env={"SOURCE_DATE_EPOCH": str(EPOCH)},
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    assert [b.version for b in read_builds(repo)] == ["8.2.1-1", "8.2.2-1"]
    assert not any("8.2.0-1" in n for n in _pool(repo))


def test_repodata_from_the_record_is_what_createrepo_c_writes(builds, tmp_path):
    """The kept entries make the same primary, filelists and other as createrepo_c
    writes from the packages read, each file's time clamped to its run's epoch."""
    import createrepo_c as cr

    from gfxpack.repo.rpmfile import read_rpm

    repo = tmp_path / "repo"
    _publish_all(builds, repo)  # the 2nd and 3rd publishes write from the record
    pool = repo / "rpm/Packages"
    repomd = (repo / "rpm/repodata/repomd.xml").read_text()
    primary = re.search(r'<location href="([^"]*-primary\.xml\.gz)"', repomd)
    assert primary is not None
    # Each run's packages by name, the runs in the order published.
    listed = gzip.decompress((repo / "rpm" / primary[1]).read_bytes()).decode()
    names = [Path(h).name for h in re.findall(r'<location href="([^"]+\.rpm)"', listed)]
    assert sorted(names) == sorted(p.name for p in pool.glob("*.rpm"))
    assert [n for n in names if "8.2.0" in n] == sorted(n for n in names if "8.2.0" in n)
    writers = {"primary": cr.PrimaryXmlFile, "filelists": cr.FilelistsXmlFile,
               "other": cr.OtherXmlFile}  # fmt: skip
    for kind, writer in writers.items():
        href = re.search(rf'<location href="([^"]*-{kind}\.xml\.gz)"', repomd)
        assert href is not None
        ours = gzip.decompress((repo / "rpm" / href[1]).read_bytes())
        path = tmp_path / f"{kind}.xml.gz"
        xml = writer(str(path))
        xml.set_num_of_pkgs(len(names))
        for name in names:
            package = read_rpm(str(pool / name), f"Packages/{name}")
            # The file's time, clamped to the epoch of the run that published it.
            run = next(i for i, v in enumerate(VERSIONS) if f"-{v}-" in name)
            package.time_file = min(package.time_file, EPOCH + run * 10 * DAY)
            xml.add_pkg(package)
        xml.close()
        assert ours == gzip.decompress(path.read_bytes()), kind


def test_prune_of_no_repository_makes_nothing(tmp_path):
    missing = tmp_path / "none"
    result = CliRunner().invoke(cli, ["stream", "prune", "--repo", str(missing), "--retain", "dev"])
    assert result.exit_code == 1
    assert result.output.count("error:") == 1 and "no repository" in result.output
    assert not missing.exists()


def test_a_builds_record_naming_a_path_is_refused(builds, tmp_path):
    repo = tmp_path / "repo"
    _publish_all(builds, repo)
    planted = tmp_path / "planted.deb"
    planted.write_bytes(b"keep")
    with sqlite3.connect(repo / DATABASE) as db:
        db.execute("INSERT INTO build_files VALUES (1, '../../../planted.deb')")
    before = _files(repo)
    result = CliRunner().invoke(
        cli, ["stream", "prune", "--repo", str(repo), "--retain", "1builds"]
    )
    assert result.exit_code == 1
    assert result.output.count("error:") == 1 and DATABASE in result.output
    assert "'../../../planted.deb' is not a package file name" in result.output
    assert planted.read_bytes() == b"keep" and _files(repo) == before


def test_prune_by_age_removes_the_builds_older_than_the_window(builds, tmp_path):
    repo = tmp_path / "repo"
    _publish_all(builds, repo)  # published at EPOCH, EPOCH + 10 days, EPOCH + 20 days
    # dev keeps 30 days: at EPOCH + 35 days only the build of EPOCH is older.
    result = prune(repo, Retention.parse("dev"), _at(EPOCH + 35 * DAY))
    assert result["removed_versions"] == ["8.2.0-1"]
    assert [b.version for b in read_builds(repo)] == ["8.2.1-1", "8.2.2-1"]
    assert not any("8.2.0-1" in n for n in _pool(repo))
    assert any("8.2.1-1" in n for n in _pool(repo))


def test_a_pruned_file_stays_while_a_kept_index_names_it(builds, tmp_path):
    """With the indexes of the last 3 publishes kept, a pruned build leaves the indexes
    at once and the pools only when the last kept generation naming it is gone: a
    machine that read the Release of before the prune still downloads what it names."""
    repo = tmp_path / "repo"
    _publish_all(builds, repo, keep=3)
    release = (repo / "apt/dists/stable/Release").read_text()
    gone = {n for n in _pool(repo) if "8.2.0-1" in n}
    result = prune(repo, Retention.parse("2builds"), _at(EPOCH + 30 * DAY))
    assert set(result["removed_files"]) == gone and result["deleted_files"] == []
    assert gone <= _pool(repo) and "8.2.0-1" not in _indexed(repo)
    # The earlier Release's Packages is still fetched by hash, and its files are there.
    lines = release.split("SHA256:")[1].strip().splitlines()
    old = {name: digest for digest, _, name in (line.split() for line in lines)}
    by_hash = repo / "apt/dists/stable/main/binary-amd64/by-hash/SHA256"
    assert (by_hash / old["main/binary-amd64/Packages"]).is_file()
    # Two more generations: the last one naming 8.2.0 is out of the three kept.
    for day, version in ((40, "8.2.1"), (50, "8.2.2")):
        result = publish(builds[version], repo, "stable", EPOCH + day * DAY, retain=None)
        assert result.formats
    assert gone <= _pool(repo)  # the same builds again change no index: no new generation
    result = prune(repo, Retention.parse("1builds"), _at(EPOCH + 60 * DAY))
    assert result["removed_versions"] == ["8.2.1-1"] and gone <= _pool(repo)
    # Each format's generations are its own: a third publish that changes both.
    names = ["amdrocm-base8.2_8.2.2-1_amd64.deb", "amdrocm-base8.2-8.2.2-1.x86_64.rpm"]
    # (What needs them goes uninstallable: --force; test_kept_dependencies.py.)
    result = remove(repo, [], names, _at(EPOCH + 70 * DAY), force=True)
    assert set(result["deleted_files"]) == gone and not gone & _pool(repo)


def test_stream_list_shows_the_builds_and_where_they_came_from(builds, tmp_path):
    nightly, weekly = tmp_path / "nightly", tmp_path / "weekly"
    _publish_all(builds, nightly)
    runner = CliRunner()
    promote = ["stream", "promote", "--from", str(nightly), "--to", str(weekly),
               "--version", "8.2.1-1", "--from-stream", "nightly"]  # fmt: skip
    result = runner.invoke(cli, promote, env={"SOURCE_DATE_EPOCH": str(EPOCH + 40 * DAY)})
    assert result.exit_code == 0, result.output
    listed = runner.invoke(cli, ["stream", "list", "--repo", str(weekly), "--json"])
    assert listed.exit_code == 0, listed.output
    document = json.loads(listed.output)
    (build,) = document["builds"]
    assert (build["version"], build["published"]) == ("8.2.1-1", EPOCH + 40 * DAY)
    assert build["promoted_from"] == {"stream": "nightly", "published": EPOCH + 10 * DAY}
    assert sorted(build["files"]) == sorted(p for p in _pool(weekly))
    assert document["suite"] == "stable" and document["packages"]["deb"] > 0
    text = runner.invoke(cli, ["stream", "list", "--repo", str(nightly)]).output
    assert text.splitlines()[0].startswith(f"{nightly}: suite stable, ")
    builds = [line.split()[0] for line in text.splitlines()[1:] if " UTC " in line]
    assert builds == [f"{v}-1" for v in VERSIONS]
    assert "promoted from nightly" in runner.invoke(cli, ["stream", "list", "--repo",
                                                          str(weekly)]).output  # fmt: skip
    missing = runner.invoke(cli, ["stream", "list", "--repo", str(tmp_path / "none")])
    assert missing.exit_code == 1 and "no repository gfxpack published" in missing.output


def test_a_repository_keeps_its_suite_and_names(builds, tmp_path):
    """What users' machines know a repository by stays from run to run: a prune writes
    the Release with the Origin and Codename it was published with, and a run that
    asks for another suite is refused (a repository has one)."""
    repo = tmp_path / "repo"
    runner = CliRunner()
    for version in VERSIONS[:2]:
        result = runner.invoke(cli, ["repo", "--in", str(builds[version]), "--out", str(repo),
                                     "--suite", "rocm", "--origin", "AMD ROCm",
                                     "--codename", "rocm8"])  # fmt: skip
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["stream", "prune", "--repo", str(repo), "--retain", "1builds"])
    assert result.exit_code == 0, result.output
    release = (repo / "apt/dists/rocm/Release").read_text()
    assert "Origin: AMD ROCm\n" in release and "Codename: rocm8\n" in release
    again = runner.invoke(cli, ["repo", "--in", str(builds["8.2.2"]), "--out", str(repo)])
    assert again.exit_code == 0 and "(suite rocm)" in again.output  # the recorded suite
    other = runner.invoke(cli, ["repo", "--in", str(builds["8.2.2"]), "--out", str(repo),
                                "--suite", "stable"])  # fmt: skip
    assert other.exit_code == 1 and "its apt suite is rocm; a repository has one" in other.output
