"""The repository backends: one per format, looked up by the format's name."""

from __future__ import annotations

from pathlib import Path

from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.repo.backends import backend
from gfxpack.repo.setup_package import SetupPackage
from gfxpack.repo.trust import PublicKey, key_bytes, key_path


def test_each_format_has_its_repository_backend(tmp_path: Path) -> None:
    assert [backend(fmt).fmt for fmt in FORMATS] == [DEB, RPM]
    assert backend(DEB).pool(tmp_path) == tmp_path / "pool" / "main"
    assert backend(RPM).pool(tmp_path) == tmp_path / "Packages"


def test_each_format_publishes_its_key_and_setup_files_where_its_clients_read_them(
    tmp_path: Path,
) -> None:
    key = PublicKey(binary=b"\x99binary", armored=b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    setup = SetupPackage("rocm-repo", "https://repo.example.com/rocm", "stable")
    # apt's signed-by takes a binary keyring; dnf's and zypper's gpgkey an armored key.
    assert (key_bytes(DEB, key), key_bytes(RPM, key)) == (key.binary, key.armored)
    assert key_path(DEB, tmp_path).parent == tmp_path
    assert key_path(RPM, tmp_path).parent == tmp_path / RPM.repo_dir
    assert dict(backend(DEB).setup_files(setup, key)) == {
        "/etc/apt/sources.list.d/rocm-repo.sources": setup.sources_text().encode(),
        "/usr/share/keyrings/rocm-repo-archive-keyring.gpg": key.binary,
    }
    assert set(dict(backend(RPM).setup_files(setup, key))) == {
        "/etc/yum.repos.d/rocm-repo.repo",
        "/etc/zypp/repos.d/rocm-repo.repo",
        "/etc/pki/rpm-gpg/RPM-GPG-KEY-rocm-repo",
    }
    # Only RPMs carry their own signatures; Debian signs the repository.
    assert (DEB.signs_packages, RPM.signs_packages) == (False, True)
    base = "https://repo.example.com/rocm"
    assert (
        backend(DEB)
        .setup_package_lines(base, "r_1.0-1_all.deb")["apt"]
        .startswith(
            'd=$(mktemp -d) && curl -fsSLo "$d"/r_1.0-1_all.deb '
            f"{base}/apt/pool/main/r_1.0-1_all.deb && "
        )
    )
    assert backend(RPM).setup_package_lines(base, "r-1.0-1.noarch.rpm") == {
        "dnf": f"dnf install -y {base}/rpm/Packages/r-1.0-1.noarch.rpm",
        "zypper": f"rpm --import {base}/rpm/repodata/repomd.xml.key && "
        f"zypper install -y {base}/rpm/Packages/r-1.0-1.noarch.rpm",
    }
