"""A release engineer's year: a nightly every day, a weekly promoted every Monday, each
repository pruned to its RFC0012 window, while clients keep updating.

Day by day (SOURCE_DATE_EPOCH moves a day at a time), one nightly build of PACKAGES tiny
packages per format is published into the nightly repository with ``--retain
nightly`` (its last 120 builds); every Monday that day's nightly is promoted into the
weekly repository with ``--retain weekly`` (52 weeks). Meanwhile apt-get update and
dnf makecache run in a loop against both repositories served over loopback HTTP, each
with its own state (a machine following the stream): every run must succeed, and
every package set it reads must be one a publish wrote whole.

Printed: the publish time over the year (first and last month, to show it does not grow
with the repository), each repository's builds, pool files and size at the end against
what its policy says, and the client runs.

    python bench/stream_year.py [--days 365] [--packages 50] [--work DIR]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import stream_scale  # bench/, beside this script: the nightly's packages
from gfxpack import trial
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.repo.stream import read_builds

DAY = 86_400
START = 1_767_571_200  # Monday 2026-01-05 00:00 UTC
GFXPACK = str(Path(sys.executable).with_name("gfxpack"))
Snapshot = frozenset[tuple[str, str]]


def nightly(where: Path, day: int, packages: int) -> tuple[Path, str]:
    """Day ``day``'s nightly build (stream_scale's packages, with the index.json that
    makes them a build of version 8.2.0~nightlyDDD-1) and its version."""
    build = stream_scale.nightly(where, day, packages)
    listed = []
    for path in sorted(build.iterdir()):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        listed.append({"file": path.name, "size": len(data), "sha256": digest})
    version = f"8.2.0~nightly{day:03d}"
    index = {"rocm_version": version, "release": "1", "files": listed}
    (build / "index.json").write_text(json.dumps(index))
    return build, f"{version}-1"


def gfxpack(epoch: int, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [GFXPACK, *args, "-q"] if args[0] == "repo" else [GFXPACK, *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env={"SOURCE_DATE_EPOCH": str(epoch), "PATH": "/usr/bin:/bin"},
    )
    return time.perf_counter() - started


def written(repo: Path) -> tuple[Snapshot, Snapshot]:
    """The package sets a publish left in ``repo``: apt's Packages, rpm-md's primary."""
    packages = (repo / "apt/dists/stable/main/binary-amd64/Packages").read_text()
    apt = frozenset((s["Package"], s["Version"]) for s in parse_stanzas(packages))
    repomd = (repo / "rpm/repodata/repomd.xml").read_text()
    href = re.search(r'<location href="([^"]*primary\.xml\.gz)"', repomd)
    assert href is not None
    primary = gzip.decompress((repo / "rpm" / href[1]).read_bytes()).decode()
    found = re.findall(r'<name>([^<]+)</name>.*?ver="([^"]+)" rel="([^"]+)"', primary, re.S)
    return apt, frozenset((n, f"{v}-{r}") for n, v, r in found)


class Client:
    """apt-get and dnf with their own state, following one repository."""

    def __init__(self, home: Path, url: str) -> None:
        self.apt = trial.apt_options(home / "apt", trial.dpkg_database(home / "apt-root"))
        self.dnf = trial.dnf_options(home / "dnf", home / "dnf-root")
        (home / "apt/sources.list").write_text(f"deb [trusted=yes] {url}/apt stable main\n")
        (home / "dnf/repos.d/s.repo").write_text(trial.repo_section("s", f"{url}/rpm"))

    def update(self) -> tuple[Snapshot, Snapshot]:
        run = subprocess.run(["apt-get", *self.apt, "-q", "update"], capture_output=True, text=True)
        if run.returncode or "W:" in run.stdout + run.stderr:
            raise RuntimeError(f"apt-get update: {run.stdout}{run.stderr}")
        targets = ["apt-get", *self.apt, "indextargets", "--format", "$(FILENAME)",
                   "Created-By: Packages"]  # fmt: skip
        (lists,) = subprocess.run(targets, capture_output=True, text=True).stdout.split()
        cat = ["/usr/lib/apt/apt-helper", "cat-file", lists]
        text = subprocess.run(cat, capture_output=True, text=True, check=True).stdout
        apt = frozenset((s["Package"], s["Version"]) for s in parse_stanzas(text))
        run = subprocess.run(["dnf", *self.dnf, "makecache"], capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"dnf makecache: {run.stdout}{run.stderr}")
        query = ["dnf", *self.dnf, "-q", "--cacheonly", "repoquery", "--qf", "%{name} %{evr}"]
        out = subprocess.run(query, capture_output=True, text=True, check=True).stdout
        rpm = frozenset(tuple(line.split(" ")) for line in out.splitlines() if line)
        return apt, rpm  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--packages", type=int, default=50)
    parser.add_argument("--work", type=Path)
    arguments = parser.parse_args()
    package = Path(__import__("gfxpack").__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    work = Path(arguments.work or tempfile.mkdtemp(prefix="stream-year-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    repos = {"nightly": work / "nightly", "weekly": work / "weekly"}
    sets: dict[str, list[tuple[Snapshot, Snapshot]]] = {name: [] for name in repos}
    seen: dict[str, list[tuple[Snapshot, Snapshot]]] = {name: [] for name in repos}
    failures: list[str] = []
    times: dict[str, list[float]] = {"nightly": [], "weekly": []}
    done = threading.Event()
    lock = threading.Lock()

    def follow(name: str, url: str) -> None:
        client = Client(work / f"client-{name}", url)
        while not done.is_set():
            if not (repos[name] / "rpm/repodata/repomd.xml").exists():
                time.sleep(0.2)
                continue
            try:
                got = client.update()
            except Exception as e:  # reported at the end
                failures.append(f"{name}: {e}")
                continue
            with lock:
                seen[name].append(got)

    with trial.serve(work) as url:
        threads = [threading.Thread(target=follow, args=(name, f"{url}/{name}")) for name in repos]
        for thread in threads:
            thread.start()
        try:
            for day in range(arguments.days):
                epoch = START + day * DAY
                build, version = nightly(work / "builds", day, arguments.packages)
                seconds = gfxpack(epoch, "repo", "--in", str(build), "--out",
                                  str(repos["nightly"]), "--retain", "nightly")  # fmt: skip
                times["nightly"].append(seconds)
                with lock:
                    sets["nightly"].append(written(repos["nightly"]))
                if day % 7 == 0:  # START is a Monday
                    seconds = gfxpack(
                        epoch, "stream", "promote", "--from", str(repos["nightly"]),
                        "--to", str(repos["weekly"]), "--version", version,
                        "--from-stream", "nightly", "--retain", "weekly",
                    )  # fmt: skip
                    times["weekly"].append(seconds)
                    with lock:
                        sets["weekly"].append(written(repos["weekly"]))
                shutil.rmtree(build)
                if day % 30 == 29:
                    recent = statistics.median(times["nightly"][-30:])
                    print(f"day {day + 1}: a nightly publish takes {recent:.2f} s (median of 30)",
                          flush=True)  # fmt: skip
        finally:
            done.set()
            for thread in threads:
                thread.join()
    # apt and dnf run one after the other: each format's set is checked on its own.
    torn = {
        name: [
            (fmt, got[fmt])
            for got in seen[name]
            for fmt in (0, 1)
            if got[fmt] not in {published[fmt] for published in sets[name]}
        ]
        for name in repos
    }
    print(f"\n{arguments.days} days, {arguments.packages} packages per format a nightly")
    for name, found in times.items():
        first, last = found[:30], found[-30:]
        print(f"{name:8} publishes: {len(found)}; median of the first 30 "
              f"{statistics.median(first):.2f} s, of the last 30 {statistics.median(last):.2f} s, "
              f"max {max(found):.2f} s")  # fmt: skip
    # A build exactly 52 weeks old is still inside the window (retention.py).
    last = arguments.days - 1
    weekly = [day for day in range(0, arguments.days, 7) if day >= last - 364]
    expected = {"nightly": min(arguments.days, 120), "weekly": len(weekly)}
    for name, repo in repos.items():
        builds = read_builds(repo)
        pool = [p for d in ("apt/pool/main", "rpm/Packages") for p in (repo / d).iterdir()]
        size = sum(p.stat().st_size for p in repo.rglob("*") if p.is_file())
        print(f"{name:8} builds kept {len(builds)} (policy: {expected[name]}), pool files "
              f"{len(pool)} ({len(builds) * arguments.packages * 2} named by kept builds), "
              f"{size / 2**20:.1f} MiB on disk")  # fmt: skip
        print(f"{name:8} client updates: {len(seen[name])}, each a whole published set: "
              f"{not torn[name]}")  # fmt: skip
    if failures:
        print(f"client failures: {len(failures)}; first: {failures[0][:2000]}")
    ok = not failures and not any(torn.values())
    print("every client run succeeded and saw one whole set" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
