"""gfxpack verify --keyring checks every RPM's own signature, as dnf does with
gpgcheck=1 (rpmkeys -K is the referee), and the keys that signed, as current apt and
dnf judge them; --deep extends the RPM check to every .rpm in the repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, RPM
from tests.conftest import run
from tests.verify.helpers import write_package
from tests.verify.signed import Key, make_key


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    base = tmp_path_factory.mktemp("verify-package-signatures")
    made = {
        "repo": make_key(base / "repo", "ed25519"),
        "other": make_key(base / "other", "ed25519"),
        "rsa2048": make_key(base / "rsa2048", "rsa2048"),
    }
    yield made
    for key in made.values():
        key.stop_agent()


def gfxpack(key: Key | None, *args: str):
    env = {"GNUPGHOME": key.home} if key else {}
    return CliRunner().invoke(cli, list(args), env=env)


def publish(key: Key, out: Path, where: Path, rpm_signed_by: Key | None, *extra: str) -> Path:
    """A repository at ``out`` signed by ``key``, of one package of each format whose
    RPM ``rpm_signed_by`` signed (None: unsigned); the RPM's pool file."""
    write_package(where, DEB, "tool")
    rpm = write_package(where, RPM, "tool")
    if rpm_signed_by is not None:
        weak = [x for x in extra if x == "--allow-weak-key"]
        signed = gfxpack(rpm_signed_by, "sign", "--key", rpm_signed_by.fingerprint, *weak,
                         str(rpm))  # fmt: skip
        assert signed.exit_code == 0, signed.output
    result = gfxpack(key, "repo", "--in", str(where), "--out", str(out), "--sign-key",
                     key.fingerprint, *extra)  # fmt: skip
    assert result.exit_code == 0, result.output
    return out / "rpm/Packages" / rpm.name


def rpmkeys_accepts(key: Key, package: Path, db: Path) -> bool:
    """Whether rpmkeys -K, with only ``key`` imported, finds digests and signatures good."""
    db.mkdir()
    run("rpmkeys", "--dbpath", str(db), "--import", str(key.export(db / "key.asc", armor=True)))
    checked = subprocess.run(["rpmkeys", "--dbpath", str(db), "-K", str(package)],
                             capture_output=True, text=True, check=False)  # fmt: skip
    return checked.returncode == 0 and checked.stdout.strip().endswith("digests signatures OK")


def verify(root: Path, keyring: Path, *extra: str):
    return gfxpack(None, "verify", "--repo", str(root), "--format", "rpm", "--keyring",
                   str(keyring), *extra)  # fmt: skip


def error(result) -> str:
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize("signer", ["nobody", "other"])
def test_verify_keyring_fails_on_an_rpm_dnf_would_refuse(keys, tmp_path, signer):
    """An unsigned RPM, and one signed by a key the repository does not publish, in a
    repository whose indexes are good: verify --keyring fails naming it, as rpmkeys -K
    does; the same repository with the RPM signed by its key passes both."""
    key = keys["repo"]
    signed_by = keys["other"] if signer == "other" else None
    out = tmp_path / "repo"
    package = publish(key, out, tmp_path / "build", signed_by, "--allow-unsigned-packages")
    keyring = key.export(tmp_path / "keyring.gpg")
    # The rpm-md repository itself, as a mirror serves it: no record says gpgcheck=0.
    line = error(verify(out / "rpm", keyring))
    problem = "not signed" if signed_by is None else "its header signature: not a good signature"
    assert line.startswith(f"error: {package}: {problem}"), line
    assert "gpgcheck=1" in line
    assert not rpmkeys_accepts(key, package, tmp_path / "db")
    # gfxpack's repository root: its record says the setup is gpgcheck=0, as dnf then
    # checks nothing either; said, and an error with --strict.
    said = verify(out, keyring)
    assert said.exit_code == 0, said.output
    assert "package signatures not checked: the repository takes unsigned" in said.stderr
    strict = verify(out, keyring, "--strict")
    assert strict.exit_code == 1 and "gpgcheck=0" in strict.stderr
    # Without --keyring nothing is said of signatures: the check is the keyring's.
    assert gfxpack(None, "verify", "--repo", str(out), "--format", "rpm").exit_code == 0
    good = publish(key, tmp_path / "good", tmp_path / "good-build", key)
    result = verify(tmp_path / "good", keyring)
    assert result.exit_code == 0, result.output
    assert f"1 package signature(s) by a key of {keyring}" in result.output
    assert rpmkeys_accepts(key, good, tmp_path / "db2")


def test_deep_checks_the_rpms_the_index_does_not_list(keys, tmp_path):
    key = keys["repo"]
    out = tmp_path / "repo"
    publish(key, out, tmp_path / "build", key)
    keyring = key.export(tmp_path / "keyring.gpg")
    stray = out / "rpm/Packages/stray-1-1.x86_64.rpm"
    shutil.copy(write_package(tmp_path / "stray", RPM, "stray"), stray)
    assert verify(out, keyring).exit_code == 0  # not listed: dnf never fetches it
    assert error(verify(out, keyring, "--deep")).startswith(f"error: {stray}: not signed")
    stray.unlink()
    assert verify(out, keyring, "--deep").exit_code == 0


def test_a_weak_signing_key_fails_verify_unless_allowed(keys, tmp_path):
    """Signatures gpgv accepts and Debian 13's apt does not (an RSA-2048 key)."""
    key = keys["rsa2048"]
    out = tmp_path / "repo"
    publish(key, out, tmp_path / "build", key, "--allow-weak-key")
    keyring = key.export(tmp_path / "keyring.gpg")
    run("gpgv", "--keyring", str(keyring), str(out / "apt/dists/stable/InRelease"))
    line = error(gfxpack(None, "verify", "--repo", str(out), "--keyring", str(keyring)))
    assert line.startswith(f"error: --keyring {keyring}: {key.fingerprint}: ")
    assert "RSA of 2048 bits" in line and "--allow-weak-key" in line
    allowed = gfxpack(None, "verify", "--repo", str(out), "--keyring", str(keyring),
                      "--allow-weak-key")  # fmt: skip
    assert allowed.exit_code == 0, allowed.output
    warnings = [x for x in allowed.stderr.splitlines() if "RSA of 2048 bits" in x]
    assert len(warnings) == 1 and warnings[0].startswith("warning: ")


def test_a_listed_rpm_that_is_a_symlink_is_not_followed(keys, tmp_path):
    """Even to a good signed package outside the repository: nothing out of the tree is
    read, the symlink is named."""
    key = keys["repo"]
    out = tmp_path / "repo"
    package = publish(key, out, tmp_path / "build", key)
    keyring = key.export(tmp_path / "keyring.gpg")
    outside = tmp_path / "outside.rpm"
    shutil.move(package, outside)
    package.symlink_to(outside)
    line = error(verify(out, keyring))
    assert line.startswith(f"error: {package}: cannot read it (not a regular file (a symlink))")
