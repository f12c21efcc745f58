"""What a signed repository's clients check beyond its indexes: each RPM's own
signature (dnf's and zypper's ``gpgcheck=1``, what ``rpmkeys -K`` checks), and that the
keys that signed are ones current apt and dnf accept (formats/openpgp.py).

gpg and gpgv accept what Debian 13's apt (sqv) and RHEL 9's rpm refuse, so a
repository that passes gpgv alone can still fail on every machine it is for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from gfxpack.formats.openpgp import (
    REJECTED_HASHES,
    UnacceptedKey,
    judge,
    key_problems,
    listing_of_keyring,
)
from gfxpack.formats.rpmsign import SignError, header_signature
from gfxpack.verify.integrity import Keyring
from gfxpack.verify.system import VerifyError


def unlisted_packages(root: Path, listed: set[Path], extension: str) -> list[Path]:
    """The package files under ``root`` its index does not list (those kept for older
    generations, or stray ones): symlinks are neither followed nor counted."""
    found = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories.sort()
        for name in sorted(names):
            path = Path(directory) / name
            if name.endswith(extension) and not path.is_symlink() and path not in listed:
                found.append(path)
    return found


def check_rpm_signatures(paths: Iterable[Path], keyring: Keyring) -> int:
    """Each .rpm of ``paths`` carries a header signature by a key of ``keyring``, as
    dnf checks with gpgcheck=1; how many were checked. Every failure is gathered and
    one error names the first and counts the rest."""
    problems = []
    checked = 0
    for path in paths:
        checked += 1
        try:
            header, signature = header_signature(path)
        except SignError as e:
            problems.append(str(e))
            continue
        if signature is None:
            problems.append(f"{path}: not signed")
            continue
        try:
            keyring.check_detached(signature, header, f"{path}: its header signature")
        except VerifyError as e:
            problems.append(str(e))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise VerifyError(
            f"{problems[0]}{more}: dnf and zypper with gpgcheck=1 refuse such a package "
            "(sign the packages: gfxpack build --sign-key, or gfxpack sign)"
        )
    return checked


def judge_signers(keyring: Keyring, allow: bool, warn: Callable[[str], None]) -> None:
    """Refuse (or with ``allow`` warn about) the keys that made the good signatures
    ``keyring`` checked, and signatures made with a hash, that current apt or dnf
    reject."""
    if not keyring.signers:
        return
    signers = {fingerprint for fingerprint, _ in keyring.signers}
    try:
        problems = key_problems(listing_of_keyring(keyring.path), only=signers)
    except UnacceptedKey as e:
        raise VerifyError(str(e)) from None
    for fingerprint, algorithm in sorted(keyring.signers):
        if algorithm in REJECTED_HASHES:
            problems.setdefault(fingerprint, []).append(
                f"signatures made with {REJECTED_HASHES[algorithm]}"
            )
    try:
        judge(problems, f"--keyring {keyring.path}", "--allow-weak-key", allow, warn)
    except UnacceptedKey as e:
        raise VerifyError(str(e)) from None
