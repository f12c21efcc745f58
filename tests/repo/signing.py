"""A throwaway signing key for stream tests: ed25519, which current apt (sqv) and dnf
accept, made in a second (an RSA key of a strength they accept takes much longer)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run
from tests.verify.signed import Key


def make_ed25519_key(home: Path) -> Key:
    """An ed25519 signing key in the gpg home ``home`` (made, mode 0700)."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)
    gpg = ["gpg", "--batch", "--homedir", str(home)]
    user = "gfxpack stream tests <stream@example.invalid>"
    run(*gpg, "--passphrase", "", "--quick-gen-key", user, "ed25519", "sign", "never")
    listing = run(*gpg, "--with-colons", "--list-secret-keys").stdout
    fingerprint = next(x.split(":")[9] for x in listing.splitlines() if x.startswith("fpr:"))
    return Key(str(home), fingerprint)
