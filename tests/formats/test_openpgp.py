"""formats/openpgp.py: the signing keys current apt and dnf reject are refused before
anything is signed, with the reason; sqv (Debian 13's apt verifier) is the referee for
what gpg accepts and sqv does not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import RPM
from gfxpack.formats.openpgp import key_problems, listing_of_key, listing_of_keyring
from tests.conftest import run
from tests.verify.helpers import write_package
from tests.verify.signed import Key, make_key

needs_sqv = pytest.mark.skipif(
    shutil.which("sqv") is None, reason="sqv is not installed (apt-get install sqv)"
)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """name -> Key: what current clients accept (ed25519, rsa4096) and what they do not
    (rsa2048; rsa3072 bound with SHA-1), each in a gpg home of its own."""
    base = tmp_path_factory.mktemp("openpgp")
    made = {
        "ed25519": make_key(base / "ed25519", "ed25519"),
        "rsa4096": make_key(base / "rsa4096", "rsa4096"),
        "rsa2048": make_key(base / "rsa2048", "rsa2048"),
        "sha1": make_key(base / "sha1", "rsa3072", "--cert-digest-algo", "SHA1"),
    }
    yield made
    for key in made.values():
        key.stop_agent()


def problems(key: Key) -> list[str]:
    return key_problems(listing_of_key(key.fingerprint, key.home, "test")).get(key.fingerprint, [])


def test_keys_current_clients_accept_have_no_problem(keys):
    assert problems(keys["ed25519"]) == []
    assert problems(keys["rsa4096"]) == []


def test_an_rsa_2048_key_and_a_sha1_binding_are_named(keys):
    assert problems(keys["rsa2048"]) == [
        "its primary key is RSA of 2048 bits (Debian 13's apt rejects RSA under 3072 bits)"
    ]
    (sha1,) = problems(keys["sha1"])
    assert sha1.startswith("user id bound with SHA-1")


def test_a_keyring_file_is_judged_as_the_key_in_gpgs_home(keys, tmp_path):
    """verify reads a keyring file (binary or armored), repo and sign gpg's home: the
    same findings either way."""
    ring = tmp_path / "two.asc"
    ring.write_bytes(b"".join(keys[n].export(tmp_path / n, armor=True).read_bytes()
                              for n in ("rsa2048", "ed25519")))  # fmt: skip
    found = key_problems(listing_of_keyring(ring))
    assert set(found) == {keys["rsa2048"].fingerprint}
    assert found[keys["rsa2048"].fingerprint] == problems(keys["rsa2048"])


@needs_sqv
def test_sqv_rejects_the_sha1_bound_key_gpgv_accepts_until_it_is_bound_anew(keys, tmp_path):
    """The referee: a signature by the SHA-1-bound key passes gpgv and fails sqv; after
    the fix the refusal names (new self-signatures) sqv accepts it and gfxpack finds
    nothing more."""
    home = tmp_path / "home"
    shutil.copytree(keys["sha1"].home, home, ignore=shutil.ignore_patterns("S.*"))
    key = Key(str(home), keys["sha1"].fingerprint)
    data = tmp_path / "data"
    data.write_bytes(b"Origin: test\n")

    def signed_and_checked() -> tuple[int, int]:
        signature = tmp_path / "data.sig"
        run("gpg", "--batch", "--yes", "--homedir", key.home, "--local-user",
            key.fingerprint, "--detach-sign", "--output", str(signature), str(data))  # fmt: skip
        ring = key.export(tmp_path / "key.gpg")
        gpgv = subprocess.run(["gpgv", "--keyring", str(ring), str(signature), str(data)],
                              capture_output=True, check=False)  # fmt: skip
        sqv = subprocess.run(["sqv", "--keyring", str(ring), str(signature), str(data)],
                             capture_output=True, check=False)  # fmt: skip
        return gpgv.returncode, sqv.returncode

    assert signed_and_checked() == (0, 1)
    assert problems(key)
    run("gpg", "--batch", "--homedir", key.home, "--passphrase", "", "--pinentry-mode",
        "loopback", "--quick-set-expire", key.fingerprint, "2y")  # fmt: skip
    assert problems(key) == []
    assert signed_and_checked() == (0, 0)


def sign(key: Key, *args: str):
    return CliRunner().invoke(cli, ["sign", *args], env={"GNUPGHOME": key.home})


@pytest.mark.parametrize(
    ("name", "reason"),
    [("rsa2048", "RSA of 2048 bits"), ("sha1", "bound with SHA-1")],
)
def test_sign_refuses_a_weak_key_before_signing_and_warns_when_allowed(keys, tmp_path, name,
                                                                       reason):  # fmt: skip
    key = keys[name]
    package = write_package(tmp_path / "out", RPM, "tool")
    before = package.read_bytes()
    refused = sign(key, "--key", key.fingerprint, str(package))
    assert refused.exit_code == 1
    (line,) = refused.stderr.splitlines()
    assert line.startswith(f"error: --key {key.fingerprint}: {key.fingerprint}: ")
    assert reason in line and "--allow-weak-key" in line
    assert package.read_bytes() == before
    allowed = sign(key, "--key", key.fingerprint, "--allow-weak-key", str(package))
    assert allowed.exit_code == 0, allowed.output
    assert reason in allowed.stderr and allowed.stderr.startswith("warning: ")
    assert package.read_bytes() != before


def test_sign_takes_a_key_current_clients_accept_without_a_word(keys, tmp_path):
    package = write_package(tmp_path / "out", RPM, "tool")
    result = sign(keys["rsa4096"], "--key", keys["rsa4096"].fingerprint, str(package))
    assert result.exit_code == 0 and result.stderr == ""


def test_an_unreadable_listing_line_is_no_key(tmp_path):
    """Lines gpg may add in later versions, or cut short, are skipped, never a crash."""
    assert key_problems("pub:short\nsig:::\nfpr\n\n") == {}
    assert key_problems(Path(__file__).read_text()) == {}


def test_build_refuses_a_weak_sign_key_before_building(keys, tmp_path):
    key = keys["rsa2048"]
    result = CliRunner().invoke(cli, ["build", "--config", str(tmp_path / "package.json"),
                                      "--artifacts", str(tmp_path), "--out", str(tmp_path / "out"),
                                      "--rocm-version", "8.2.0", "--sign-key", key.fingerprint],
                                env={"GNUPGHOME": key.home})  # fmt: skip
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --sign-key {key.fingerprint}: ") and "RSA of 2048" in line
    assert not (tmp_path / "out").exists()
