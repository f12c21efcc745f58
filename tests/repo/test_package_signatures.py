"""repo/package_signatures.py: no unsigned RPM behind gpgcheck=1, no signing key current
apt or dnf reject. rpmkeys -K and the setup package's own files are the referees."""

from __future__ import annotations

import gzip
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack._io import file_digests
from gfxpack.cli import cli
from gfxpack.errors import GfxpackError
from gfxpack.formats import DEB, RPM
from gfxpack.repo import stream
from gfxpack.repo.inputs import RepoError
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.retention import Retention
from tests.conftest import run
from tests.verify.helpers import write_package
from tests.verify.signed import Key, make_key
from tests.verify.test_sqv import keys_in


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """The repository's key, another key current clients accept, and an RSA-2048 key."""
    base = tmp_path_factory.mktemp("package-signatures")
    made = {
        "repo": make_key(base / "repo", "ed25519"),
        "other": make_key(base / "other", "ed25519"),
        "rsa2048": make_key(base / "rsa2048", "rsa2048"),
    }
    yield made
    for key in made.values():
        key.stop_agent()


def gfxpack(key: Key, *args: str):
    return CliRunner().invoke(cli, list(args), env={"GNUPGHOME": key.home})


def build(where: Path, name: str = "tool", signed_by: Key | None = None) -> Path:
    """A build directory of one package of each format, its RPM signed by ``signed_by``
    with gfxpack sign (None: unsigned), and an index.json naming them: a build (8.2.0-1)
    of a stream."""
    write_package(where, DEB, name)
    rpm = write_package(where, RPM, name)
    if signed_by is not None:
        result = gfxpack(signed_by, "sign", "--key", signed_by.fingerprint, str(rpm))
        assert result.exit_code == 0, result.output
    files = []
    for path in sorted(where.iterdir()):
        size, (sha256,) = file_digests(path, "sha256")
        files.append({"file": path.name, "size": size, "sha256": sha256})
    index = {"rocm_version": "8.2.0", "release": "1", "files": files}
    (where / "index.json").write_text(json.dumps(index))
    return where


