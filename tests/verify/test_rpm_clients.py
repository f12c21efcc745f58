"""dnf and zypper install from the signed rpm-md repository over HTTP into a throwaway root,
checking every package's signature (gpgcheck=1) and the repository's
(repo_gpgcheck=1) against the published key; system packages come from a local
repository of stubs (see tests/verify/clients.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gfxpack.formats import RPM
from gfxpack.verify.rules import arch_of
from gfxpack.views import reachable
from tests.conftest import build_example, run
from tests.verify.clients import Dnf, repo_section, shell_root, stub_system_repo
from tests.verify.helpers import serve
from tests.verify.signed import SETUP, publish_signed, signed_build

pytestmark = pytest.mark.slow
TARGET = "amdrocm-core8.2-gfx942"


@pytest.fixture(scope="module")
def system_repo(tmp_path_factory) -> Path:
    return stub_system_repo(tmp_path_factory.mktemp("system"))


@pytest.fixture(scope="module")
def served(signed_repo):
    return signed_repo


def dnf_for(home: Path, url: str, system_url: str) -> Dnf:
    repos = repo_section("rocm", f"{url}/rpm", f"{url}/rpm/RPM-GPG-KEY-gfxpack")
    repos += "\n" + repo_section("system", system_url, None)
    return Dnf(home / "dnf", home / "root", repos)


def test_dnf_installs_the_gfx942_closure_with_signatures_checked(
    served, system_repo, example_release, example_artifacts, rsa_key, tmp_path
):
    url, repo = served
    expected = {p.rpm.name for p in reachable(example_release.plan, TARGET, RPM)}
    with serve(system_repo) as system_url:
        dnf = dnf_for(tmp_path, url, system_url)
        dnf.run("--setopt=tsflags=noscripts", "install", TARGET)
        installed = dnf.installed()
        gfxpack_installed = {n for n in installed if n.startswith("amdrocm")}
        assert gfxpack_installed == expected
        assert {arch_of(n) for n in gfxpack_installed} == {None, "gfx942"}
        # dnf imported the published key into the root to check the packages.
        keys = run("rpm", "--root", str(dnf.root), "-q", "gpg-pubkey").stdout.split()
        assert keys == [
            f"gpg-pubkey-{rsa_key.fingerprint[-8:].lower()}-" + keys[0].rsplit("-", 1)[1]
        ]
        assert installed[TARGET] == "8.2.0-1"
        # 8.2.1, signed, published into the same repository: dnf upgrade moves to it.
        build = build_example(example_artifacts, tmp_path / "build-8.2.1", version="8.2.1")
        signed = signed_build(rsa_key, build.out, tmp_path / "signed-8.2.1")
        publish_signed(rsa_key, signed, repo, url)
        dnf.run("--setopt=tsflags=noscripts", "upgrade")
        upgraded = dnf.installed()
    assert upgraded[TARGET] == "8.2.1-1"
    assert {upgraded[n] for n in gfxpack_installed} == {"8.2.1-1"}


def tampered_copy(repo: Path, where: Path) -> Path:
    copy = where / "tampered"
    shutil.copytree(repo, copy)
    return copy


def test_dnf_refuses_a_package_whose_signature_does_not_match(
    served, system_repo, tmp_path, rsa_key
):
    _, repo = served
    copy = tampered_copy(repo, tmp_path)
    # Every version of it (another test may have published 8.2.1): its last byte, in
    # the compressed payload, which the header+payload signature covers.
    packages = sorted((copy / "rpm/Packages").glob(f"{TARGET}-8.2.*.rpm"))
    assert packages
    for package in packages:
        data = bytearray(package.read_bytes())
        data[-1] ^= 0xFF
        package.write_bytes(bytes(data))
    with serve(copy) as url, serve(system_repo) as system_url:
        dnf = dnf_for(tmp_path, url, system_url)
        refused = dnf.run("--setopt=tsflags=noscripts", "install", TARGET, check=False)
    assert refused.returncode != 0
    assert TARGET not in dnf.installed()
    assert (
        "checksum" in (refused.stdout + refused.stderr).lower()
        or "signature" in (refused.stdout + refused.stderr).lower()
    )


def test_dnf_refuses_a_repomd_changed_after_signing(served, system_repo, tmp_path):
    _, repo = served
    copy = tampered_copy(repo, tmp_path)
    repomd = copy / "rpm/repodata/repomd.xml"
    repomd.write_text(repomd.read_text().replace("<revision>", "<revision>1", 1))
    with serve(copy) as url, serve(system_repo) as system_url:
        dnf = dnf_for(tmp_path, url, system_url)
        refused = dnf.run("install", TARGET, check=False)
    assert refused.returncode != 0
    assert "GPG" in refused.stdout + refused.stderr or "signature" in refused.stderr.lower()


def test_the_setup_package_configures_dnf(served, system_repo, tmp_path):
    """The rpm setup package alone (its .repo file and key) makes TARGET installable."""
    url, repo = served
    setup = next((repo / "rpm/Packages").glob(f"{SETUP}-*.noarch.rpm"))
    with serve(system_repo) as system_url:
        home = tmp_path / "dnf"
        root = tmp_path / "root"
        run("rpm", "--root", str(root), "--initdb")
        run("rpm", "--root", str(root), "-i", "--nodeps", str(setup))
        repo_file = root / f"etc/yum.repos.d/{SETUP}.repo"
        text = repo_file.read_text()
        assert "gpgcheck=1\nrepo_gpgcheck=1\n" in text and f"baseurl={url}/rpm\n" in text
        dnf = Dnf(home, root, repo_section("system", system_url, None))
        # dnf reads the installed .repo file; its gpgkey= names the installed key.
        shutil.copy(repo_file, dnf.reposdir / repo_file.name)
        key_path = root / f"etc/pki/rpm-gpg/RPM-GPG-KEY-{SETUP}"
        (dnf.reposdir / repo_file.name).write_text(
            text.replace("gpgkey=file:///etc/pki", f"gpgkey=file://{root}/etc/pki")
        )
        assert key_path.is_file()
        dnf.run("--setopt=tsflags=noscripts", "install", TARGET)
    assert TARGET in dnf.installed()


def zypper(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["zypper", "--non-interactive", "--gpg-auto-import-keys", "--root", str(root)]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False)


def test_zypper_installs_the_gfx942_closure_with_signatures_checked(
    served, system_repo, example_release, rsa_key, tmp_path
):
    """zypper, with the published key imported by --gpg-auto-import-keys; its root has
    a shell, so the %post scriptlets (update-alternatives) run too."""
    url, _ = served
    root = shell_root(tmp_path / "root")
    with serve(system_repo) as system_url:
        (root / "etc/zypp/repos.d").mkdir(parents=True)
        (root / "etc/zypp/repos.d/test.repo").write_text(
            repo_section("rocm", f"{url}/rpm", f"{url}/rpm/RPM-GPG-KEY-gfxpack")
            + "\n"
            + repo_section("system", system_url, None)
        )
        result = zypper(root, "install", "--no-recommends", TARGET)
    assert result.returncode == 0, result.stdout + result.stderr
    assert rsa_key.fingerprint[-8:] in result.stdout.replace(" ", "")  # the key it imported
    installed = run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\\n").stdout.split()
    expected = {p.rpm.name for p in reachable(example_release.plan, TARGET, RPM)}
    assert {n for n in installed if n.startswith("amdrocm")} == expected
    assert (root / "opt/rocm/core").is_symlink()  # %post ran update-alternatives


def test_zypper_refuses_a_repomd_changed_after_signing(served, system_repo, tmp_path):
    _, repo = served
    copy = tampered_copy(repo, tmp_path)
    repomd = copy / "rpm/repodata/repomd.xml"
    repomd.write_text(repomd.read_text().replace("<revision>", "<revision>1", 1))
    root = shell_root(tmp_path / "root")
    with serve(copy) as url:
        (root / "etc/zypp/repos.d").mkdir(parents=True)
        (root / "etc/zypp/repos.d/test.repo").write_text(
            repo_section("rocm", f"{url}/rpm", f"{url}/rpm/RPM-GPG-KEY-gfxpack")
        )
        result = zypper(root, "install", "--no-recommends", TARGET)
    assert result.returncode != 0
    assert "Signature verification failed" in result.stdout + result.stderr
