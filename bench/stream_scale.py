"""Adding one nightly to a long-lived repository, side by side with reprepro, aptly and
createrepo_c.

A repository holds NIGHTLIES nightly builds of PACKAGES tiny packages per format
(names amdrocm-libN, version 8.2.0~nightlyK: 30 x 300 = 9,000 packages per format).
Each tool then adds one more nightly to a copy of it, and, for comparison, publishes
that nightly into an empty repository. Runs alternate between the tools (a round is
one of each), so drift in the machine hits all of them alike; each figure is the best
of --repeat rounds. Every run is a child process: its peak resident memory is the
child's own (getrusage RUSAGE_CHILDREN of a fresh runner). Printed per tool: seconds
and peak RSS for the add to the full repository and to the empty one, and their ratio
(the target for gfxpack: at most 1.2x the time, memory flat); then each half of
gfxpack against its peers on the same add (the target: faster than each).

gfxpack runs three ways: both formats in one repository, and each format alone (the
apt half against reprepro and aptly, the rpm-md half against createrepo_c). Its full
repositories are built in place for every round, as a nightly job leaves them: a copy
gives every pool file a new inode and change time, so gfxpack's first run in a copy
hashes every pool file again (the record's check that none changed since it was
published), once; that run is printed on its own line ("first run in a copy"). The
peers keep no such stamp, so a copy of their repository is the same to them.

    python bench/stream_scale.py [--nightlies 30] [--packages 300] [--repeat 3]
        [--small] [--work DIR]

--small is 10 nightlies of 100 packages. Tools that are not installed are skipped
(apt-get install reprepro aptly createrepo-c; pip's createrepo_c ships the CLI too).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gfxpack.formats import FORMATS, PackageInfo

EPOCH = "1767225600"  # 2026-01-01: every run dates its indexes alike
# Runs argv in a child, prints wall seconds and the child's peak RSS (KiB).
RUNNER = """
import resource, subprocess, sys, time
started = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def nightly(work: Path, number: int, packages: int) -> Path:
    """One nightly build: PACKAGES tiny .deb and .rpm files, no payload."""
    build = work / f"nightly{number:03d}"
    build.mkdir(parents=True)
    for index in range(packages):
        for fmt in FORMATS:
            info = PackageInfo(
                name=f"amdrocm-lib{index}",
                version=f"8.2.0~nightly{number:03d}",
                release="1",
                arch="amd64" if fmt.name == "deb" else "x86_64",
                summary=f"synthetic library {index}",
                maintainer="Bench <bench@example.com>",
                section="libs",
                priority="optional",
                mtime=int(EPOCH),
            )
            with open(build / fmt.filename(info), "wb") as file:
                fmt.write(info, file)
    return build


def measure(argv: list[str], cwd: Path | None = None) -> tuple[float, int]:
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, *argv],
        check=True,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH},
    )
    seconds, kib = result.stdout.split()
    return float(seconds), int(kib)


class Tool:
    name = ""
    # Whether a copy of its repository (new inodes and change times) is the same to it.
    copyable = True

    def available(self) -> bool:
        raise NotImplementedError

    def create(self, repo: Path) -> None:
        """An empty repository at ``repo`` (gfxpack repo makes its own)."""

    def add(self, repo: Path, build: Path) -> list[str]:
        """The command that publishes ``build`` into ``repo``."""
        raise NotImplementedError


class Gfxpack(Tool):
    exe = str(Path(sys.executable).with_name("gfxpack"))
    copyable = False  # see the module: a copy's first run hashes every pool file again

    def __init__(self, fmt: str | None = None) -> None:
        self.fmt = fmt  # None: both formats; else only the build's .FMT files
        self.name = f"gfxpack repo {f'.{fmt} only' if fmt else '.deb + .rpm'}"

    def available(self) -> bool:
        return Path(self.exe).exists()

    def add(self, repo: Path, build: Path) -> list[str]:
        return [self.exe, "repo", "--in", str(half(build, self.fmt)), "--out", str(repo), "-q"]


def half(build: Path, fmt: str | None) -> Path:
    """``build``, or its ``fmt`` files alone in ``build/fmt`` (hard links: gfxpack
    copies what it publishes)."""
    if fmt is None:
        return build
    alone = build / fmt
    if not alone.is_dir():
        alone.mkdir()
        for path in build.glob(f"*.{fmt}"):
            os.link(path, alone / path.name)
    return alone


class Reprepro(Tool):
    name = "reprepro includedeb"

    def available(self) -> bool:
        return shutil.which("reprepro") is not None

    def create(self, repo: Path) -> None:
        (repo / "conf").mkdir(parents=True)
        # Debian's reprepro (5.3) keeps one version of each package per suite: the
        # add replaces the previous nightly's (it has no Limit: field to keep them all).
        (repo / "conf" / "distributions").write_text(
            "Codename: stable\nComponents: main\nArchitectures: amd64\n"
        )

    def add(self, repo: Path, build: Path) -> list[str]:
        debs = sorted(str(p) for p in build.glob("*.deb"))
        return ["reprepro", "-b", str(repo), "includedeb", "stable", *debs]


