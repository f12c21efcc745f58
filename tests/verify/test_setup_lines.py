"""gfxpack repo's published key and printed setup lines, and its refusals."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, RPM
from tests.conftest import run
from tests.verify.clients import Dnf
from tests.verify.helpers import Apt, serve, write_package
from tests.verify.signed import gfxpack, signed_build


def repo(home: str | None, *args: str):
    env = {"GNUPGHOME": home} if home else {}
    return CliRunner().invoke(cli, ["repo", *args], env=env)


def sign_rpm(home: str, fingerprint: str, package: Path) -> None:
    """Sign ``package`` as gfxpack sign does (a signed repository takes signed RPMs)."""
    result = CliRunner().invoke(cli, ["sign", "--key", fingerprint, str(package)], env={
        "GNUPGHOME": home})  # fmt: skip
    assert result.exit_code == 0, result.output


def test_signed_repo_publishes_the_key_its_setup_lines_name(gnupg, tmp_path):
    home, fingerprint = gnupg
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    sign_rpm(home, fingerprint, write_package(build, RPM, "tool"))
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
    # The key beside repomd.xml's signature, the same as the one published at the root.
    assert gpgkey == (out / "rpm/repodata/repomd.xml.key").resolve()
    assert gpgkey.read_bytes() == (out / "rpm/RPM-GPG-KEY-gfxpack").read_bytes()
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


def test_the_rpm_md_key_goes_and_comes_with_the_signature(gnupg, tmp_path):
    """repomd.xml.key is the signing key as gpg exports it, made with the repodata; a run
    without the key is refused (machines set up with it would stop updating), an
    --unsigned one drops it with repomd.xml.asc, a signed one brings both back."""
    home, fingerprint = gnupg
    build = tmp_path / "build"
    sign_rpm(home, fingerprint, write_package(build, RPM, "tool"))
    out = tmp_path / "repo"
    repodata = out / "rpm/repodata"
    signed = ["--in", str(build), "--out", str(out), "--sign-key", fingerprint]
    assert repo(home, *signed).exit_code == 0
    exported = run("gpg", "--homedir", home, "--export", "--armor", fingerprint).stdout
    assert (repodata / "repomd.xml.key").read_text() == exported
    before = (repodata / "repomd.xml").read_bytes()
    forgot = repo(home, "--in", str(build), "--out", str(out))
    assert forgot.exit_code == 1 and f"its indexes are signed (key {fingerprint})" in forgot.output
    assert (repodata / "repomd.xml").read_bytes() == before
    assert repo(home, "--in", str(build), "--out", str(out), "--unsigned").exit_code == 0
    assert not (repodata / "repomd.xml.key").exists()
    assert not (repodata / "repomd.xml.asc").exists()
    assert repo(home, *signed).exit_code == 0
    assert (repodata / "repomd.xml.key").read_text() == exported


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


# --- the real clients on a small signed repository served on 127.0.0.1 -------------------

ORIGIN, LABEL = "ROCm Project", "ROCm 8.2 (test)"
REPO_ID, REPO_NAME = "rocm-test", 'ROCm 8.2 — the "test" repo\'s name'


@pytest.fixture(scope="module")
def signed_tool(rsa_key, tmp_path_factory) -> Path:
    """A build directory of one package of each format, the RPM signed."""
    base = tmp_path_factory.mktemp("signed-tool")
    build = base / "build"
    write_package(build, DEB, "tool", files=("/opt/tool/bin/tool",))
    write_package(build, RPM, "tool", files=("/opt/tool/bin/tool",))
    return signed_build(rsa_key, build, base / "signed")


@pytest.fixture(scope="module")
def small_signed(rsa_key, signed_tool, tmp_path_factory):
    """signed_tool published with --sign-key and every name option, served on
    127.0.0.1; yields (url, OUT, the printed lines)."""
    out = tmp_path_factory.mktemp("small-signed") / "repo"
    out.mkdir()
    with serve(out) as url:
        output = gfxpack(
            rsa_key, "repo", "--in", str(signed_tool), "--out", str(out),
            "--sign-key", rsa_key.fingerprint, "--base-url", url,
            "--origin", ORIGIN, "--label", LABEL, "--repo-id", REPO_ID, "--repo-name", REPO_NAME,
        )  # fmt: skip
        yield url, out, printed(output)


@pytest.fixture(scope="module")
def small_setup(rsa_key, signed_tool, tmp_path_factory):
    """signed_tool published with --sign-key and the setup package rocm-repo, served on
    127.0.0.1; yields (url, OUT, the printed lines)."""
    out = tmp_path_factory.mktemp("small-setup") / "repo"
    out.mkdir()
    with serve(out) as url:
        output = gfxpack(
            rsa_key, "repo", "--in", str(signed_tool), "--out", str(out),
            "--sign-key", rsa_key.fingerprint, "--base-url", url, "--setup-package", "rocm-repo",
        )  # fmt: skip
        yield url, out, printed(output)


def printed(output: str) -> dict[str, str]:
    """Package manager -> the setup line gfxpack repo printed for it."""
    pairs = [line.split(":", 1) for line in output.splitlines() if line.startswith("  ")]
    return {client.strip(): line.strip() for client, line in pairs}


def stand_ins(where: Path, root: Path, repos: Path) -> dict[str, str]:
    """The environment a printed line runs in against the throwaway ``root``: rpm and
    zypper act on it (zypper answering every question with its default, which for a key
    it does not know is no), and tee writes its file into ``repos`` instead of /etc."""
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True)
    commands = {
        "rpm": f'exec {shutil.which("rpm")} --root "$ROOT" "$@"',
        "zypper": f'exec {shutil.which("zypper")} --non-interactive --root "$ROOT" "$@"',
        "tee": f'exec {shutil.which("tee")} "$REPOS/${{1##*/}}"',
    }
    for name, body in commands.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "ROOT": str(root), "REPOS": str(repos)}


def run_line(line: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def zypper(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["zypper", "--non-interactive", "--root", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def installed(root: Path) -> list[str]:
    listing = run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\\n").stdout
    return sorted(listing.split())


def test_a_signed_rpm_md_repository_carries_its_key_beside_the_signature(small_signed, tmp_path):
    _, out, _ = small_signed
    repodata = out / "rpm/repodata"
    key = repodata / "repomd.xml.key"
    assert key.read_bytes().startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    assert oct(key.stat().st_mode & 0o777) == "0o644"
    dearmored = tmp_path / "key.gpg"
    run("gpg", "--batch", "--yes", "--dearmor", "-o", str(dearmored), str(key))
    run(
        "gpgv",
        "--keyring",
        str(dearmored),
        str(repodata / "repomd.xml.asc"),
        str(repodata / "repomd.xml"),
    )


@pytest.mark.slow
def test_zypper_trusts_a_repository_it_was_never_told_the_key_of(small_signed, tmp_path):
    """zypper --gpg-auto-import-keys, with no gpgkey= and no key imported, finds the key
    in repodata/repomd.xml.key, then installs with every signature checked; without that
    file, the same refresh fails."""
    url, out, _ = small_signed
    root = tmp_path / "root"
    root.mkdir()
    assert zypper(root, "addrepo", "--gpgcheck", "--refresh", f"{url}/rpm", "rocm").returncode == 0
    refreshed = zypper(root, "--gpg-auto-import-keys", "refresh", "rocm")
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    assert "Automatically importing the following key" in refreshed.stdout
    done = zypper(root, "install", "--no-recommends", "tool")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [n for n in installed(root) if n != "gpg-pubkey"] == ["tool"]
    assert (root / "opt/tool/bin/tool").read_text() == "tool"
    # The same repository without the key file: zypper has nothing to import.
    copy = tmp_path / "no-key"
    shutil.copytree(out, copy)
    (copy / "rpm/repodata/repomd.xml.key").unlink()
    other = tmp_path / "other-root"
    other.mkdir()
    with serve(copy) as copy_url:
        zypper(other, "addrepo", "--gpgcheck", f"{copy_url}/rpm", "rocm")
        refused = zypper(other, "--gpg-auto-import-keys", "refresh", "rocm")
    assert refused.returncode != 0
    assert "unknown key" in refused.stdout + refused.stderr
    assert installed(other) == []


@pytest.mark.slow
def test_the_printed_zypper_line_sets_zypper_up(small_signed, tmp_path):
    """The zypper line as printed (rpm and zypper pointed at a throwaway root, its .repo
    file written there): the key is imported from the repository, the refresh checks the
    signature with it (no question asked: zypper would answer no), and zypper installs
    under the id and name given."""
    _, _, lines = small_signed
    assert list(lines) == ["apt", "dnf", "zypper"]
    root = tmp_path / "root"
    repos = root / "etc/zypp/repos.d"
    repos.mkdir(parents=True)
    done = run_line(lines["zypper"], stand_ins(tmp_path, root, repos))
    assert done.returncode == 0, done.stdout + done.stderr
    assert installed(root) == ["gpg-pubkey"]
    (listed,) = ElementTree.fromstring(zypper(root, "--xmlout", "repos").stdout).iter("repo")
    assert (listed.get("alias"), listed.get("name")) == (REPO_ID, REPO_NAME)
    assert (listed.get("autorefresh"), listed.get("gpgcheck")) == ("1", "1")
    done = zypper(root, "install", "tool")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tool" in installed(root)


@pytest.mark.slow
def test_the_printed_dnf_line_checks_with_the_key_beside_the_signature(small_signed, tmp_path):
    """dnf with the printed line's .repo (gpgkey= URL/rpm/repodata/repomd.xml.key,
    gpgcheck and repo_gpgcheck): it imports that key and installs."""
    _, _, lines = small_signed
    dnf = Dnf(tmp_path / "dnf", tmp_path / "root", "")
    (dnf.reposdir / "test.repo").unlink()
    done = run_line(lines["dnf"], stand_ins(tmp_path, dnf.root, dnf.reposdir))
    assert done.returncode == 0, done.stderr
    text = (dnf.reposdir / f"{REPO_ID}.repo").read_text()
    assert "/rpm/repodata/repomd.xml.key\n" in text and f"name={REPO_NAME}\n" in text
    dnf.run("--setopt=tsflags=noscripts", "install", "tool")
    assert set(dnf.installed()) == {"tool", "gpg-pubkey"}


@pytest.mark.slow
def test_apt_shows_and_pins_by_the_origin_and_label(small_signed, tmp_path):
    url, out, _ = small_signed
    release = (out / "apt/dists/stable/Release").read_text()
    assert f"\nOrigin: {ORIGIN}\nLabel: {LABEL}\n" in f"\n{release}"
    keyring = out / "gfxpack-archive-keyring.gpg"
    apt = Apt(tmp_path / "apt", f"deb [signed-by={keyring}] {url}/apt stable main\n", "")
    (apt.home / "preferencesparts/rocm.pref").write_text(
        f"Package: *\nPin: release o={ORIGIN}, l={LABEL}\nPin-Priority: 321\n"
    )
    apt.run("update")

    def policy(*names: str) -> str:
        command = ["apt-cache", *apt.options, "policy", *names]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    assert f"release o={ORIGIN},a=stable,n=stable,l={LABEL},c=main,b=amd64" in policy()
    # The preference pinned by both matches: the candidate has its priority.
    assert re.search(r"\n +8\.2\.0-1 321\n", policy("tool")), policy("tool")


@pytest.mark.slow
def test_the_printed_zypper_line_installs_the_setup_package(small_setup, tmp_path):
    """zypper checks the signature of a package it installs from a URL: the line imports
    the repository's key first, and the package's own .repo file then serves zypper."""
    url, _, lines = small_setup
    assert lines["zypper"].endswith("/rpm/Packages/rocm-repo-1.0-1.noarch.rpm")
    root = tmp_path / "root"
    root.mkdir()
    done = run_line(lines["zypper"], stand_ins(tmp_path, root, tmp_path / "unused"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert installed(root) == ["gpg-pubkey", "rocm-repo"]
    assert f"baseurl={url}/rpm\n" in (root / "etc/zypp/repos.d/rocm-repo.repo").read_text()
    done = zypper(root, "install", "tool")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tool" in installed(root)
