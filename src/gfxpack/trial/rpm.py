"""dnf and zypper into a throwaway root: the .rpm clients of try-install.

``dnf --installroot`` and ``zypper --root`` with their own configuration, repository
files, cache and log in the client directory. rpm runs scriptlets chrooted into the
root, which gets this machine's ``/bin/sh``, ``update-alternatives`` and ``ldconfig``
for them (:mod:`gfxpack.trial.scriptlets`). Both clients put their cache and log
inside the root unless named from it (:func:`beside`). dnf can install without
running any scriptlet (``--no-scripts``); zypper cannot.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from gfxpack.formats import RPM, PackageFormat
from gfxpack.sandbox import URL
from gfxpack.trial.scriptlets import scriptlet_sources, scriptlet_tools
from gfxpack.trial.serving import serve
from gfxpack.trial.tools import Steps

# The release dnf's $releasever is (the bundled Enterprise Linux 9 list's).
RPM_RELEASEVER = "9"


def repo_section(name: str, url: str) -> str:
    """A dnf/zypper .repo section for an unsigned repository (signatures are verify's)."""
    return (
        f"[{name}]\nname={name}\nbaseurl={url}\nenabled=1\nmetadata_expire=0\n"
        "gpgcheck=0\nrepo_gpgcheck=0\n"
    )


def dnf_options(home: Path, root: Path, scripts: bool = True, from_root: bool = False) -> list[str]:
    """dnf's options for its own configuration, repository files (``home/repos.d``), cache
    and log, installing into ``root``; without ``scripts``, no scriptlet or trigger
    runs. dnf puts the cache and log inside the root unless ``from_root`` names them
    from it (:func:`beside`): then dnf must run in ``root`` (its working directory)."""
    for directory in ("repos.d", "cache", "log"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    conf = home / "dnf.conf"
    conf.write_text("[main]\nplugins=False\n", encoding="utf-8")
    cache, log = (beside(root, home / d) if from_root else str(home / d) for d in ("cache", "log"))
    return [
        *("-c", str(conf), "--installroot", str(root)),
        f"--setopt=reposdir={home / 'repos.d'}",
        f"--setopt=cachedir={cache}",
        f"--setopt=logdir={log}",
        f"--releasever={RPM_RELEASEVER}",
        "--disableplugin=*",
        *([] if scripts else ["--setopt=tsflags=noscripts,notriggers"]),
        "-y",
    ]


def zypper_options(home: Path, root: Path, from_root: bool = False) -> list[str]:
    """zypper's options for its own repository files (``home/repos.d``) and caches,
    installing into ``root``; ``from_root`` as for :func:`dnf_options`. (Its log goes
    where ``ZYPP_LOGFILE`` says: :func:`zypper_environment`.)"""
    for directory in ("repos.d", "cache"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    cache = beside(root, home / "cache") if from_root else str(home / "cache")
    return [
        *("--non-interactive", "--root", str(root)),
        *("--reposd-dir", str(home / "repos.d"), "--cache-dir", cache),
    ]


def zypper_environment(home: Path) -> dict[str, str]:
    """zypper's log in ``home`` (by default it appends to this machine's
    /var/log/zypper.log, whatever ``--root`` says)."""
    return {"ZYPP_LOGFILE": str(home / "zypper.log")}


def beside(root: Path, directory: Path) -> str:
    """``directory`` as a path the client reaches from ``root``: dnf and zypper put their
    cache and log directories inside the install root (they prefix the root to them), so
    a client directory beside the root is named from the root with ``..``. dnf also
    uses the path as given (hawkey's log), so it runs in the root, where both readings
    lead to the same place.

    >>> beside(Path("/tmp/r"), Path("/tmp/gfxpack-try-install-client-1/cache"))
    '../gfxpack-try-install-client-1/cache'
    """
    return os.path.relpath(os.path.realpath(directory), os.path.realpath(root))


class RpmClient:
    """What dnf and zypper share: rpm's database, scriptlets chrooted, an rpm-md
    repository; each names its own options (:meth:`options`)."""

    name: str
    command: str
    package: str
    fmt: PackageFormat = RPM
    tools: tuple[tuple[str, str], ...] = (("rpm", "rpm"), ("ldd", "libc-bin"))
    database = "rpm"
    why_scripts_run: str | None = None

    def options(self, home: Path, root: Path, scripts: bool) -> tuple[list[str], dict[str, str]]:
        """Its options and environment, its configuration under ``home`` (where its
        repository files go in ``repos.d``), for an install into ``root`` run in it."""
        raise NotImplementedError

    def check(self) -> None:
        scriptlet_sources()  # one error naming a tool the chrooted scriptlets need

    def suite(self, repository: Path, suite: str | None) -> str:
        return ""  # an rpm-md repository has none

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
        steps.run(["rpm", "--root", str(root), "--initdb"], "making the rpm database")
        scriptlet_tools(root)
        if stand_ins:
            # The stand-ins' own dependencies may be system packages the list leaves out.
            command = ["rpm", "--root", str(root), "-i", "--nodeps", "--noscripts"]
            steps.run([*command, *map(str, stand_ins)], "installing the stand-ins with rpm")
        home = home / self.name
        options, env = self.options(home, root, scripts)
        with contextlib.ExitStack() as stack:
            # In the sandbox the repository is served on its own loopback; without one
            # (dnf --no-scripts), from this process.
            sandboxed = steps.sandbox is not None
            url = URL if sandboxed else stack.enter_context(serve(repository))
            (home / "repos.d/try-install.repo").write_text(repo_section("try-install", url))
            served = repository if sandboxed else None
            # In the root, as beside() says.
            command = [self.command, *options, "install", *names]
            steps.run(command, f"{self.command} install", env, serve=served, cwd=root)

    def listing(self, root: Path) -> list[str]:
        return ["rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\t%{EVR}\t\n[%{FILENAMES}\n]"]


class DnfClient(RpmClient):
    name = "dnf"
    command = "dnf"
    package = "dnf"

    def options(self, home: Path, root: Path, scripts: bool) -> tuple[list[str], dict[str, str]]:
        return dnf_options(home, root, scripts, from_root=True), {}


class ZypperClient(RpmClient):
    name = "zypper"
    command = "zypper"
    package = "zypper"
    why_scripts_run: str | None = "zypper cannot"

    def options(self, home: Path, root: Path, scripts: bool) -> tuple[list[str], dict[str, str]]:
        return zypper_options(home, root, from_root=True), zypper_environment(home)
