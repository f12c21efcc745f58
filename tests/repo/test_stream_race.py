"""apt-get update and dnf makecache over loopback HTTP, again and again, while a stream's
repository takes 20 adds, promotions and prunes: every client run succeeds, and every
set of packages a client read is one that an operation wrote completely."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from gfxpack import trial
from gfxpack.repo import publish
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.retention import Retention
from gfxpack.repo.stream import promote, prune
from tests.conftest import build_example, generate_example

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("apt-get") is None or shutil.which("dnf") is None,
        reason="needs apt-get and dnf",
    ),
]
DAY = 86_400
EPOCH = 1_700_000_000
VERSIONS = tuple(f"8.2.{n}" for n in range(11))  # 8.2.0 published first, then 10 more
CLIENT_RUNS = 40  # each client's runs at most, and the seconds they may take
DEADLINE = 60

Snapshot = frozenset[tuple[str, str]]  # (package, VERSION-RELEASE)


def _apt_set(packages: str) -> Snapshot:
    return frozenset((s["Package"], s["Version"]) for s in parse_stanzas(packages))


def _rpm_set(repo: Path) -> Snapshot:
    """What the repository's primary.xml names, read as dnf would reach it (repomd first)."""
    repomd = (repo / "rpm/repodata/repomd.xml").read_text()
    href = re.search(r'<location href="([^"]*primary\.xml\.gz)"', repomd)
    assert href is not None
    primary = gzip.decompress((repo / "rpm" / href[1]).read_bytes()).decode()
    found = re.findall(r'<name>([^<]+)</name>.*?<version epoch="0" ver="([^"]+)" rel="([^"]+)"',
                       primary, re.S)  # fmt: skip
    return frozenset((name, f"{ver}-{rel}") for name, ver, rel in found)


def _written(repo: Path) -> tuple[Snapshot, Snapshot]:
    packages = (repo / "apt/dists/stable/main/binary-amd64/Packages").read_text()
    return _apt_set(packages), _rpm_set(repo)


def _operations(builds: dict[str, Path], nightly: Path, repo: Path) -> list:
    """20 operations: each newer build added (odd ones directly, even ones promoted from
    the nightly stream), each followed by a prune to the last 3 builds."""
    operations = []
    for day, version in enumerate(VERSIONS[1:], start=1):
        when = EPOCH + day * DAY
        if day % 2:
            operations.append(lambda v=version, t=when: publish(builds[v], repo, "stable", t))
        else:
            operations.append(
                lambda v=version, t=when: promote(
                    nightly, repo, f"{v}-1", "nightly", PublishOptions("stable", t)
                )
            )
        operations.append(
            lambda t=when: prune(repo, Retention(builds=3), PublishOptions("stable", t))
        )
    return operations


def test_clients_updating_during_adds_promotions_and_prunes_see_whole_sets(tmp_path):
    artifacts = generate_example(tmp_path / "artifacts", 0.02)
    builds = {v: build_example(artifacts, tmp_path / v, version=v).out for v in VERSIONS}
    nightly, repo = tmp_path / "nightly", tmp_path / "repo"
    for day, version in enumerate(VERSIONS):
        if day and not day % 2:
            publish(builds[version], nightly, "stable", EPOCH + day * DAY)
    publish(builds[VERSIONS[0]], repo, "stable", EPOCH)
    written = [_written(repo)]
    operations = _operations(builds, nightly, repo)
    assert len(operations) == 20
    failures: list[BaseException] = []

    def publisher() -> None:
        try:
            for operation in operations:
                operation()
                written.append(_written(repo))
                time.sleep(0.05)  # let the clients read between operations too
        except BaseException as e:  # reported by the test below
            failures.append(e)

    home = tmp_path / "clients"
    apt = trial.apt_options(home / "apt", trial.dpkg_database(home / "apt-root"))
    dnf = trial.dnf_options(home / "dnf", home / "dnf-root")
    apt_seen: list[Snapshot] = []
    dnf_seen: list[Snapshot] = []
    racing_runs = 0
    with trial.serve(repo) as url:
        (home / "apt/sources.list").write_text(f"deb [trusted=yes] {url}/apt stable main\n")
        section = trial.repo_section("stream", f"{url}/rpm")
        (home / "dnf/repos.d/stream.repo").write_text(section)
        thread = threading.Thread(target=publisher)
        thread.start()
        deadline = time.monotonic() + DEADLINE
        try:
            for _ in range(CLIENT_RUNS):
                racing = thread.is_alive()
                racing_runs += racing
                apt_seen.append(_apt_update(apt))
                dnf_seen.append(_dnf_makecache(dnf))
                if not racing or time.monotonic() > deadline:
                    break
        finally:
            thread.join()
        # The same clients, once every operation is done, read the last set: a top file
        # replaced within the second of the one a client holds gets a later mtime, so
        # the server's Last-Modified never tells it "not modified".
        apt_seen.append(_apt_update(apt))
        dnf_seen.append(_dnf_makecache(dnf))
    assert not failures, failures
    assert racing_runs >= 2  # each client ran while the operations did, more than once
    apt_written = {a for a, _ in written}
    rpm_written = {r for _, r in written}
    # Each add changed the set, and each prune but the first two (3 builds or fewer).
    assert len(written) == 21 and len(apt_written) == len(rpm_written) == 19
    for seen, whole in ((apt_seen, apt_written), (dnf_seen, rpm_written)):
        torn = [s for s in seen if s not in whole]
        assert not torn, (
            sorted({v for _, v in torn[0]}),
            [sorted({v for _, v in w}) for w in whole],
            len(torn[0]),
            [len(w) for w in whole],
        )
    # The last runs came after the last operation: they read its set.
    assert apt_seen[-1] == written[-1][0] and dnf_seen[-1] == written[-1][1]
    assert {v for _, v in written[-1][0]} == {f"{v}-1" for v in VERSIONS[-3:]}


def _apt_update(options: list[str]) -> Snapshot:
    """apt-get update (it must succeed); the package set it now holds."""
    result = subprocess.run(["apt-get", *options, "-q", "update"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "W:" not in result.stdout + result.stderr, result.stdout + result.stderr
    # The Packages file apt keeps (compressed as it likes): every version it read.
    targets = [
        "apt-get",
        *options,
        "indextargets",
        "--format",
        "$(FILENAME)",
        "Created-By: Packages",
    ]
    (lists,) = subprocess.run(targets, capture_output=True, text=True, check=True).stdout.split()
    cat = ["/usr/lib/apt/apt-helper", "cat-file", lists]
    return _apt_set(subprocess.run(cat, capture_output=True, text=True, check=True).stdout)


def _dnf_makecache(options: list[str]) -> Snapshot:
    """dnf makecache (it must succeed); the package set it cached."""
    result = subprocess.run(["dnf", *options, "makecache"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    query = subprocess.run(
        ["dnf", *options, "-q", "--cacheonly", "repoquery", "--qf", "%{name} %{evr}"],
        capture_output=True,
        text=True,
    )
    assert query.returncode == 0, query.stdout + query.stderr
    return frozenset(tuple(line.split(" ")) for line in query.stdout.splitlines() if line)
