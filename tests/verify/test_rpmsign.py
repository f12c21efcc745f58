"""gfxpack sign and build --sign-key: OpenPGP signatures in the RPM signature header,
checked by rpmkeys against the imported public key."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import RPM
from gfxpack.formats.rpm import PAYLOADDIGEST
from gfxpack.formats.rpmsign import _Layout, same_contents
from gfxpack.release import ReleaseOptions, build_release
from tests.conftest import EXAMPLE_CONFIG
from tests.verify.conftest import export_key
from tests.verify.helpers import write_package

pytestmark = pytest.mark.slow  # make check skips it: packages signed with gpg, checked by rpmkeys


def rpmkeys(dbpath: Path, key: Path, package: Path) -> subprocess.CompletedProcess[str]:
    """rpmkeys -K on ``package`` with only ``key`` imported (in a database of its own)."""
    dbpath.mkdir(exist_ok=True)
    subprocess.run(
        ["rpmkeys", "--dbpath", str(dbpath), "--import", str(key)], check=True, capture_output=True
    )
    return subprocess.run(
        ["rpmkeys", "--dbpath", str(dbpath), "-Kv", str(package)],
        capture_output=True,
        text=True,
        check=False,
    )


def sign(home: str, *args: str):
    return CliRunner().invoke(cli, ["sign", *args], env={"GNUPGHOME": home})


@pytest.fixture(params=["ed25519", "rsa"])
def key(request, gnupg, rsa_key):
    """(gpg home, fingerprint): an EdDSA key (DSA tags) and an RSA key (RSA tags)."""
    return gnupg if request.param == "ed25519" else (rsa_key.home, rsa_key.fingerprint)


def test_signed_rpm_passes_rpmkeys_and_tampering_fails(key, tmp_path):
    home, fingerprint = key
    unsigned = write_package(tmp_path / "build", RPM, "tool", files=("/opt/tool/a",))
    package = tmp_path / unsigned.name
    shutil.copy(unsigned, package)
    result = sign(home, "--key", fingerprint, str(package))
    assert result.exit_code == 0, result.output
    public = export_key(home, fingerprint, tmp_path / "key.asc", armor=True)
    checked = rpmkeys(tmp_path / "db", public, package)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # One signature, over the header, which holds the payload's digest (as rpmsign does
    # for such packages); no signature over header and payload together.
    assert checked.stdout.count("Signature, key ID") == 1
    assert "Payload SHA256 digest: OK" in checked.stdout
    assert "Header V4" in checked.stdout and "BAD" not in checked.stdout
    plain = subprocess.run(
        ["rpmkeys", "--dbpath", str(tmp_path / "db"), "-K", str(package)],
        capture_output=True,
        text=True,
    )
    assert plain.stdout.strip().endswith("digests signatures OK")
    # Reproducible apart from the signatures: header and payload are the build's.
    assert same_contents(package, unsigned)
    # Signing again replaces the signatures rather than adding more.
    assert sign(home, "--key", fingerprint, str(package)).exit_code == 0
    assert rpmkeys(tmp_path / "db", public, package).stdout.count("Signature, key ID") == 1
    data = package.read_bytes()
    for where, offset in (("payload", len(data) - 1), ("header", len(data) - 200)):
        tampered = tmp_path / f"tampered-{where}.rpm"
        changed = bytearray(data)
        changed[offset] ^= 0x01
        tampered.write_bytes(bytes(changed))
        refused = rpmkeys(tmp_path / "db", public, tampered)
        assert refused.returncode != 0, where
        assert "BAD" in refused.stdout, where


def test_build_sign_key_signs_rpms_and_leaves_debs(gnupg, example_artifacts, tmp_path):
    home, fingerprint = gnupg
    outs = {}
    for label, extra in (("plain", []), ("signed", ["--sign-key", fingerprint])):
        outs[label] = tmp_path / label
        args = ["build", "--config", str(EXAMPLE_CONFIG), "--artifacts", str(example_artifacts)]
        args += ["--out", str(outs[label]), "--rocm-version", "8.2.0", "--target", "gfx942"]
        args += ["-q", *extra]
        result = CliRunner().invoke(cli, args, env={"GNUPGHOME": home})
        assert result.exit_code == 0, result.output
    debs = sorted(p.name for p in outs["plain"].glob("*.deb"))
    assert debs
    for name in debs:  # Debian verifies the repository, not the .deb: unchanged
        assert (outs["signed"] / name).read_bytes() == (outs["plain"] / name).read_bytes()
    public = export_key(home, fingerprint, tmp_path / "key.asc", armor=True)
    rpms = sorted(outs["signed"].glob("*.rpm"))
    assert rpms
    for package in rpms:
        assert same_contents(package, outs["plain"] / package.name)
    checked = rpmkeys(tmp_path / "db", public, rpms[0])
    assert checked.returncode == 0 and "BAD" not in checked.stdout
    # index.json records the signed bytes, so gfxpack repo accepts the build.
    index = json.loads((outs["signed"] / "index.json").read_text())
    recorded = {item["file"]: item["size"] for item in index["files"]}
    assert all(recorded[p.name] == p.stat().st_size for p in rpms)


def test_sign_refuses_what_is_not_an_rpm_in_one_line(gnupg, tmp_path):
    home, fingerprint = gnupg
    bogus = tmp_path / "bogus.rpm"
    bogus.write_bytes(
        b"\xed\xab\xee\xdb" + b"\0" * 92 + b"\x8e\xad\xe8\x01\0\0\0\0\x7f\xff\xff\xff"
    )
    result = sign(home, "--key", fingerprint, str(bogus))
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bogus) in lines[0] and "signature header" in lines[0]
    text = tmp_path / "text.rpm"
    text.write_text("not a package")
    result = sign(home, "--key", fingerprint, str(text))
    assert result.exit_code == 1 and "not an RPM package" in result.stderr
    assert text.read_text() == "not a package"


def test_sign_with_a_key_gpg_does_not_have_leaves_the_file(gnupg, tmp_path):
    home, _ = gnupg
    package = write_package(tmp_path / "out", RPM, "tool")
    before = package.read_bytes()
    result = sign(home, "--key", "nobody@example.invalid", str(package))
    assert result.exit_code == 1
    # Found when the key is judged, before anything is signed.
    assert "gpg has no public key nobody@example.invalid" in result.stderr
    assert result.stderr.count("\n") == 1
    assert package.read_bytes() == before
    assert sorted(p.name for p in package.parent.iterdir()) == [package.name]  # no leftovers


def test_release_signs_rpms_for_library_callers(gnupg, example_artifacts, tmp_path, monkeypatch):
    """build_release with a sign_key signs as build --sign-key does; what it returns
    describes the signed files."""
    home, fingerprint = gnupg
    monkeypatch.setenv("GNUPGHOME", home)
    out = tmp_path / "out"
    options = ReleaseOptions("8.2.0", targets=("gfx942",), detect_mode=True, sign_key=fingerprint)
    _, built = build_release(EXAMPLE_CONFIG, example_artifacts, out, options)
    rpms = [item for item in built if item.file.endswith(".rpm")]
    assert rpms and len(rpms) < len(built)
    public = export_key(home, fingerprint, tmp_path / "key.asc", armor=True)
    checked = rpmkeys(tmp_path / "db", public, out / rpms[0].file)
    assert checked.returncode == 0 and checked.stdout.count("Signature, key ID") == 1
    recorded = {
        item["file"]: item for item in json.loads((out / "index.json").read_text())["files"]
    }
    for item in built:
        data = (out / item.file).read_bytes()
        assert (item.size, item.sha256) == (len(data), hashlib.sha256(data).hexdigest())
        assert (recorded[item.file]["size"], recorded[item.file]["sha256"]) == (
            item.size,
            item.sha256,
        )


def _damaged(package: Path, where: str) -> bytes:
    """The package's bytes with one bit of its payload flipped, or its main header's
    payload digest turned into another tag while the header's own digest still fits."""
    data = bytearray(package.read_bytes())
    if where == "payload":
        data[-1] ^= 0x01
        return bytes(data)
    with open(package, "rb") as file:
        header = _Layout(package, file).header
    start = data.find(header)
    count = int.from_bytes(header[8:12], "big")
    for number in range(count):
        entry = start + 16 + 16 * number
        if int.from_bytes(data[entry : entry + 4], "big") == PAYLOADDIGEST:
            data[entry : entry + 4] = (PAYLOADDIGEST + 900).to_bytes(4, "big")
    changed = bytes(data[start : start + len(header)])
    old, new = (hashlib.sha256(h).hexdigest().encode() for h in (header, changed))
    sha1_old, sha1_new = (hashlib.sha1(h).hexdigest().encode() for h in (header, changed))
    return bytes(data).replace(old, new).replace(sha1_old, sha1_new)


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("payload", "its payload does not match the SHA-256 its header records"),
        ("digest", "its header records no payload digest"),
    ],
)
def test_sign_refuses_a_package_its_header_does_not_vouch_for(gnupg, tmp_path, where, message):
    """A signature over the header vouches for the payload through the digest the header
    records: a package whose payload does not match it, or which records none, is refused,
    and left as it was."""
    home, fingerprint = gnupg
    built = write_package(tmp_path / "build", RPM, "tool", files=("/opt/tool/a",))
    package = tmp_path / built.name
    package.write_bytes(_damaged(built, where))
    before = package.read_bytes()
    result = sign(home, "--key", fingerprint, str(package))
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(package) in lines[0] and message in lines[0]
    assert package.read_bytes() == before
