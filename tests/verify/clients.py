"""dnf and zypper, the clients Fedora, RHEL and SUSE users run, against a published
repository served on 127.0.0.1, each into a throwaway root.

The packages require system packages (glibc, numactl-libs, python3, ...) that an
empty root does not have. They come from a second, local repository of stub
RPMs written by gfxpack's own RPM writer from the system list ``gfxpack verify``
assumes (name, version and Provides of each, paths included; no files). That
repository is unsigned and is the only one with ``gpgcheck=0``: the repository
under test is checked with ``gpgcheck=1`` and ``repo_gpgcheck=1``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gfxpack.formats import RPM
from gfxpack.repo import publish
from gfxpack.trial import scriptlet_tools, stand_ins
from gfxpack.verify.system import read_system


def stub_system_repo(where: Path) -> Path:
    """An rpm-md repository (where/rpm) of stub packages standing for the system list:
    gfxpack try-install's stand-ins (name, version, Provides and Depends, no files)."""
    _, packages = read_system(None, RPM)
    stand_ins(RPM, packages, where / "stubs")
    root = where / "system-repo"
    publish(where / "stubs", root, "stable", 1_700_000_000)
    return root / "rpm"


def repo_section(name: str, url: str, key_url: str | None) -> str:
    """A .repo section: signed (gpgcheck and repo_gpgcheck with ``key_url``) or not."""
    checks = f"gpgcheck=1\nrepo_gpgcheck=1\ngpgkey={key_url}\n" if key_url else "gpgcheck=0\n"
    return f"[{name}]\nname={name}\nbaseurl={url}\nenabled=1\nmetadata_expire=0\n{checks}"


class Dnf:
    """dnf with its own configuration, repository files, cache and root."""

    def __init__(self, home: Path, root: Path, repos: str) -> None:
        self.root = root
        self.reposdir = home / "repos.d"
        self.reposdir.mkdir(parents=True, exist_ok=True)
        (home / "log").mkdir(exist_ok=True)
        (self.reposdir / "test.repo").write_text(repos)
        self.conf = home / "dnf.conf"
        self.conf.write_text("[main]\ninstall_weak_deps=False\nplugins=False\n")
        self.options = [
            "-c",
            str(self.conf),
            "--installroot",
            str(root),
            f"--setopt=reposdir={self.reposdir}",
            f"--setopt=cachedir={home / 'cache'}",
            "--setopt=logdir=" + str(home / "log"),
            "--releasever=9",
            "--disableplugin=*",
            "-y",
        ]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["dnf", *self.options, *args], capture_output=True, text=True, check=False
        )
        if check:
            assert result.returncode == 0, (
                f"dnf {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
            )
        return result

    def installed(self) -> dict[str, str]:
        """name -> version-release of every package in the root's rpm database."""
        listing = subprocess.run(
            ["rpm", "--root", str(self.root), "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\\n"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return dict(line.split(" ", 1) for line in listing.splitlines())


def shell_root(root: Path) -> Path:
    """``root`` with a shell, update-alternatives and ldconfig (and the C library they
    load) copied from this machine, as gfxpack try-install gives an rpm root, the
    directories update-alternatives keeps its state in, and an empty rpm database."""
    scriptlet_tools(root)
    subprocess.run(["rpm", "--root", str(root), "--initdb"], check=True)
    return root
