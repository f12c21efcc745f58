"""Signatures of repository metadata, made by the system's gpg."""

from __future__ import annotations

import os
import subprocess

from gfxpack.repo.inputs import RepoError


def sign(data: bytes, key: str, gnupghome: str | None, what: str, *, clear: bool) -> bytes:
    """A clear-signed copy of ``data`` (``clear``) or an armored detached signature of it,
    made with ``key``; ``what`` names the signed file in errors."""
    env = {**os.environ, **({"GNUPGHOME": gnupghome} if gnupghome else {})}
    command = ["gpg", "--batch", "--yes", "--pinentry-mode", "loopback", "--local-user", key]
    # SHA-256 whatever gpg.conf or the key's preferences say: sqv and RHEL 9's rpm
    # refuse SHA-1 signatures.
    command += ["--digest-algo", "SHA256"]
    command += ["--clearsign"] if clear else ["--armor", "--detach-sign"]
    try:
        result = subprocess.run(
            [*command, "--output", "-"], input=data, capture_output=True, env=env, check=False
        )
    except FileNotFoundError:
        raise RepoError(
            "--sign-key needs gpg, which is not installed (apt-get install gpg)"
        ) from None
    if result.returncode != 0:
        reason = result.stderr.decode(errors="replace").strip().splitlines()
        raise RepoError(
            f"gpg could not sign the {what} file with key {key}: "
            f"{reason[-1] if reason else 'exit status ' + str(result.returncode)}"
        )
    return result.stdout
