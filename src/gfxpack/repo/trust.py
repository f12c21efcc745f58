"""The repository's public key, published beside the indexes it signs.

apt reads a binary keyring named by ``signed-by``; dnf and zypper read an
armored key named by ``gpgkey``. Both are exported from the signing key by gpg
and written into the repository, so the setup lines printed by ``gfxpack repo``
point at files that exist.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gfxpack._io import FILE_MODE, atomic_write
from gfxpack.formats import PackageFormat
from gfxpack.repo.inputs import RepoError

# Where a signed rpm-md repository holds the armored key of the signature beside it
# (repodata/repomd.xml.asc), relative to the repository: where zypper and dnf look for
# a key they were not given, and what the printed setup lines import.
RPM_MD_KEY = "repodata/repomd.xml.key"


@dataclass(frozen=True, slots=True)
class PublicKey:
    binary: bytes  # an OpenPGP keyring: what apt's signed-by takes
    armored: bytes  # the same key ASCII-armored: what rpm --import and gpgkey= take


def key_path(fmt: PackageFormat, root: Path) -> Path:
    """Where the repository root ``root`` holds the key that signs ``fmt``'s repository."""
    return root / fmt.key_file


def key_bytes(fmt: PackageFormat, key: PublicKey) -> bytes:
    """The public key as ``fmt``'s package manager reads it."""
    return key.armored if fmt.armored_key else key.binary


def export_public_key(key: str, gnupghome: str | None, extra: Sequence[str] = ()) -> PublicKey:
    """The public part of ``key``, as gpg exports it (no other key, no secret part), and
    of the ``extra`` keys machines are to trust beside it (a key rotation's other key:
    docs/guides/release-streams.md)."""
    keys = [key, *extra]
    return PublicKey(_export(keys, gnupghome, armor=False), _export(keys, gnupghome, armor=True))


def export_armored_key(key: str, gnupghome: str | None, extra: Sequence[str] = ()) -> bytes:
    """The public part of ``key`` and of the ``extra`` keys, ASCII-armored: what an
    rpm-md repository publishes beside the signature of its repomd.xml, and the printed
    dnf and zypper lines import (so, during a key rotation, both keys: RPMs signed by
    either are then installed)."""
    return _export([key, *extra], gnupghome, armor=True)


def _export(keys: Sequence[str], gnupghome: str | None, armor: bool) -> bytes:
    env = {**os.environ, **({"GNUPGHOME": gnupghome} if gnupghome else {})}
    command = ["gpg", "--batch", "--export", "--export-options", "export-minimal"]
    command += ["--armor"] if armor else []
    try:
        result = subprocess.run([*command, *keys], capture_output=True, env=env, check=False)
    except FileNotFoundError:
        raise RepoError("--sign-key needs gpg, which is not installed") from None
    # gpg exports what it has of several keys and only warns of the others.
    missing = [key for key in keys if len(keys) > 1 and not _has_public_key(key, env)]
    if result.returncode != 0 or not result.stdout or missing:
        key = (missing or keys)[0]
        raise RepoError(f"gpg has no public key {key} to publish (gpg --list-keys {key})")
    return result.stdout


def _has_public_key(key: str, env: dict[str, str]) -> bool:
    command = ["gpg", "--batch", "--list-keys", key]
    return subprocess.run(command, capture_output=True, env=env, check=False).returncode == 0


def publish_key(
    out: Path, key: PublicKey, formats: Iterable[PackageFormat]
) -> dict[PackageFormat, Path]:
    """Write the key into the repository at ``out`` where each of ``formats`` publishes
    it (mode 0644, replaced whole or not at all); format -> the file written."""
    written: dict[PackageFormat, Path] = {}
    for fmt in formats:
        path = key_path(fmt, out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as file:
            os.fchmod(file.fileno(), FILE_MODE)
            file.write(key_bytes(fmt, key))
        written[fmt] = path
    return written
