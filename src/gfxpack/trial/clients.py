"""The package managers try-install installs with: one adapter per client, each owning
what its format needs (as repo/backends.py owns one repository backend per format), so
that the run (:mod:`gfxpack.trial.run`) asks the client and never which one it is.

- apt (apt-get, .debs): :class:`gfxpack.trial.apt.AptClient`;
- dnf and zypper (.rpms): :class:`gfxpack.trial.rpm.DnfClient`,
  :class:`gfxpack.trial.rpm.ZypperClient`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gfxpack.formats import DEB, RPM, PackageFormat
from gfxpack.trial.apt import AptClient
from gfxpack.trial.rpm import DnfClient, ZypperClient
from gfxpack.trial.tools import Steps, TrialError
from gfxpack.verify.universe import locate


class Client(Protocol):
    """A package manager that installs a repository's packages into a throwaway root."""

    name: str  # apt / dnf / zypper: the --client value
    command: str  # what runs
    package: str  # the Debian package of the command, for the hint when it is missing
    fmt: PackageFormat
    # the other tools it needs besides its command, each with the Debian package of it
    tools: tuple[tuple[str, str], ...]
    # the tool that keeps the root's package database and runs the packages' scripts
    database: str
    # why it cannot install without running the packages' scripts (None: it can,
    # --no-scripts)
    why_scripts_run: str | None

    def check(self) -> None:
        """One error when this machine lacks what an install needs besides the tools;
        checked before anything is made."""

    def suite(self, repository: Path, suite: str | None) -> str:
        """The suite of ``repository`` it installs from ('' where its format has none);
        one error when it cannot read one."""

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
        """Install the package files ``stand_ins`` without their dependencies, then
        ``names`` from ``repository`` (served to it over HTTP) into ``root``, with
        ``home`` as its client directory (configuration, state, cache, log), each tool
        run by ``steps``; without ``scripts``, none of the packages' scripts runs."""

    def listing(self, root: Path) -> list[str]:
        """The command that lists every package installed in ``root``: a line
        ``name<TAB>version<TAB>state`` per package (state ``ii`` or empty: installed),
        then a line per path it owns (:func:`gfxpack.trial.report.owned_files`)."""


# --client name -> the client, in the order the command offers them
CLIENTS: dict[str, Client] = {
    client.name: client for client in (AptClient(), DnfClient(), ZypperClient())
}


def client_named(name: str) -> Client:
    """The client of ``name``; one error listing the others when there is none."""
    chosen = CLIENTS.get(name)
    if chosen is None:
        raise TrialError(f"unknown client {name!r} (choose one of: {', '.join(CLIENTS)})")
    return chosen


def default_client(repo: Path) -> str:
    """dnf for a repository with an rpm-md side, else apt."""
    return "dnf" if locate(repo, RPM) is not None or locate(repo, DEB) is None else "apt"


def skipping_scripts() -> list[str]:
    """The clients that install without running the packages' scripts (--no-scripts)."""
    return [client.name for client in CLIENTS.values() if client.why_scripts_run is None]