class Aptly(Tool):
    name = "aptly repo add + publish"

    def available(self) -> bool:
        return shutil.which("aptly") is not None

    def create(self, repo: Path) -> None:
        repo.mkdir(parents=True)
        (repo / "aptly.conf").write_text(f'{{"rootDir": "{repo}"}}')
        self._run(repo, "repo", "create", "-distribution=stable", "nightly")
        self._run(repo, "publish", "repo", "-skip-signing", "-architectures=amd64", "nightly")

    def _run(self, repo: Path, *args: str) -> None:
        subprocess.run(
            ["aptly", f"-config={repo / 'aptly.conf'}", *args], check=True, capture_output=True
        )

    def add(self, repo: Path, build: Path) -> list[str]:
        # Adding and republishing is what apt clients need to see the new packages.
        script = (
            f"aptly -config={repo}/aptly.conf repo add nightly {build}/*.deb && "
            f"aptly -config={repo}/aptly.conf publish update -skip-signing stable"
        )
        return ["sh", "-c", script]


class Createrepo(Tool):
    name = "createrepo_c --update"
    exe = shutil.which("createrepo_c") or str(Path(sys.executable).with_name("createrepo_c"))

    def available(self) -> bool:
        return Path(self.exe).exists()

    def create(self, repo: Path) -> None:
        repo.mkdir(parents=True)

    def add(self, repo: Path, build: Path) -> list[str]:
        # createrepo_c indexes a directory: the nightly's files are copied in first (a
        # hard link, so the copy costs nothing), then --update reuses the old metadata.
        script = f"ln {build}/*.rpm {repo}/ && {self.exe} --update --quiet {repo}"
        return ["sh", "-c", script]


def populate(tool: Tool, repo: Path, builds: list[Path]) -> None:
    tool.create(repo)
    for build in builds:
        measure(tool.add(repo, build))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nightlies", type=int, default=30)
    parser.add_argument("--packages", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="10 nightlies of 100 packages")
    parser.add_argument("--work", type=Path)
    arguments = parser.parse_args()
    if arguments.small:
        arguments.nightlies, arguments.packages = 10, 100
    # Compiled once, as pip install does (this machine sets PYTHONDONTWRITEBYTECODE).
    package = Path(__import__("gfxpack").__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    work = Path(arguments.work or tempfile.mkdtemp(prefix="stream-scale-"))
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    builds = [nightly(work, n, arguments.packages) for n in range(arguments.nightlies + 1)]
    old, new = builds[:-1], builds[-1]
    tools: list[Tool] = [Gfxpack(), Gfxpack("deb"), Reprepro(), Aptly()]
    tools += [Gfxpack("rpm"), Createrepo()]
    tools = [t for t in tools if t.available()]
    print(
        f"{arguments.nightlies} nightlies x {arguments.packages} packages per format "
        f"({arguments.nightlies * arguments.packages} per format), add 1 more; "
        f"best of {arguments.repeat}"
    )
    # The full repository of each peer, made once; every run adds to a fresh copy.
    # gfxpack's are made in place for each round (see the module).
    full = {}
    for tool in tools:
        full[tool.name] = work / "full" / slug(tool)
        if tool.copyable:
            populate(tool, full[tool.name], old)
    best: dict[tuple[str, str], tuple[float, int]] = {}
    for round_ in range(arguments.repeat):
        for tool in tools:
            runs = {kind: work / f"run-{round_}-{kind}-{slug(tool)}" for kind in ("empty", "full")}
            populate(tool, runs["empty"], [])
            if tool.copyable:
                copy(full[tool.name], runs["full"])
            else:
                populate(tool, runs["full"], old)
                runs["copy"] = work / f"run-{round_}-copy-{slug(tool)}"
                copy(runs["full"], runs["copy"])
            for kind, repo in runs.items():
                # The copy's dirty pages written out first: a tool that syncs its own
                # files must not pay for writing out the copy (none of them made it).
                os.sync()
                seconds, kib = measure(tool.add(repo, new))
                key = (tool.name, kind)
                previous = best.get(key, (float("inf"), 0))
                best[key] = (min(previous[0], seconds), max(previous[1], kib))
            for repo in runs.values():
                shutil.rmtree(repo)
    print(
        f"{'tool':26} {'empty s':>8} {'full s':>8} {'ratio':>6} {'empty MiB':>10} {'full MiB':>9}"
    )
    for tool in tools:
        empty, full_run = best[(tool.name, "empty")], best[(tool.name, "full")]
        print(
            f"{tool.name:26} {empty[0]:8.2f} {full_run[0]:8.2f} {full_run[0] / empty[0]:5.2f}x "
            f"{empty[1] / 1024:10.0f} {full_run[1] / 1024:9.0f}"
        )
    for tool in tools:
        if (tool.name, "copy") in best:
            seconds, kib = best[(tool.name, "copy")]
            print(f"{tool.name}, first run in a copy: {seconds:.2f} s, {kib / 1024:.0f} MiB")
    print("the same add, gfxpack's time over each peer's (under 1.00x: gfxpack faster):")
    for ours, peers in (("deb", (Reprepro, Aptly)), ("rpm", (Createrepo,))):
        mine = best.get((Gfxpack(ours).name, "full"))
        for tool in tools:
            if mine and isinstance(tool, peers):
                theirs = best[(tool.name, "full")][0]
                print(f"  .{ours} half against {tool.name}: {mine[0] / theirs:.2f}x")
    shutil.rmtree(work)


def slug(tool: Tool) -> str:
    return "-".join(tool.name.replace("+", "").replace(".", "").split())


def copy(repo: Path, to: Path) -> None:
    # cp -a keeps hard links: aptly's published pool links its own.
    subprocess.run(["cp", "-a", repo, to], check=True)
    if (to / "aptly.conf").exists():  # its config names its root
        (to / "aptly.conf").write_text(f'{{"rootDir": "{to}"}}')


if __name__ == "__main__":
    main()
