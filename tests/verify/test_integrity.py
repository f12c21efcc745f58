"""gfxpack verify checks what apt and dnf check: signatures against a keyring, index
digests, and with --deep every package file; malformed Release files are one error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS
from gfxpack.repo import publish
from gfxpack.sign import sign_packages
from gfxpack.verify.integrity import read_repomd
from gfxpack.verify.system import VerifyError
from tests.conftest import run
from tests.verify.conftest import export_key
from tests.verify.helpers import gfxarch_set, write_package


def verify(*args: str):
    return CliRunner().invoke(cli, ["verify", *args])


def one_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def signed(tmp_path, gnupg) -> tuple[Path, Path]:
    """A repository of both formats signed by a fresh key; (root, keyring)."""
    home, fingerprint = gnupg
    build = tmp_path / "build"
    for fmt in FORMATS:
        for name, options in gfxarch_set().items():
            write_package(build, fmt, name, **options)
    # A signed repository takes RPMs signed by its key (dnf checks them with gpgcheck=1).
    sign_packages(sorted(build.glob("*.rpm")), fingerprint, home)
    root = tmp_path / "repo"
    publish(build, root, "stable", 1_700_000_000, fingerprint, home)
    return root, export_key(home, fingerprint, tmp_path / "keyring.gpg")


@pytest.fixture
def other_keyring(tmp_path) -> Path:
    """The keyring of a key that signed nothing here."""
    home = tmp_path / "other-gnupg"
    home.mkdir(mode=0o700)
    gpg = ["gpg", "--batch", "--homedir", str(home), "--passphrase", ""]
    run(*gpg, "--quick-gen-key", "someone else <else@example.invalid>", "ed25519", "sign", "never")
    listing = run(*gpg, "--with-colons", "--list-keys").stdout
    fingerprint = next(
        line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr")
    )
    return export_key(str(home), fingerprint, tmp_path / "other.gpg")


def test_a_signed_repository_verifies_with_its_keyring(signed, tmp_path, gnupg):
    root, keyring = signed
    result = verify("--repo", str(root), "--keyring", str(keyring), "--deep")
    assert result.exit_code == 0, result.output + result.stderr
    assert f"InRelease signed by a key of {keyring}" in result.output
    assert f"repomd.xml.asc signed by a key of {keyring}" in result.output
    assert result.output.count("every package file matches its index (6 files)") == 2
    # The real tools agree: gpgv on repomd.xml.asc, as dnf's repo_gpgcheck does.
    repodata = root / "rpm/repodata"
    run(
        "gpgv",
        "--keyring",
        str(keyring),
        str(repodata / "repomd.xml.asc"),
        str(repodata / "repomd.xml"),
    )
    # An armored keyring (a .asc for apt's signed-by) works the same.
    armored = export_key(*gnupg, tmp_path / "keyring.asc", armor=True)
    assert verify("--repo", str(root), "--keyring", str(armored)).exit_code == 0


def test_an_edited_release_with_the_old_inrelease_fails(signed):
    root, keyring = signed
    release = root / "apt/dists/stable/Release"
    release.write_text(release.read_text().replace("Label: gfxpack", "Label: edited"))
    for extra in ((), ("--keyring", str(keyring))):
        message = one_error(verify("--repo", str(root), "--format", "deb", *extra))
        assert f"{release}: differs from what" in message and "InRelease" in message


def test_an_edited_release_with_only_release_gpg_fails(signed):
    root, keyring = signed
    dist = root / "apt/dists/stable"
    (dist / "InRelease").unlink()
    assert verify("--repo", str(root), "--format", "deb", "--keyring", str(keyring)).exit_code == 0
    release = dist / "Release"
    release.write_text(release.read_text().replace("Label: gfxpack", "Label: edited"))
    message = one_error(verify("--repo", str(root), "--format", "deb", "--keyring", str(keyring)))
    assert f"{dist / 'Release.gpg'}: not a good signature by a key of {keyring}" in message


def test_signatures_by_another_key_fail(signed, other_keyring):
    root, _ = signed
    for fmt, signature in (
        ("deb", "apt/dists/stable/InRelease"),
        ("rpm", "rpm/repodata/repomd.xml.asc"),
    ):
        message = one_error(
            verify("--repo", str(root), "--format", fmt, "--keyring", str(other_keyring))
        )
        assert message.startswith(f"error: {root / signature}: not a good signature"), message


def test_an_edited_repomd_fails_its_signature(signed):
    root, keyring = signed
    repomd = root / "rpm/repodata/repomd.xml"
    repomd.write_text(repomd.read_text().replace("<revision>", "<revision>1"))
    message = one_error(verify("--repo", str(root), "--format", "rpm", "--keyring", str(keyring)))
    assert "repomd.xml.asc: not a good signature" in message


def test_an_unsigned_repository_fails_when_a_keyring_is_given(example_repo, signed):
    _, keyring = signed
    assert "not signed (no InRelease, no Release.gpg)" in one_error(
        verify("--repo", str(example_repo), "--format", "deb", "--keyring", str(keyring))
    )
    assert "repomd.xml is not signed (no repomd.xml.asc)" in one_error(
        verify("--repo", str(example_repo), "--format", "rpm", "--keyring", str(keyring))
    )


@pytest.mark.parametrize("fmt", ["deb", "rpm"])
@pytest.mark.parametrize("change", ["byte", "size"])
def test_deep_finds_a_package_file_changed_after_publishing(signed, tmp_path, fmt, change):
    root, keyring = signed
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    pool = copy / ("apt/pool/main" if fmt == "deb" else "rpm/Packages")
    victim = sorted(pool.glob(f"*.{fmt}"))[0]
    data = bytearray(victim.read_bytes())
    if change == "byte":
        data[-3] ^= 0x01
    else:
        data += b"\0"
    victim.unlink()
    victim.write_bytes(bytes(data))
    args = ("--repo", str(copy), "--format", fmt, "--keyring", str(keyring))
    assert verify(*args).exit_code == 0  # the indexes themselves are intact
    message = one_error(verify(*args, "--deep"))
    expected = "bytes, the index says" if change == "size" else "its sha256 is not the one"
    assert message.startswith(f"error: {victim}: ") and expected in message


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        pytest.param(
            lambda text: re.sub(r"(SHA256:\n [0-9a-f]{64}) +\d+", r"\1 12x", text),
            "expected '<sha256> <size> <path>'",
            id="bad-size",
        ),
        pytest.param(lambda text: "", "empty; expected the fields of a Release file", id="empty"),
        pytest.param(lambda text: text.replace("gfxpack", "gfx\udcffpack"), "not UTF-8", id="utf8"),
        pytest.param(
            lambda text: text.replace("main/Contents-amd64.gz", "../../../etc/passwd"),
            "'../../../etc/passwd' is not a path here",
            id="outside",
        ),
        pytest.param(lambda text: text.split("SHA256:")[0], "lists no index", id="no-sha256"),
    ],
)
def test_a_malformed_release_is_one_error(tmp_path, edit, expected):
    build = tmp_path / "build"
    write_package(build, DEB, "tool")
    root = tmp_path / "repo"
    publish(build, root, "stable", 1_700_000_000)
    release = root / "apt/dists/stable/Release"
    release.write_bytes(edit(release.read_text()).encode("utf-8", "surrogateescape"))
    message = one_error(verify("--repo", str(root)))
    assert message.startswith(f"error: {release}: ") and expected in message, message


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dnf") is None, reason="needs dnf (apt-get install dnf)")
def test_dnf_checks_repomd_xml_asc_as_verify_does(signed, tmp_path, gnupg):
    root, keyring = signed
    key = export_key(*gnupg, tmp_path / "key.asc", armor=True)

    def makecache(name: str):
        return subprocess.run(
            [
                "dnf",
                "-y",
                f"--installroot={tmp_path / name}",
                "--releasever=9",
                f"--setopt=reposdir={tmp_path / 'no-repos.d'}",
                f"--setopt=cachedir={tmp_path / name / 'cache'}",
                "--setopt=skip_if_unavailable=False",
                "--disablerepo=*",
                f"--repofrompath=gfx,file://{root / 'rpm'}",
                "--enablerepo=gfx",
                "--setopt=gfx.gpgcheck=0",
                "--setopt=gfx.repo_gpgcheck=1",
                f"--setopt=gfx.gpgkey=file://{key}",
                "makecache",
            ],
            capture_output=True,
            text=True,
            check=False,
        )

    accepted = makecache("dnf1")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    repomd = root / "rpm/repodata/repomd.xml"
    repomd.write_text(repomd.read_text() + "<!-- edited after signing -->\n")
    refused = makecache("dnf2")
    assert refused.returncode != 0 and "Bad GPG signature" in refused.stdout + refused.stderr
    assert "not a good signature" in one_error(
        verify("--repo", str(root), "--format", "rpm", "--keyring", str(keyring))
    )


@pytest.mark.parametrize("encoding", ["U-F-8", "shift_jis", "x"])
def test_a_repomd_declaring_an_encoding_expat_cannot_read_is_one_error(tmp_path, encoding):
    # Found by tests/fuzz/test_verify_indexes.py: expat raises LookupError or ValueError,
    # not ParseError, for an encoding it does not know or cannot read.
    data = f'<?xml version="1.0" encoding="{encoding}"?><repomd/>'.encode()
    with pytest.raises(VerifyError, match="not well-formed XML"):
        read_repomd(data, tmp_path / "repomd.xml")
