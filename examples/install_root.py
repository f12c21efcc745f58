"""Install packages from a gfxpack repository into a throwaway root, with the real tools.

deb: the repository's apt/ side is served on 127.0.0.1 (``python -m http.server`` on
a free port, stopped afterwards) and apt-get installs into ROOT with its own
sources.list, state, cache and dpkg status (ROOT/var/lib/dpkg/status), so nothing
of the machine's apt or dpkg configuration is read or changed. The system
packages the release depends on (libc6, python3, ...) are the ones
``gfxpack verify`` assumes by default: its bundled Debian list is written into the
root's dpkg status as installed, so apt-get resolves against them as a real
Debian machine would. dpkg runs with ``--root`` and chrootless maintainer scripts.

rpm: libsolv resolves the packages against the rpm-md side and the bundled
Enterprise Linux list (as ``gfxpack verify --format rpm`` does), and
``rpm --root ROOT -i`` installs the resolved files (``--nodeps``: the empty root
holds no system packages; ``--noscripts``: scripts would run inside the root,
which has no shell).

    python examples/install_root.py --repo build/demo/repo --format deb \\
        --root build/demo/root-deb amdrocm-core8.2-gfx942
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from gfxpack.formats import DEB, RPM
from gfxpack.verify.resolution import resolve
from gfxpack.verify.system import bundled, read_system
from gfxpack.verify.universe import load

MARKER = ".gfxpack-throwaway-root"
DPKG_DIRECTORIES = (
    "var/lib/dpkg/info",
    "var/lib/dpkg/updates",
    "var/lib/dpkg/alternatives",
    "etc/alternatives",
)


class InstallFailed(RuntimeError):
    """A tool failed; the message holds its command line and output."""


def run(command: list[str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise InstallFailed(
            f"{' '.join(command[:1] + command[-3:])} failed ({result.returncode}):\n"
            f"{result.stdout}{result.stderr}"
        )
    return result.stdout


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """``python -m http.server`` for ``directory`` on a free port of 127.0.0.1; yields its
    URL and stops the server on the way out."""
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...) ..."
        match = re.search(r" port (\d+) ", banner)
        if match is None:
            raise InstallFailed(f"python -m http.server did not start: {banner!r}")
        yield f"http://127.0.0.1:{match[1]}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def system_status() -> str:
    """The bundled Debian system list as dpkg status stanzas (dpkg wants a maintainer and
    a description on every installed package)."""
    stanzas = [s for s in bundled(DEB).split("\n\n") if s.strip()]
    return "".join(
        f"{stanza.strip()}\nMaintainer: assumed installed <system@localhost>\n"
        "Description: a system package gfxpack verify assumes installed\n\n"
        for stanza in stanzas
    )


def apt_options(root: Path, home: Path) -> list[str]:
    options = {
        "Dir::Etc::sourcelist": home / "sources.list",
        "Dir::Etc::sourceparts": home / "parts",
        "Dir::Etc::trustedparts": home / "parts",
        "Dir::Etc::preferencesparts": home / "parts",
        "Dir::State": home / "state",
        "Dir::State::status": root / "var/lib/dpkg/status",
        "Dir::Cache": home / "cache",
        "Dir::Log": home / "log",
        "APT::Architecture": "amd64",
        "APT::Sandbox::User": "root",
        "Acquire::Languages": "none",
        "Acquire::http::Proxy": "DIRECT",
        "Debug::NoLocking": "1",
        "DPkg::Options::": f"--root={root}",
    }
    flags = [f"-o{key}={value}" for key, value in options.items()]
    return [*flags, "-oDPkg::Options::=--force-script-chrootless"]


def apt_install(repo: Path, root: Path, packages: list[str]) -> list[str]:
    """apt-get install ``packages`` from ``repo`` (gfxpack repo's output) into ``root``;
    the names of the packages now installed there."""
    root, home = root.resolve(), root.resolve().with_name(f"{root.name}.apt")
    for directory in DPKG_DIRECTORIES:
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "var/lib/dpkg/status").write_text(system_status())
    (root / "var/lib/dpkg/available").touch()
    for directory in ("state/lists/partial", "cache/archives/partial", "log", "parts"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    options = apt_options(root, home)
    with serve(repo / "apt") as url:
        (home / "sources.list").write_text(f"deb [trusted=yes] {url} stable main\n")
        run(["apt-get", *options, "-q", "update"])
        run(["apt-get", *options, "-q", "-y", "install", *packages])
    listing = run(["dpkg-query", f"--root={root}", "-W", "-f=${Package} ${db:Status-Abbrev}\\n"])
    system = {
        line.split(": ", 1)[1] for line in bundled(DEB).splitlines() if line.startswith("Package: ")
    }
    return sorted(
        name
        for name, state in (line.split(" ", 1) for line in listing.splitlines())
        if state.startswith("ii") and name not in system
    )


def rpm_install(repo: Path, root: Path, packages: list[str]) -> list[str]:
    """Resolve ``packages`` with libsolv and install the files with rpm into ``root``."""
    universe = load(repo, RPM, read_system(None, RPM))
    resolution = resolve(universe, packages)
    if not resolution.ok:
        raise InstallFailed("; ".join(resolution.problems))
    wanted = {(step.name, step.version) for step in resolution.steps}
    files = [
        str(repo / "rpm" / universe.location(s))
        for s in universe.packages()
        if (s.name, s.evr) in wanted
    ]
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    run(["rpm", "--root", str(root), "--initdb"])
    run(["rpm", "--root", str(root), "-i", "--nodeps", "--noscripts", *files])
    return sorted(run(["rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\\n"]).split())


def install(repo: Path, fmt: str, root: Path, packages: list[str]) -> list[str]:
    """A fresh ``root`` with ``packages`` installed by ``fmt``'s tools. An existing root is
    replaced only if this script made it (it leaves a marker file there)."""
    marker = root / MARKER
    if root.is_symlink() or (root.exists() and not marker.is_file()):
        raise InstallFailed(
            f"{root} exists and was not made by install_root.py; give a new directory"
        )
    for stale in (root, root.with_name(f"{root.name}.apt")):
        if stale.exists():
            shutil.rmtree(stale)
    root.mkdir(parents=True)
    marker.write_text("a throwaway install root; install_root.py replaces it\n")
    return (apt_install if fmt == "deb" else rpm_install)(repo, root, packages)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="gfxpack repo --out directory")
    parser.add_argument("--format", choices=("deb", "rpm"), required=True)
    parser.add_argument(
        "--root", type=Path, required=True, help="a new directory, or one this script made"
    )
    parser.add_argument("packages", nargs="+")
    args = parser.parse_args(argv)
    try:
        installed = install(args.repo, args.format, args.root, args.packages)
    except InstallFailed as e:
        sys.exit(f"error: {e}")
    tool = "apt-get" if args.format == "deb" else "rpm"
    print(f"{tool} installed {len(installed)} package(s) into {args.root}: {' '.join(installed)}")


if __name__ == "__main__":
    main()
