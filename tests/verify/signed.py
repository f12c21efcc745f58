"""A signed example repository, as a release engineer publishes it: RPMs signed by
``gfxpack sign``, the indexes signed and the public key and a setup package
published by ``gfxpack repo --sign-key --setup-package --base-url``."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from gfxpack.cli import cli
from tests.conftest import run

SETUP = "rocm-repo"


@dataclass(frozen=True)
class Key:
    home: str
    fingerprint: str

    def export(self, path: Path, armor: bool = False) -> Path:
        command = ["gpg", "--homedir", self.home, "--export", *(["--armor"] if armor else [])]
        path.write_bytes(
            subprocess.run([*command, self.fingerprint], capture_output=True, check=True).stdout
        )
        return path

    def stop_agent(self) -> None:
        """End the gpg-agent this home started (a test's last step)."""
        subprocess.run(["gpgconf", "--homedir", self.home, "--kill", "all"], check=False)


def make_key(home: Path, algorithm: str, *options: str) -> Key:
    """A signing key of ``algorithm`` (gpg's name: ed25519, rsa2048...) in the gpg home
    ``home``, made with gpg's ``options`` too (``--cert-digest-algo SHA1``: a key bound
    with SHA-1). rsa4096 is what RPM signing keys usually are, and big enough for
    Debian 13's apt."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)  # gpg refuses a home others can read
    gpg = ["gpg", "--batch", "--homedir", str(home), *options]
    user = f"gfxpack {algorithm} <{algorithm}@example.invalid>"
    run(*gpg, "--passphrase", "", "--quick-gen-key", user, algorithm, "sign", "never")
    listing = run(*gpg, "--with-colons", "--list-secret-keys", user).stdout
    fingerprint = next(x.split(":")[9] for x in listing.splitlines() if x.startswith("fpr:"))
    return Key(str(home), fingerprint)


def gfxpack(key: Key, *args: str) -> str:
    """Run the gfxpack CLI with ``key``'s gpg home; its output (failing the test on error)."""
    result = CliRunner().invoke(cli, list(args), env={"GNUPGHOME": key.home})
    assert result.exit_code == 0, result.output
    return result.output


def signed_build(key: Key, build: Path, where: Path) -> Path:
    """A copy of the build directory ``build`` with its RPMs signed by gfxpack sign."""
    shutil.copytree(build, where)
    gfxpack(key, "sign", "--key", key.fingerprint, *map(str, sorted(where.glob("*.rpm"))))
    return where


def publish_signed(key: Key, build: Path, out: Path, base_url: str) -> str:
    """gfxpack repo with signing, the setup package and ``base_url``; its output."""
    return gfxpack(
        key,
        "repo",
        "--in",
        str(build),
        "--out",
        str(out),
        "--sign-key",
        key.fingerprint,
        "--setup-package",
        SETUP,
        "--base-url",
        base_url,
    )
