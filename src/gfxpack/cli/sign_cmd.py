"""gfxpack sign: add OpenPGP signatures to built .rpm files."""

from __future__ import annotations

from pathlib import Path

import click

from gfxpack.cli.common import reports_errors


@click.command("sign")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--key",
    "sign_key",
    required=True,
    metavar="FPR",
    help="gpg key (fingerprint or user id) that signs; gpg's GNUPGHOME applies.",
)
@reports_errors
def sign_command(files: tuple[str, ...], sign_key: str) -> None:
    """Add OpenPGP signatures to .rpm FILES, as rpmsign --addsign does.

    Each RPM gets a signature of its header, which records the payload's SHA-256,
    made by gpg once the payload and header are checked against their digests (a
    damaged package is refused); signatures it already had are replaced. Check with
    `rpmkeys --import KEY && rpmkeys -K FILE`. .deb files are left unsigned:
    apt checks the signed repository index instead. When a file sits in a
    gfxpack build directory, its index.json is updated to the signed bytes.
    """
    from gfxpack.sign import sign_packages

    signed = sign_packages([Path(f) for f in files], sign_key)
    for path in signed:
        click.echo(f"signed {path}")
    skipped = len(files) - len(signed)
    if skipped:
        click.echo(f"{skipped} file(s) left unsigned (not .rpm)")
