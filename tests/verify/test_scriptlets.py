"""Maintainer scripts run for real: installing amdrocm-core8.2-gfx942 registers the
release with update-alternatives (/opt/rocm/core and its companions point at the
release's prefix), removing it deregisters, and the root is as it was before.

rpm runs scriptlets chrooted into --root, so the rpm root gets a shell,
update-alternatives and ldconfig copied from this machine (tests/verify/clients.py);
dpkg runs them chrootless with DPKG_ROOT, which the DEB scripts honour."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from gfxpack.formats import DEB, RPM, PackageFormat
from gfxpack.views import reachable
from tests.conftest import dpkg_root, run
from tests.verify.clients import shell_root

pytestmark = pytest.mark.slow
TARGET = "amdrocm-core8.2-gfx942"
PREFIX = "/opt/rocm/core-8.2"
# What the package managers keep about themselves (their databases and logs) and the
# dynamic linker's cache, which the ldconfig scriptlets rewrite.
BOOKKEEPING = (
    "etc/ld.so.cache",
    "root/.rpmdb",
    "var/lib/rpm",
    "usr/lib/sysimage/rpm",
    "var/lib/dpkg",
    "var/log",
)


def snapshot(root: Path) -> dict[str, str]:
    """path -> what is there (a file's sha256, a link's target, 'dir'), the package
    managers' own records left out."""
    tree = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            relative = path.relative_to(root).as_posix()
            if relative.startswith(BOOKKEEPING):
                continue
            if path.is_symlink():
                tree[relative] = "-> " + os.readlink(path)
            elif path.is_dir():
                tree[relative] = "dir"
            else:
                tree[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return tree


def closure(release, fmt: PackageFormat) -> list[Path]:
    names = {p.key for p in reachable(release.plan, TARGET, fmt)}
    return [path for key, path in release.files(fmt).items() if key in names]


def assert_registered(root: Path) -> None:
    link = root / "opt/rocm/core"
    assert link.is_symlink() and os.readlink(link) == "/etc/alternatives/rocm-core"
    assert os.readlink(root / "etc/alternatives/rocm-core") == PREFIX
    assert os.readlink(root / "etc/alternatives/rocm-lib") == f"{PREFIX}/lib"
    assert os.readlink(root / "opt/rocm/lib") == "/etc/alternatives/rocm-lib"


def test_rpm_scriptlets_register_and_removal_cleans_up(example_release, tmp_path):
    root = shell_root(tmp_path / "root")
    before = snapshot(root)
    files = closure(example_release, RPM)
    # --nodeps: the root has the tools the scripts run, not the system packages.
    run("rpm", "--root", str(root), "-i", "--nodeps", *map(str, files))
    assert_registered(root)
    assert (root / "etc/ld.so.cache").is_file()  # the packages' %post ran ldconfig
    names = run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\\n").stdout.split()
    assert TARGET in names
    run("rpm", "--root", str(root), "-e", "--nodeps", *names)
    assert not (root / "opt/rocm/core").is_symlink()
    # Everything is gone but /opt/rocm, empty: the relocatable packages' prefix
    # (/opt/rocm/core-8.2) is theirs, the directory it sits in is no package's (rpm
    # made it), so rpm leaves it. The DEBs own it, and dpkg removes it (below).
    after = snapshot(root)
    assert after == {**before, "opt/rocm": "dir"}
    assert not any((root / "opt/rocm").iterdir())


def test_deb_maintainer_scripts_register_and_removal_cleans_up(example_release, tmp_path):
    root = dpkg_root(tmp_path / "root")
    before = snapshot(root)
    files = closure(example_release, DEB)
    dpkg = ["dpkg", "--root", str(root), "--force-script-chrootless", "--force-depends"]
    run(*dpkg, "-i", *map(str, files))
    assert_registered(root)
    status = run("dpkg-query", "--root", str(root), "-W", "-f=${Package}\\n").stdout.split()
    assert TARGET in status
    run(*dpkg, "--purge", *status)
    assert not (root / "opt/rocm/core").is_symlink()
    assert snapshot(root) == before
