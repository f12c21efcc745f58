"""gfxpack sign: add OpenPGP signatures to built .rpm files."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import click

from gfxpack.cli import cli
from gfxpack.cli.common import reports_errors
from gfxpack.formats.rpmsign import SignError, sign_rpm
from gfxpack.outdir import INDEX
from gfxpack.repo.inputs import digest


def sign_files(files: Sequence[Path], key: str, gnupghome: str | None = None) -> list[Path]:
    """Sign every .rpm of ``files`` (others are skipped: a .deb stays unsigned, as
    Debian signs the repository, not the package) and bring the size and sha256 in
    the ``index.json`` beside each signed file up to date; the files signed."""
    signed = []
    for path in files:
        if path.suffix != ".rpm":
            continue
        if path.is_symlink() or not path.is_file():
            raise SignError(f"{path}: not a regular .rpm file")
        sign_rpm(path, key, gnupghome)
        signed.append(path)
    for directory in sorted({p.parent for p in signed}):
        _refresh_index(directory, {p.name for p in signed if p.parent == directory})
    return signed


def _refresh_index(directory: Path, names: set[str]) -> None:
    """Rewrite the sizes and digests of ``names`` in directory/index.json, if it has one."""
    index = directory / INDEX
    if not index.is_file() or index.is_symlink():
        return
    try:
        document = json.loads(index.read_bytes())
        listed = document["files"]
    except (ValueError, KeyError, TypeError):
        raise SignError(
            f"{index}: not a gfxpack build index; signed files are not recorded"
        ) from None
    for item in listed:
        if isinstance(item, dict) and item.get("file") in names:
            item["size"], item["sha256"] = digest(directory / item["file"])
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{INDEX}.")
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(document, indent=2) + "\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, index)


@cli.command("sign")
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

    Each RPM gets a signature of its header and one of its header and payload,
    made by gpg; signatures it already had are replaced. Check them with
    `rpmkeys --import KEY && rpmkeys -K FILE`. .deb files are left unsigned:
    apt checks the signed repository index instead. When a file sits in a
    gfxpack build directory, its index.json is updated to the signed bytes.
    """
    signed = sign_files([Path(f) for f in files], sign_key)
    for path in signed:
        click.echo(f"signed {path}")
    skipped = len(files) - len(signed)
    if skipped:
        click.echo(f"{skipped} file(s) left unsigned (not .rpm)")
