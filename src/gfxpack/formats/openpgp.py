"""Which OpenPGP signing keys the package managers of current distributions accept.

Debian 13's apt verifies with ``sqv`` (Sequoia), whose policy rejects signatures and
key bindings made with SHA-1 and, by apt's configuration, RSA keys under 3072 bits;
RHEL 9's rpm (and so dnf) rejects SHA-1 and DSA too. gpg and gpgv accept all of
these, so a repository signed with such a key passes gpg's checks and fails on the
machines it is for. A key is judged here as those clients judge it: the algorithm and
size of its primary key and of every signing subkey, and the hash of the newest
self-signature that binds each user id and signing subkey to it (the one Sequoia
uses).

The facts come from gpg's machine-readable listing (``--with-colons``, described in
gpg's doc/DETAILS): of a key in gpg's home (:func:`listing_of_key`) or of a keyring
file (:func:`listing_of_keyring`); :func:`key_problems` reads it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from gfxpack.errors import GfxpackError

# OpenPGP public-key algorithm ids (RFC 4880 9.1, RFC 9580 9.1).
_RSA = ("1", "2", "3")
_REJECTED_ALGORITHMS = {"16": "ElGamal", "17": "DSA", "20": "ElGamal"}
# The smallest RSA key Debian 13's apt accepts.
MIN_RSA_BITS = 3072
# Hash algorithm ids (RFC 4880 9.4) no current client accepts in a signature.
REJECTED_HASHES = {"1": "MD5", "2": "SHA-1", "3": "RIPEMD-160"}
# Self-signatures that bind a user id (0x10-0x13), a subkey (0x18) or the key itself
# (0x1f); gpg writes the class as two hex digits and 'x' (exportable) or 'l'.
_BINDING_CLASSES = ("10", "11", "12", "13", "18", "1f")
# What to do instead, said after every refusal.
ADVICE = "sign with an ed25519 or RSA-4096 key (gpg --quick-gen-key NAME ed25519 sign 2y)"


class UnacceptedKey(GfxpackError):
    """A signing key current clients would reject; the message names it and why."""


@dataclass
class _Component:
    """A key (primary or subkey) or a user id, and its newest binding self-signature."""

    what: str
    algorithm: str = ""
    bits: int = 0
    signs: bool = True
    binding: tuple[int, str] | None = None  # (creation time, hash algorithm id)


@dataclass
class _Certificate:
    key_id: str
    fingerprint: str = ""
    components: list[_Component] = field(default_factory=list)


def _certificates(listing: str) -> list[_Certificate]:
    """The certificates of a ``gpg --with-colons --list-sigs`` (or ``--show-keys
    --with-sig-list``) listing, with what :func:`key_problems` judges."""
    found: list[_Certificate] = []
    current: _Component | None = None
    for line in listing.splitlines():
        fields = line.split(":")
        kind = fields[0]
        if kind == "pub" and len(fields) > 11:
            found.append(_Certificate(fields[4]))
            current = _key(fields, "primary key")
            found[-1].components.append(current)
        elif not found:
            continue
        elif kind == "sub" and len(fields) > 11:
            # An expired or revoked subkey signs nothing; one that only encrypts is
            # never asked to verify a signature.
            usable = fields[1] not in ("e", "r") and "s" in fields[11]
            current = _key(fields, "signing subkey") if usable else None
            if current is not None:
                found[-1].components.append(current)
        elif kind == "uid" and len(fields) > 9:
            current = None if fields[1] in ("e", "r") else _Component("user id", signs=False)
            if current is not None:
                found[-1].components.append(current)
        elif kind == "fpr" and len(fields) > 9:
            if not found[-1].fingerprint:
                found[-1].fingerprint = fields[9]
            if current is not None and current.what == "signing subkey":
                current.what = f"signing subkey {fields[9]}"
        elif kind == "sig" and current is not None and len(fields) > 15:
            self_signed = fields[4] == found[-1].key_id
            if self_signed and fields[10][:2].lower() in _BINDING_CLASSES:
                made = (int(fields[5]) if fields[5].isdigit() else 0, fields[15])
                if current.binding is None or made[0] >= current.binding[0]:
                    current.binding = made
    return found


def _key(fields: list[str], what: str) -> _Component:
    bits = int(fields[2]) if fields[2].isdigit() else 0
    return _Component(what, fields[3], bits)


def key_problems(listing: str, only: Collection[str] | None = None) -> dict[str, list[str]]:
    """Primary key fingerprint -> what apt or dnf of current distributions reject in
    that certificate of ``listing`` (only those with a problem; of ``only``'s
    fingerprints, when given)."""
    wanted = {fingerprint.upper() for fingerprint in only} if only is not None else None
    problems: dict[str, list[str]] = {}
    for certificate in _certificates(listing):
        if wanted is not None and certificate.fingerprint.upper() not in wanted:
            continue
        found = []
        bound: list[str] = []
        for part in certificate.components:
            if part.signs and part.algorithm in _RSA and part.bits < MIN_RSA_BITS:
                found.append(
                    f"its {part.what} is RSA of {part.bits} bits (Debian 13's apt rejects "
                    f"RSA under {MIN_RSA_BITS} bits)"
                )
            elif part.signs and part.algorithm in _REJECTED_ALGORITHMS:
                found.append(
                    f"its {part.what} is {_REJECTED_ALGORITHMS[part.algorithm]} (apt with "
                    "sqv and RHEL 9's rpm reject it)"
                )
            if part.binding is not None and part.binding[1] in REJECTED_HASHES:
                bound.append(f"{part.what} bound with {REJECTED_HASHES[part.binding[1]]}")
        if bound:
            found.append(
                f"{', '.join(bound)} (sqv and RHEL 9's rpm reject SHA-1 signatures; new "
                "self-signatures fix it: gpg --quick-set-expire FPR 2y)"
            )
        if found:
            problems[certificate.fingerprint] = found
    return problems


def _gpg(arguments: list[str], gnupghome: str | None, what: str, missing: str = "") -> str:
    env = {**os.environ, **({"GNUPGHOME": gnupghome} if gnupghome else {})}
    try:
        result = subprocess.run(
            ["gpg", "--batch", "--with-colons", "--fixed-list-mode", *arguments],
            capture_output=True,
            env=env,
            check=False,
        )
    except FileNotFoundError:
        raise UnacceptedKey(
            f"{what} needs gpg, which is not installed (apt-get install gpg)"
        ) from None
    if result.returncode != 0:
        reason = result.stderr.decode(errors="replace").strip().splitlines()
        raise UnacceptedKey(
            f"{what}: {missing or 'gpg cannot read it'} "
            f"({reason[-1] if reason else 'exit status ' + str(result.returncode)})"
        )
    return result.stdout.decode(errors="replace")


def listing_of_key(key: str, gnupghome: str | None, what: str) -> str:
    """gpg's listing of ``key`` (a fingerprint or user id in gpg's home) and its
    signatures; ``what`` names the key in errors (``--sign-key FPR``)."""
    return _gpg(["--list-sigs", key], gnupghome, what, f"gpg has no public key {key}")


def listing_of_keyring(path: Path) -> str:
    """gpg's listing of the keys in the keyring file ``path`` (binary or armored) and
    their signatures, read in a gpg home of its own: nothing is imported."""
    with tempfile.TemporaryDirectory(prefix="gfxpack-gpg-") as home:
        return _gpg(
            ["--homedir", home, "--show-keys", "--with-sig-list", str(path)], None, str(path)
        )


def judge(
    problems: dict[str, list[str]],
    what: str,
    allow_option: str,
    allow: bool,
    warn: Callable[[str], None],
) -> None:
    """Refuse the keys of ``problems`` in one line naming ``what`` (``--sign-key FPR``),
    each key and why, or with ``allow`` only ``warn`` of them."""
    if not problems:
        return
    reasons = "; ".join(f"{fpr}: {', '.join(found)}" for fpr, found in sorted(problems.items()))
    if allow:
        warn(f"{what}: {reasons}; current apt or dnf would reject its signatures")
        return
    raise UnacceptedKey(
        f"{what}: {reasons}; current apt or dnf would reject its signatures ({ADVICE}, or "
        f"give {allow_option} to use it anyway)"
    )


def check_signing_key(
    key: str,
    gnupghome: str | None,
    *,
    what: str,
    allow_option: str = "--allow-weak-key",
    allow: bool = False,
    warn: Callable[[str], None] = lambda _: None,
) -> None:
    """Refuse (or with ``allow`` warn about) ``key`` before it signs anything, when apt
    or dnf of current distributions would reject its signatures; see the module."""
    judge(key_problems(listing_of_key(key, gnupghome, what)), what, allow_option, allow, warn)
