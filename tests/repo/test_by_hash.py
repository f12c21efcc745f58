"""apt's by-hash indexes and their generations: apt-get update with Acquire::By-Hash
"force" (it fetches every index at by-hash/SHA256/<digest> only) succeeds after every
publish, also for a client that still holds an earlier Release; indexes of older
generations are gone. And the Release's fields: Date, Valid-Until, Codename,
Architectures."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, PackageInfo
from gfxpack.formats.payload import Entry, with_parents
from gfxpack.repo import RepositoryNames, publish
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.verify.system import bundled
from tests.verify.helpers import Apt, serve, write_package

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get")
EPOCH = 1_700_000_000


def _build(tmp_path: Path, version: str) -> Path:
    build = tmp_path / f"build-{version}"
    write_package(build, DEB, "tool", version=version, files=(f"/opt/tool-{version}",))
    return build


def _release(out: Path) -> dict[str, str]:
    return parse_stanzas((out / "apt/dists/stable/Release").read_text())[0]


def _by_hash(release: dict[str, str]) -> set[str]:
    """The by-hash paths (under dists/stable) of every index ``release`` names."""
    paths = set()
    for line in release["SHA256"].strip().splitlines():
        sha256, _, name = line.split()
        paths.add(f"{name.rpartition('/')[0]}/by-hash/SHA256/{sha256}")
    return paths


def _apt(home: Path, url: str) -> Apt:
    apt = Apt(home, f"deb [trusted=yes] {url}/apt stable main\n", bundled(DEB))
    # Every index from by-hash/, never by its name: a missing one fails the update.
    apt.options.append("-oAcquire::By-Hash=force")
    return apt


def test_apt_fetches_by_hash_after_every_publish_and_with_an_earlier_release(tmp_path):
    out = tmp_path / "repo"
    keep = 2
    names = RepositoryNames(keep_generations=keep)
    releases: list[dict[str, str]] = []
    texts: list[str] = []
    stale = tmp_path / "stale"  # serves an earlier Release beside the live indexes
    (stale / "apt/dists/stable").mkdir(parents=True)
    with serve(out) as url, serve(stale) as stale_url:
        for n in range(keep + 2):
            publish(_build(tmp_path, f"8.{n}.0"), out, "stable", EPOCH + n, names=names)
            releases.append(_release(out))
            texts.append((out / "apt/dists/stable/Release").read_text())
            assert releases[-1]["Acquire-By-Hash"] == "yes"
            apt = _apt(tmp_path / f"apt-{n}", url)
            apt.run("update")
            # The newest, and the first still there (the indexes apt read are whole).
            assert apt.simulate("tool")["tool"][2] == f"8.{n}.0-1"
            assert apt.simulate("tool=8.0.0-1")["tool"][2] == "8.0.0-1"
        # A client that read the previous Release (just before the last publish).
        dist = stale / "apt/dists/stable"
        (dist / "Release").write_text(texts[-2])
        (dist / "main").symlink_to(out / "apt/dists/stable/main")
        (stale / "apt/pool").symlink_to(out / "apt/pool")
        apt = _apt(tmp_path / "apt-stale", stale_url)
        apt.run("update")
        assert apt.simulate("tool")["tool"][2] == f"8.{keep}.0-1"  # what that Release named
    dist = out / "apt/dists/stable"
    for release in releases[-keep:]:
        for path in _by_hash(release):
            data = (dist / path).read_bytes()
            assert hashlib.sha256(data).hexdigest() == path.rpartition("/")[2]
    # Generations older than the last ``keep`` are gone (their by-hash files only).
    gone = _by_hash(releases[0]) - set().union(*(_by_hash(r) for r in releases[-keep:]))
    assert gone
    assert not any((dist / path).exists() for path in gone)
    on_disk = {p.relative_to(dist).as_posix() for p in dist.rglob("by-hash/SHA256/*")}
    assert on_disk == set().union(*(_by_hash(r) for r in releases[-keep:]))


def test_a_release_replaced_within_its_second_is_fetched_again(tmp_path):
    """A web server says a file is unchanged when its mtime is not after the client's
    If-Modified-Since, in whole seconds: a Release replaced within the second of the
    one a client holds (here: one dated 2 s ahead, as a fast publisher's can be) must
    still reach the client, so each top file is given a later mtime than the last."""
    out = tmp_path / "repo"
    publish(_build(tmp_path, "8.0.0"), out, "stable", EPOCH)
    ahead = time.time() + 2
    for name in ("Release", "InRelease", "Release.gpg"):
        if (out / "apt/dists/stable" / name).exists():
            os.utime(out / "apt/dists/stable" / name, (ahead, ahead))
    with serve(out) as url:
        apt = _apt(tmp_path / "apt", url)
        apt.run("update")
        assert apt.simulate("tool")["tool"][2] == "8.0.0-1"
        publish(_build(tmp_path, "8.1.0"), out, "stable", EPOCH + 1)
        assert (out / "apt/dists/stable/Release").stat().st_mtime >= int(ahead) + 1
        apt.run("update")
        assert apt.simulate("tool")["tool"][2] == "8.1.0-1"


def test_release_fields_from_the_options(tmp_path):
    out = tmp_path / "repo"
    build = _build(tmp_path, "8.2.0")
    now = int(time.time())
    result = CliRunner().invoke(
        cli,
        [
            *("repo", "--in", str(build), "--out", str(out), "-q"),
            *("--suite", "rocm-stable", "--codename", "rocm8", "--valid-for", "7"),
        ],
        env={"SOURCE_DATE_EPOCH": str(now)},
    )
    assert result.exit_code == 0, result.output
    release = parse_stanzas((out / "apt/dists/rocm-stable/Release").read_text())[0]
    assert (release["Suite"], release["Codename"]) == ("rocm-stable", "rocm8")
    date = parsedate_to_datetime(release["Date"]).timestamp()
    assert date == now
    assert parsedate_to_datetime(release["Valid-Until"]).timestamp() == now + 7 * 86400
    with serve(out) as url:
        apt = Apt(tmp_path / "apt", f"deb [trusted=yes] {url}/apt rocm-stable main\n", "")
        apt.run("update")  # a Valid-Until in the future is accepted


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--codename", "a b", "--codename 'a b': expected a plain name"),
        ("--codename", "x/y", "--codename 'x/y': expected a plain name"),
        ("--keep-generations", "0", "--keep-generations 0: expected 1 to 10,000"),
        ("--valid-for", "-1", "--valid-for -1: expected a number of days"),
        # Past a time_t (and a Release date), and past any kept window: refused by name,
        # not an OverflowError from the clock or sqlite.
        ("--valid-for", str(10**30), f"--valid-for {10**30}: expected a number of days, 1 to"),
        ("--keep-generations", str(10**30), f"--keep-generations {10**30}: expected 1 to"),
    ],
)
def test_a_bad_release_option_is_one_error_and_writes_nothing(tmp_path, option, value, expected):
    out = tmp_path / "repo"
    build = _build(tmp_path, "8.2.0")
    result = CliRunner().invoke(cli, ["repo", "--in", str(build), "--out", str(out), option, value])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert expected in lines[0]
    assert not out.exists()


def _deb(out: Path, name: str, arch: str) -> None:
    info = PackageInfo(
        name=name,
        version="1.0",
        release="1",
        arch=arch,
        summary=name,
        description="A test package.",
        maintainer="gfxpack tests <tests@example.invalid>",
        license="MIT",
        entries=with_parents([Entry(f"/opt/{name}", "file", 0o644, size=1, data=b"x")], 0),
    )
    out.mkdir(parents=True, exist_ok=True)
    with open(out / DEB.filename(info), "wb") as file:
        DEB.write(info, file)


def test_architectures_lists_all_when_arch_independent_packages_exist(tmp_path):
    build = tmp_path / "build"
    _deb(build, "tool", "amd64")
    _deb(build, "docs", "all")
    out = tmp_path / "repo"
    publish(build, out, "stable", EPOCH)
    release = _release(out)
    assert release["Architectures"] == "amd64 all"
    dist = out / "apt/dists/stable"
    amd64 = parse_stanzas((dist / "main/binary-amd64/Packages").read_text())
    every = parse_stanzas((dist / "main/binary-all/Packages").read_text())
    assert {s["Package"] for s in amd64} == {"tool", "docs"}
    assert {s["Package"] for s in every} == {"docs"}
    with serve(out) as url:
        apt = _apt(tmp_path / "apt", url)
        apt.run("update")
        assert set(apt.simulate("tool", "docs")) == {"tool", "docs"}
