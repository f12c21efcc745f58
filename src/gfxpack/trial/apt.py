"""apt-get into a throwaway root: the .deb client of try-install.

apt-get runs with its own sources list, state, cache and log in the client directory,
and dpkg with ``--root``; maintainer scripts run chrootless with ``DPKG_ROOT`` set,
which the DEB scripts honour (a script that does not writes into the sandbox's
read-only or private trees, never this machine's). dpkg runs every maintainer script,
so apt-get installs only in the sandbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gfxpack.formats import DEB, PackageFormat
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.repo.names import COMPONENT, SUITE
from gfxpack.sandbox import URL
from gfxpack.trial.tools import Steps, TrialError
from gfxpack.verify.universe import pick_suite

# The machine the stand-ins and apt-get pretend to be (the bundled lists' arch).
APT_ARCHITECTURE = "amd64"
# dpkg's options for a throwaway root: maintainer scripts run from this machine with
# DPKG_ROOT set (chrootless), and no syncs (which make an install survive a power cut).
DPKG_OPTIONS = ("--force-script-chrootless", "--force-unsafe-io")
DPKG_DIRECTORIES = (
    "var/lib/dpkg/info",
    "var/lib/dpkg/updates",
    "var/lib/dpkg/alternatives",
    "etc/alternatives",
)


def dpkg_database(root: Path) -> Path:
    """An empty dpkg database under ``root`` (for ``dpkg --root``); its status file."""
    for directory in DPKG_DIRECTORIES:
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "var/lib/dpkg/available").touch()
    status = root / "var/lib/dpkg/status"
    status.touch()
    return status


def apt_options(home: Path, status: Path, dpkg_root: Path | None = None) -> list[str]:
    """``-o`` options for apt-get with its own sources list (``home/sources.list``), keys,
    preferences, state, cache and dpkg ``status``: nothing of the machine's apt sources,
    keys or state is read or changed. The directories are made under ``home``. With
    ``dpkg_root``, dpkg installs into it and runs maintainer scripts chrootless."""
    for directory in (
        "state/lists/partial",
        "cache/archives/partial",
        "log",
        "sourceparts",
        "trustedparts",
        "preferencesparts",
    ):
        (home / directory).mkdir(parents=True, exist_ok=True)
    options: dict[str, str | Path] = {
        "Dir::Etc::sourcelist": home / "sources.list",
        "Dir::Etc::sourceparts": home / "sourceparts",
        "Dir::Etc::trusted": home / "trusted.gpg",
        "Dir::Etc::trustedparts": home / "trustedparts",
        "Dir::Etc::preferencesparts": home / "preferencesparts",
        "Dir::State": home / "state",
        "Dir::State::status": status,
        "Dir::Cache": home / "cache",
        "Dir::Log": home / "log",
        "APT::Architecture": APT_ARCHITECTURE,
        "APT::Sandbox::User": "root",
        "Acquire::Languages": "none",
        "Acquire::http::Proxy": "DIRECT",
        "Debug::NoLocking": "1",
    }
    flags = [f"-o{key}={value}" for key, value in options.items()]
    if dpkg_root is not None:
        flags += [f"-oDPkg::Options::={o}" for o in (f"--root={dpkg_root}", *DPKG_OPTIONS)]
    return flags


def components(repository: Path, suite: str) -> list[str]:
    """The components the suite's Release names (gfxpack repo writes one, main)."""
    release = repository / "dists" / suite / "Release"
    try:
        stanzas = parse_stanzas(release.read_text("utf-8")) if release.is_file() else []
    except (OSError, UnicodeDecodeError) as e:
        raise TrialError(f"{release}: cannot read: {e}") from None
    named = stanzas[0].get("Components", "").split() if stanzas else []
    return [c for c in named if SUITE.match(c)] or [COMPONENT]


class AptClient:
    name = "apt"
    command = "apt-get"
    package = "apt"
    fmt: PackageFormat = DEB
    tools: tuple[tuple[str, str], ...] = (("dpkg", "dpkg"), ("update-alternatives", "dpkg"))
    database = "dpkg"
    why_scripts_run: str | None = "dpkg runs every maintainer script"

    def check(self) -> None:
        pass  # dpkg runs the scripts with this machine's tools, in the sandbox

    def suite(self, repository: Path, suite: str | None) -> str:
        chosen = pick_suite(repository / "dists", suite)
        if not SUITE.match(chosen):
            raise TrialError(f"{repository / 'dists' / chosen}: not a suite name apt reads")
        return chosen

    def install(
        self,
        steps: Steps,
        home: Path,
        root: Path,
        stand_ins: Sequence[Path],
        repository: Path,
        suite: str,
        names: Sequence[str],
        scripts: bool,
    ) -> None:
        if steps.sandbox is None:  # dpkg --root is not chrooted: never outside the sandbox
            raise TrialError("apt-get installs only in the sandbox")
        status = dpkg_database(root)
        if stand_ins:
            # The stand-ins' own dependencies may be system packages the list leaves out.
            dpkg = ["dpkg", f"--root={root}", "--force-depends", *DPKG_OPTIONS]
            steps.run([*dpkg, "-i", *map(str, stand_ins)], "installing the stand-ins with dpkg")
        options = apt_options(home, status, root)
        line = f"deb [trusted=yes] {URL} {suite} {' '.join(components(repository, suite))}"
        (home / "sources.list").write_text(line + "\n")
        for command, what in (
            (["update"], f"apt-get update from {repository}"),
            (["-y", "install", *names], "apt-get install"),
        ):
            steps.run(["apt-get", *options, "-q", *command], what, serve=repository)

    def listing(self, root: Path) -> list[str]:
        return [
            *("dpkg-query", f"--root={root}", "-W"),
            "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n${db-fsys:Files}",
        ]
