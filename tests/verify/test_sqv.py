"""sqv, Debian 13's apt verifier, accepts gfxpack's signatures as gpgv does: InRelease
(split as apt splits it), Release.gpg and repomd.xml.asc, made with an ed25519 and an
RSA-4096 key; and a key rotation (two keys in the keyring during the transition,
docs/guides/release-streams.md) keeps every machine updating."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, RPM
from tests.verify.helpers import write_package
from tests.verify.signed import Key, make_key

pytestmark = pytest.mark.skipif(
    shutil.which("sqv") is None, reason="sqv is not installed (apt-get install sqv)"
)

_BEGIN_SIGNATURE = b"-----BEGIN PGP SIGNATURE-----"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    base = tmp_path_factory.mktemp("sqv")
    made = {name: make_key(base / name, name) for name in ("ed25519", "rsa4096")}
    made["next"] = make_key(base / "next", "ed25519")
    yield made
    for key in made.values():
        key.stop_agent()


def split_clearsigned(inrelease: Path, where: Path) -> tuple[Path, Path]:
    """(signature, signed text) of a clear-signed file as apt hands them to sqv: the text
    dash-unescaped, without the line break before the signature (RFC 4880 7.1)."""
    data = inrelease.read_bytes()
    header_end = data.index(b"\n\n") + 2
    signature_start = data.index(b"\n" + _BEGIN_SIGNATURE) + 1
    lines = data[header_end : signature_start - 1].split(b"\n")
    text = b"\n".join(line[2:] if line.startswith(b"- ") else line for line in lines)
    signature, signed = where / "InRelease.sig", where / "InRelease.text"
    signature.write_bytes(data[signature_start:])
    signed.write_bytes(text)
    return signature, signed


def checks(keyring: Path, signature: Path, signed: Path) -> tuple[int, int]:
    """(gpgv's, sqv's) exit status for ``signature`` of ``signed`` with ``keyring``."""
    gpgv = subprocess.run(["gpgv", "--keyring", str(keyring), str(signature), str(signed)],
                          capture_output=True, check=False)  # fmt: skip
    sqv = subprocess.run(["sqv", "--keyring", str(keyring), str(signature), str(signed)],
                         capture_output=True, check=False)  # fmt: skip
    return gpgv.returncode, sqv.returncode


def repo(key: Key, build: Path, out: Path, *extra: str) -> None:
    result = CliRunner().invoke(cli, ["repo", "--in", str(build), "--out", str(out),
                                      "--sign-key", key.fingerprint, "-q", *extra],
                                env={"GNUPGHOME": key.home})  # fmt: skip
    assert result.exit_code == 0, result.output


def apt_signatures(out: Path, where: Path) -> list[tuple[Path, Path]]:
    """(signature, signed) pairs apt checks: InRelease as split, and Release.gpg."""
    dist = out / "apt/dists/stable"
    where.mkdir(exist_ok=True)
    return [split_clearsigned(dist / "InRelease", where), (dist / "Release.gpg", dist / "Release")]


@pytest.mark.parametrize("algorithm", ["ed25519", "rsa4096"])
def test_sqv_accepts_gfxpacks_signatures(keys, tmp_path, algorithm):
    key = keys[algorithm]
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    rpm = write_package(build, RPM, "tool")
    signed = CliRunner().invoke(cli, ["sign", "--key", key.fingerprint, str(rpm)],
                                env={"GNUPGHOME": key.home})  # fmt: skip
    assert signed.exit_code == 0, signed.output
    out = tmp_path / "repo"
    repo(key, build, out)
    keyring = out / "gfxpack-archive-keyring.gpg"  # what apt's signed-by is given
    repomd = out / "rpm/repodata/repomd.xml"
    for signature, data in [*apt_signatures(out, tmp_path / "split"), (repomd.with_suffix(
            ".xml.asc"), repomd)]:  # fmt: skip
        assert checks(keyring, signature, data) == (0, 0), signature
    # The referee is awake: a changed byte of the signed text fails both.
    _, text = apt_signatures(out, tmp_path / "split")[0]
    text.write_bytes(text.read_bytes().replace(b"Origin: gfxpack", b"Origin: gfxpacK"))
    signature = tmp_path / "split/InRelease.sig"
    assert checks(keyring, signature, text) == (1, 1)


def keys_in(keyring: Path) -> set[str]:
    listing = subprocess.run(["gpg", "--batch", "--with-colons", "--show-keys", str(keyring)],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    return {line.split(":")[4] for line in listing.splitlines() if line.startswith("pub:")}


def test_a_key_rotation_keeps_every_machine_updating(keys, tmp_path):
    """The guide's recipe: publish the next key beside the current one (machines take
    both with the next update of the keyring or setup package), sign with the next key
    while both stay published, then drop the old one. At each step a machine holding
    the keyring of the step before verifies the new InRelease with gpgv and sqv."""
    old, new = keys["ed25519"], keys["next"]
    # The signer's gpg home has both keys' secret parts, as a release machine would.
    home = tmp_path / "gnupg"
    shutil.copytree(old.home, home, ignore=shutil.ignore_patterns("S.*"))
    secret = subprocess.run(["gpg", "--batch", "--homedir", new.home, "--export-secret-keys",
                             new.fingerprint], capture_output=True, check=True).stdout  # fmt: skip
    subprocess.run(["gpg", "--batch", "--homedir", str(home), "--import"], input=secret,
                   capture_output=True, check=True)  # fmt: skip
    signer = {"old": Key(str(home), old.fingerprint), "new": Key(str(home), new.fingerprint)}
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    out = tmp_path / "repo"
    published = out / "gfxpack-archive-keyring.gpg"
    steps = [
        ("before", signer["old"], ()),
        ("transition, old key signs", signer["old"], ("--extra-key", new.fingerprint)),
        ("transition, new key signs", signer["new"], ("--extra-key", old.fingerprint)),
        # The extra key is remembered: ending the rotation says so.
        ("after", signer["new"], ("--drop-extra-keys",)),
    ]
    machine = None  # the keyring of a machine that took every update
    for number, (step, key, extra) in enumerate(steps):
        repo(key, build, out, *extra)
        wanted = {key.fingerprint[-16:], *(k[-16:] for k in extra if k.isalnum())}
        assert keys_in(published) == wanted, step
        for signature, data in apt_signatures(out, tmp_path / f"split-{number}"):
            assert checks(published, signature, data) == (0, 0), step
            if machine is not None:
                assert checks(machine, signature, data) == (0, 0), step
        machine = tmp_path / f"machine-{number}.gpg"
        shutil.copy(published, machine)
    # Why the transition: a machine that kept the first keyring (old key only) is
    # refused the new key's InRelease by both verifiers.
    first_keyring = tmp_path / "first.gpg"
    first_keyring.write_bytes(old.export(tmp_path / "old.gpg").read_bytes())
    signature, data = apt_signatures(out, tmp_path / "split-last")[0]
    assert checks(first_keyring, signature, data) == (2, 1)