def rpmkeys_k(key: Key, package: Path, db: Path) -> int:
    """0 when rpmkeys -K, with only ``key`` imported, finds ``package``'s digests and
    signatures good (what dnf's gpgcheck asks; an unsigned package has good digests
    only, and rpmkeys then says so with status 0, so its words are read too)."""
    db.mkdir(exist_ok=True)
    run("rpmkeys", "--dbpath", str(db), "--import", str(key.export(db / "key.asc", armor=True)))
    checked = subprocess.run(["rpmkeys", "--dbpath", str(db), "-K", str(package)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    good = checked.stdout.strip().endswith("digests signatures OK")
    return checked.returncode if good else checked.returncode or 1


def error_line(result) -> str:
    """The one error line of a refused run (a directory without index.json is warned
    about first)."""
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.stderr.splitlines() if not x.startswith("warning: ")]
    assert line.startswith("error: ")
    return line


def printed(output: str, client: str) -> list[str]:
    """The .repo lines the printed setup line of ``client`` writes."""
    line = next(x for x in output.splitlines() if x.startswith(f"  {client}:"))
    words = shlex.split(line.split(":", 1)[1])
    return words[words.index("printf") + 2 : words.index("|")]


def test_an_unsigned_rpm_is_refused_by_a_signed_repository_until_signed(keys, tmp_path):
    key, out = keys["repo"], tmp_path / "repo"
    unsigned = build(tmp_path / "unsigned")
    refused = gfxpack(key, "repo", "--in", str(unsigned), "--out", str(out), "--sign-key",
                      key.fingerprint)  # fmt: skip
    line = error_line(refused)
    rpm = unsigned / "tool-8.2.0-1.x86_64.rpm"
    assert line.startswith(f"error: {rpm}: not signed: ")
    assert "gpgcheck=1" in line and f"gfxpack build --sign-key {key.fingerprint}" in line
    assert "--allow-unsigned-packages" in line
    assert not (out / "rpm/Packages").exists() and not (out / "apt/pool").exists()
    assert rpmkeys_k(key, rpm, tmp_path / "db") != 0  # the referee agrees: dnf refuses it
    # The fix the error names: signed with the repository's key, it is published.
    signed = build(tmp_path / "signed", signed_by=key)
    published = gfxpack(key, "repo", "--in", str(signed), "--out", str(out), "--sign-key",
                        key.fingerprint)  # fmt: skip
    assert published.exit_code == 0, published.output
    assert "gpgcheck=1" in printed(published.output, "dnf")
    assert rpmkeys_k(key, out / "rpm/Packages/tool-8.2.0-1.x86_64.rpm", tmp_path / "db2") == 0


def test_an_rpm_signed_by_another_key_is_refused(keys, tmp_path):
    key = keys["repo"]
    other = build(tmp_path / "other", signed_by=keys["other"])
    refused = gfxpack(key, "repo", "--in", str(other), "--out", str(tmp_path / "repo"),
                      "--sign-key", key.fingerprint)  # fmt: skip
    rpm = other / "tool-8.2.0-1.x86_64.rpm"
    assert f"{rpm}: not a good signature by the repository's keys" in error_line(refused)
    assert rpmkeys_k(key, rpm, tmp_path / "db") != 0
    # Published beside the signing key (a key rotation's other key), it is accepted.
    rotation = ["--sign-key", key.fingerprint, "--extra-key", keys["other"].fingerprint]
    both = gfxpack(key, "repo", "--in", str(other), "--out", str(tmp_path / "repo"), *rotation)
    assert "gpg has no public key" in error_line(both)  # not in the signer's gpg home yet
    run("gpg", "--batch", "--homedir", key.home, "--import",
        str(keys["other"].export(tmp_path / "other.gpg")))  # fmt: skip
    both = gfxpack(key, "repo", "--in", str(other), "--out", str(tmp_path / "repo"), *rotation)
    assert both.exit_code == 0, both.output


def test_the_printed_dnf_lines_trust_both_keys_of_a_rotation(keys, tmp_path):
    """During a key rotation the repository holds RPMs signed by either key: the key file
    the printed dnf and zypper lines import (repodata/repomd.xml.key) holds both, so a
    machine set up from them then installs both (rpmkeys -K, with what it imported)."""
    # The signer's gpg home: the repository's key and the rotation's other public key.
    home = tmp_path / "gnupg"
    shutil.copytree(keys["repo"].home, home, ignore=shutil.ignore_patterns("S.*"))
    other = keys["other"]
    run("gpg", "--batch", "--homedir", str(home), "--import",
        str(other.export(tmp_path / "other.gpg")))  # fmt: skip
    key, out = Key(str(home), keys["repo"].fingerprint), tmp_path / "repo"
    ours = build(tmp_path / "ours", "tool", signed_by=keys["repo"])
    theirs = build(tmp_path / "theirs", "next", signed_by=other)
    result = gfxpack(key, "repo", "--in", str(ours), "--in", str(theirs), "--out", str(out),
                     "--sign-key", key.fingerprint, "--extra-key", other.fingerprint)  # fmt: skip
    assert result.exit_code == 0, result.output
    for client in ("dnf", "zypper"):
        lines = printed(result.output, client)
        assert f"gpgkey=file://{out.resolve()}/rpm/repodata/repomd.xml.key" in lines, lines
    key_file = out / "rpm/repodata/repomd.xml.key"
    db = tmp_path / "machine-db"
    db.mkdir()
    run("rpmkeys", "--dbpath", str(db), "--import", str(key_file))
    for rpm in ("tool-8.2.0-1.x86_64.rpm", "next-8.2.0-1.x86_64.rpm"):
        checked = subprocess.run(["rpmkeys", "--dbpath", str(db), "-K",
                                  str(out / "rpm/Packages" / rpm)],
                                 capture_output=True, text=True, check=False)  # fmt: skip
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert checked.stdout.strip().endswith("digests signatures OK"), checked.stdout
    assert keys_in(key_file) == {key.fingerprint[-16:], other.fingerprint[-16:]}
    # The signature beside it is still the signing key's alone (gpgv with each key).
    repodata = out / "rpm/repodata"
    for signer, status in ((keys["repo"], 0), (other, 2)):
        keyring = signer.export(tmp_path / f"{signer.fingerprint}.gpg")
        gpgv = ["gpgv", "--keyring", str(keyring), str(repodata / "repomd.xml.asc"),
                str(repodata / "repomd.xml")]  # fmt: skip
        assert subprocess.run(gpgv, capture_output=True, check=False).returncode == status


def setup_repo_file(package: Path, tmp_path: Path) -> str:
    """The dnf .repo file the rpm setup package installs (rpm2cpio, cpio)."""
    where = tmp_path / "unpacked"
    where.mkdir()
    cpio = subprocess.run(["rpm2cpio", str(package)], capture_output=True, check=True).stdout
    subprocess.run(["cpio", "-idm", "--quiet"], input=cpio, cwd=where, check=True)
    (found,) = (where / "etc/yum.repos.d").iterdir()
    return found.read_text()


def test_allow_unsigned_packages_says_gpgcheck_0_in_the_setup_from_then_on(keys, tmp_path):
    key, out = keys["repo"], tmp_path / "repo"
    setup = ["--setup-package", "rocm-repo", "--base-url", "http://127.0.0.1:9/rocm"]
    setup += ["--sign-key", key.fingerprint, "--allow-unsigned-packages"]
    result = gfxpack(key, "repo", "--in", str(build(tmp_path / "b1")), "--out", str(out), *setup)
    assert result.exit_code == 0, result.output
    repo_file = setup_repo_file(out / "rpm/Packages/rocm-repo-1.0-1.noarch.rpm", tmp_path)
    assert "gpgcheck=0\n" in repo_file and "repo_gpgcheck=1\n" in repo_file
    # The setup package itself is signed (zypper checks it when installed by URL).
    assert rpmkeys_k(key, out / "rpm/Packages/rocm-repo-1.0-1.noarch.rpm", tmp_path / "db") == 0
    # Printed lines for a machine set up without the setup package say the same.
    plain = gfxpack(key, "repo", "--in", str(build(tmp_path / "b2", "other")), "--out",
                    str(out), "--sign-key", key.fingerprint)  # fmt: skip
    assert plain.exit_code == 0, plain.output  # recorded: the repository takes them now
    for client in ("dnf", "zypper"):
        lines = printed(plain.output, client)
        assert "gpgcheck=0" in lines and "repo_gpgcheck=1" in lines, lines


def test_stream_promote_does_not_carry_unsigned_rpms_into_a_signed_stream(keys, tmp_path):
    key, nightly, weekly = keys["repo"], tmp_path / "nightly", tmp_path / "weekly"
    result = gfxpack(key, "repo", "--in", str(build(tmp_path / "b")), "--out", str(nightly),
                     "--sign-key", key.fingerprint, "--allow-unsigned-packages")  # fmt: skip
    assert result.exit_code == 0, result.output
    options = PublishOptions("", 1_700_000_000, key.fingerprint, key.home)
    with pytest.raises(RepoError, match=r"tool-8\.2\.0-1\.x86_64\.rpm: not signed: .*gpgcheck=1"):
        stream.promote(nightly, weekly, "8.2.0-1", "nightly", options)
    assert not (weekly / "rpm/Packages").exists()
    promote = ["stream", "promote", "--from", str(nightly), "--to", str(weekly), "--version",
               "8.2.0-1", "--sign-key", key.fingerprint]  # fmt: skip
    assert "not signed" in error_line(gfxpack(key, *promote))
    # Told so, the target takes them, and its printed setup says gpgcheck=0.
    allowed = gfxpack(key, *promote, "--allow-unsigned-packages")
    assert allowed.exit_code == 0, allowed.output
    assert (weekly / "rpm/Packages/tool-8.2.0-1.x86_64.rpm").is_file()
    assert "gpgcheck=0" in printed(allowed.output, "dnf")


def test_an_unsigned_repository_signed_for_the_first_time_checks_what_it_has(keys, tmp_path):
    """gpgcheck turns to 1 for the packages published before too."""
    key, out = keys["repo"], tmp_path / "repo"
    unsigned = gfxpack(key, "repo", "--in", str(build(tmp_path / "b1")), "--out", str(out))
    assert unsigned.exit_code == 0, unsigned.output
    signed = build(tmp_path / "b2", "other", signed_by=key)
    refused = gfxpack(key, "repo", "--in", str(signed), "--out", str(out), "--sign-key",
                      key.fingerprint)  # fmt: skip
    assert f"{out / 'rpm/Packages/tool-8.2.0-1.x86_64.rpm'}: not signed" in error_line(refused)


@pytest.mark.parametrize("command", ["repo", "stream"])
def test_a_weak_signing_key_is_refused_before_anything_is_written(keys, tmp_path, command):
    key, out = keys["rsa2048"], tmp_path / "repo"
    signed = build(tmp_path / "b", signed_by=None)
    if command == "repo":
        refused = gfxpack(key, "repo", "--in", str(signed), "--out", str(out), "--sign-key",
                          key.fingerprint, "--allow-unsigned-packages")  # fmt: skip
        line = error_line(refused)
        assert line.startswith(f"error: --sign-key {key.fingerprint}: {key.fingerprint}: ")
        assert "RSA of 2048 bits" in line and "--allow-weak-key" in line
        assert not out.exists()
        allowed = gfxpack(key, "repo", "--in", str(signed), "--out", str(out), "--sign-key",
                          key.fingerprint, "--allow-unsigned-packages",
                          "--allow-weak-key")  # fmt: skip
        assert allowed.exit_code == 0, allowed.output
        (warning,) = [x for x in allowed.stderr.splitlines() if "RSA" in x]
        assert warning.startswith("warning: --sign-key") and "RSA of 2048 bits" in warning
        # Allowed once, the repository remembers it for that key: the stream commands
        # (which have no such option) warn too.
        said: list[str] = []
        options = PublishOptions("", 1_700_000_000, key.fingerprint, key.home)
        stream.prune(out, Retention.parse("all"), options, warn=said.append)
        assert any("RSA of 2048 bits" in x for x in said)
    else:  # the library's runs refuse it too (stream prune, remove, promote)
        nightly = tmp_path / "nightly"
        made = gfxpack(keys["repo"], "repo", "--in", str(signed), "--out", str(nightly))
        assert made.exit_code == 0, made.output
        options = PublishOptions("", 1_700_000_000, key.fingerprint, key.home)
        with pytest.raises(GfxpackError, match="RSA of 2048 bits"):
            stream.promote(nightly, out, "8.2.0-1", "nightly", options)
        assert not (out / "rpm").exists()


def test_the_setup_package_is_listed_with_the_release_time_not_the_run_time(
    keys, tmp_path, monkeypatch
):
    # rpm-md lists each package file's mtime: the setup package's must be the release's
    # SOURCE_DATE_EPOCH, not the clock of the run, or the same inputs give new indexes.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    key, out = keys["repo"], tmp_path / "repo"
    inputs = build(tmp_path / "b", signed_by=key)
    setup = ["--setup-package", "rocm-repo", "--base-url", "http://127.0.0.1:9/rocm"]
    result = gfxpack(
        key, "repo", "--in", str(inputs), "--out", str(out), *setup, "--sign-key", key.fingerprint
    )
    assert result.exit_code == 0, result.output
    (primary,) = (out / "rpm/repodata").glob("*-primary.xml.gz")
    text = gzip.decompress(primary.read_bytes()).decode()
    setup = text[text.index("<name>rocm-repo</name>") :]
    assert re.search(r'<time file="(\d+)"', setup)[1] == "1700000000"
