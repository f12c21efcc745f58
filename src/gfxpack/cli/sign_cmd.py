"""gfxpack sign: add OpenPGP signatures to built .rpm files."""

from __future__ import annotations

from pathlib import Path

import click

from gfxpack.cli.common import reports_errors, terminal_line


@click.command("sign")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--key",
    "sign_key",
    required=True,
    metavar="FPR",
    help="gpg key (fingerprint or user id) that signs; gpg's GNUPGHOME applies.",
)
@click.option(
    "--allow-weak-key",
    is_flag=True,
    help="Sign with a key current apt (sqv) or dnf rejects (RSA under 3072 bits, DSA, "
    "bound with SHA-1), with a warning; without it, that is refused.",
)
@reports_errors
def sign_command(files: tuple[str, ...], sign_key: str, allow_weak_key: bool) -> None:
    """Add OpenPGP signatures to .rpm FILES, as rpmsign --addsign does.

    Each RPM gets a signature of its header, which records the payload's SHA-256,
    made by gpg once the payload and header are checked against their digests (a
    damaged package is refused); signatures it already had are replaced. Check with
    `rpmkeys --import KEY && rpmkeys -K FILE`. .deb files are left unsigned:
    apt checks the signed repository index instead. When a file sits in a
    gfxpack build directory, its index.json is updated to the signed bytes.
    A key that current apt or dnf rejects is refused before anything is signed.
    """
    from gfxpack.formats.openpgp import check_signing_key
    from gfxpack.sign import sign_packages

    check_signing_key(
        sign_key,
        None,
        what=f"--key {sign_key}",
        allow_option="--allow-weak-key",
        allow=allow_weak_key,
        warn=lambda message: click.echo(f"warning: {terminal_line(message)}", err=True),
    )
    signed = sign_packages([Path(f) for f in files], sign_key)
    for path in signed:
        click.echo(f"signed {path}")
    skipped = len(files) - len(signed)
    if skipped:
        click.echo(f"{skipped} file(s) left unsigned (not .rpm)")
