"""The repository's public key, published beside the indexes it signs.

apt reads a binary keyring named by ``signed-by``; dnf and zypper read an
armored key named by ``gpgkey``. Both are exported from the signing key by gpg
and written into the repository, so the setup lines printed by ``gfxpack repo``
point at files that exist.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gfxpack.repo.inputs import RepoError

APT_KEYRING = "gfxpack-archive-keyring.gpg"
RPM_KEY = "RPM-GPG-KEY-gfxpack"


@dataclass(frozen=True, slots=True)
class PublicKey:
    binary: bytes  # an OpenPGP keyring: what apt's signed-by takes
    armored: bytes  # the same key ASCII-armored: what rpm --import and gpgkey= take


def export_public_key(key: str, gnupghome: str | None) -> PublicKey:
    """The public part of ``key``, as gpg exports it (no other key, no secret part)."""
    env = {**os.environ, **({"GNUPGHOME": gnupghome} if gnupghome else {})}
    exported = []
    for armor in ([], ["--armor"]):
        command = ["gpg", "--batch", "--export", "--export-options", "export-minimal", *armor]
        try:
            result = subprocess.run([*command, key], capture_output=True, env=env, check=False)
        except FileNotFoundError:
            raise RepoError("--sign-key needs gpg, which is not installed") from None
        if result.returncode != 0 or not result.stdout:
            raise RepoError(f"gpg has no public key {key} to publish (gpg --list-keys {key})")
        exported.append(result.stdout)
    return PublicKey(*exported)


def write_atomically(path: Path, data: bytes) -> None:
    """``path`` with ``data`` (mode 0644), replaced whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def publish_key(out: Path, key: PublicKey, formats: set[str]) -> dict[str, Path]:
    """Write the key into the repository at ``out`` for each published format;
    format -> the file written."""
    written: dict[str, Path] = {}
    if "deb" in formats:
        written["deb"] = out / APT_KEYRING
        write_atomically(written["deb"], key.binary)
    if "rpm" in formats:
        written["rpm"] = out / "rpm" / RPM_KEY
        write_atomically(written["rpm"], key.armored)
    return written
