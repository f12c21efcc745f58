"""apt-get configured by nothing but the repository setup package: its deb822
.sources file (Signed-By) and its keyring, installed by dpkg into a throwaway root.

apt reads the .sources from the root; the Signed-By path names the keyring where
the package installs it (/usr/share/keyrings), so apt-get runs in a private mount
namespace where the root's /usr/share/keyrings is mounted over the machine's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gfxpack.formats import DEB
from gfxpack.verify.system import bundled
from gfxpack.views import reachable
from tests.conftest import dpkg_root, run
from tests.verify.helpers import Apt, serve
from tests.verify.signed import SETUP

pytestmark = pytest.mark.slow
TARGET = "amdrocm-blas8.2-gfx942"
KEYRINGS = "/usr/share/keyrings"


class SetupApt(Apt):
    """apt-get reading the sources of a root, with that root's keyrings in place."""

    def __init__(self, home: Path, root: Path) -> None:
        super().__init__(home, "", bundled(DEB))
        self.root = root
        self.options += ["-o", f"Dir::Etc::sourceparts={root}/etc/apt/sources.list.d"]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" ' + KEYRINGS + ' && exec "$@"',
            f"{self.root}{KEYRINGS}", "apt-get", *self.options, *args,
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if check:
            assert result.returncode == 0, f"apt-get {args}:\n{result.stdout}\n{result.stderr}"
        return result


def installed_setup(repo: Path, root: Path) -> Path:
    """``root`` with the setup .deb installed by dpkg."""
    dpkg_root(root)
    deb = next((repo / "apt/pool/main").glob(f"{SETUP}_*_all.deb"))
    run("dpkg", "--root", str(root), "--force-script-chrootless", "-i", str(deb))
    return root


def test_the_setup_package_alone_lets_apt_install_blas_for_gfx942(
    signed_repo, example_release, tmp_path
):
    url, repo = signed_repo
    root = installed_setup(repo, tmp_path / "root")
    sources = (root / f"etc/apt/sources.list.d/{SETUP}.sources").read_text()
    assert f"URIs: {url}/apt\n" in sources
    assert f"Signed-By: {KEYRINGS}/{SETUP}-archive-keyring.gpg\n" in sources
    assert (root / f"{KEYRINGS.lstrip('/')}/{SETUP}-archive-keyring.gpg").is_file()
    apt = SetupApt(tmp_path / "apt", root)
    apt.run("update")
    planned = apt.simulate(TARGET)
    expected = {p.deb.name for p in reachable(example_release.plan, TARGET)}
    assert set(planned) == expected
    assert {"amdrocm-blas-host8.2", "amdrocm-blas8.2-gfx942", "amdrocm-runtime8.2"} <= expected
    fetched = apt.download(TARGET)
    assert {deb.name.split("_")[0] for deb in fetched} == expected


def test_apt_refuses_an_inrelease_changed_after_signing(signed_repo, tmp_path):
    _, repo = signed_repo
    copy = tmp_path / "tampered"
    shutil.copytree(repo, copy)
    inrelease = copy / "apt/dists/stable/InRelease"
    inrelease.write_text(inrelease.read_text().replace("Label: gfxpack", "Label: tampered"))
    (copy / "apt/dists/stable/Release.gpg").unlink()
    root = installed_setup(repo, tmp_path / "root")
    with serve(copy) as url:
        sources = root / f"etc/apt/sources.list.d/{SETUP}.sources"
        text = sources.read_text()
        original = next(line for line in text.splitlines() if line.startswith("URIs:"))
        sources.write_text(text.replace(original, f"URIs: {url}/apt"))
        refused = SetupApt(tmp_path / "apt", root).run("update", check=False)
    assert refused.returncode != 0
    assert "BADSIG" in refused.stdout + refused.stderr
