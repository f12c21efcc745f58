"""gfxpack repo's published key and printed setup lines, and its refusals."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, RPM
from tests.verify.helpers import write_package


def repo(home: str | None, *args: str):
    env = {"GNUPGHOME": home} if home else {}
    return CliRunner().invoke(cli, ["repo", *args], env=env)


def test_signed_repo_publishes_the_key_its_setup_lines_name(gnupg, tmp_path):
    home, fingerprint = gnupg
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    out = tmp_path / "repo"
    result = repo(home, "--in", str(build), "--out", str(out), "--sign-key", fingerprint)
    assert result.exit_code == 0, result.output
    apt_line = next(line for line in result.stdout.splitlines() if line.startswith("  apt:"))
    dnf_line = next(line for line in result.stdout.splitlines() if line.startswith("  dnf:"))
    # apt's line copies the published keyring to where its signed-by names it.
    apt_words = shlex.split(apt_line.removeprefix("  apt:"))
    keyring = Path(apt_words[apt_words.index("cp") + 1])
    assert keyring == (out / "gfxpack-archive-keyring.gpg").resolve()
    installed = apt_words[apt_words.index("cp") + 2]
    assert f"[signed-by={installed}]" in apt_words[apt_words.index("printf") + 2]
    # The dnf line's printf writes one line of the .repo section per argument.
    dnf_words = shlex.split(dnf_line.removeprefix("  dnf:"))
    section = dnf_words[dnf_words.index("printf") + 2 : dnf_words.index("|")]
    gpgkey = Path(
        next(w for w in section if w.startswith("gpgkey=")).removeprefix("gpgkey=file://")
    )
    assert gpgkey == (out / "rpm/RPM-GPG-KEY-gfxpack").resolve()
    assert "gpgcheck=1" in section and "repo_gpgcheck=1" in section
    # The published keys verify the repository's signatures (gpgv, not our reader).
    release = out / "apt/dists/stable"
    subprocess.run(["gpgv", "--keyring", str(keyring), str(release / "InRelease")], check=True)
    dearmored = tmp_path / "rpm-key.gpg"
    subprocess.run(
        ["gpg", "--batch", "--yes", "--dearmor", "-o", str(dearmored), gpgkey], check=True
    )
    repomd = out / "rpm/repodata/repomd.xml"
    subprocess.run(["gpgv", "--keyring", str(dearmored), f"{repomd}.asc", str(repomd)], check=True)
    assert section[0] == "[gfxpack]" and f"baseurl={out.resolve().as_uri()}/rpm" in section


def test_setup_package_options_are_checked_before_anything_is_written(gnupg, tmp_path):
    home, fingerprint = gnupg
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    out = tmp_path / "repo"
    cases = [
        ((), "--setup-package needs --sign-key and --base-url"),
        (("--sign-key", fingerprint), "--setup-package needs --sign-key and --base-url"),
        (("--sign-key", fingerprint, "--base-url", "ftp://x"), "--base-url 'ftp://x'"),
    ]
    for extra, message in cases:
        result = repo(home, "--in", str(build), "--out", str(out), "--setup-package", "r", *extra)
        assert result.exit_code == 1 and message in result.stderr, result.output
    result = repo(
        home, "--in", str(build), "--out", str(out), "--sign-key", fingerprint,
        "--base-url", "http://127.0.0.1/x", "--setup-package", "Bad Name",
    )  # fmt: skip
    assert result.exit_code == 1 and "--setup-package 'Bad Name'" in result.stderr
    assert not out.exists()


def test_quiet_prints_each_formats_summary_only(tmp_path):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    write_package(build, RPM, "tool")
    result = repo(None, "--in", str(build), "--out", str(tmp_path / "repo"), "-q")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["deb", "rpm"]
    assert all("1 new, 1 in" in line for line in lines)
