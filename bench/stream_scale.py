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
(the target for gfxpack: at most 1.2x the time, memory flat).

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

    def available(self) -> bool:
        raise NotImplementedError

    def create(self, repo: Path) -> None:
        """An empty repository at ``repo`` (gfxpack repo makes its own)."""

    def add(self, repo: Path, build: Path) -> list[str]:
        """The command that publishes ``build`` into ``repo``."""
        raise NotImplementedError


class Gfxpack(Tool):
    name = "gfxpack repo"
    exe = str(Path(sys.executable).with_name("gfxpack"))

    def available(self) -> bool:
        return Path(self.exe).exists()

    def add(self, repo: Path, build: Path) -> list[str]:
        return [self.exe, "repo", "--in", str(build), "--out", str(repo), "-q"]


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
    tools: list[Tool] = [Gfxpack(), Reprepro(), Aptly(), Createrepo()]
    tools = [t for t in tools if t.available()]
    print(
        f"{arguments.nightlies} nightlies x {arguments.packages} packages per format "
        f"({arguments.nightlies * arguments.packages} per format), add 1 more; "
        f"best of {arguments.repeat}"
    )
    # The full repository of each tool, made once; every run adds to a fresh copy.
    full = {}
    for tool in tools:
        full[tool.name] = work / "full" / tool.name.split()[0]
        populate(tool, full[tool.name], old)
    best: dict[tuple[str, str], tuple[float, int]] = {}
    for round_ in range(arguments.repeat):
        for tool in tools:
            for kind in ("empty", "full"):
                repo = work / f"run-{round_}-{kind}-{tool.name.split()[0]}"
                if kind == "full":
                    # cp -a keeps hard links: aptly's published pool links its own.
                    subprocess.run(["cp", "-a", full[tool.name], repo], check=True)
                    if isinstance(tool, Aptly):  # its config names its root
                        (repo / "aptly.conf").write_text(f'{{"rootDir": "{repo}"}}')
                else:
                    populate(tool, repo, [])
                # The copy's dirty pages written out first: a tool that syncs its own
                # files must not pay for writing out the copy (none of them made it).
                os.sync()
                seconds, kib = measure(tool.add(repo, new))
                key = (tool.name, kind)
                previous = best.get(key, (float("inf"), 0))
                best[key] = (min(previous[0], seconds), max(previous[1], kib))
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
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
