"""Signing built package files: each format signs its own kind (an RPM carries its
signatures in its signature header; a DEB stays unsigned, as Debian signs the
repository, not the package), and the build's ``index.json`` follows the new bytes.
"""

from __future__ import annotations

import filecmp
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from gfxpack import build_index
from gfxpack._io import file_digests
from gfxpack.build import BuiltFile
from gfxpack.formats.package_format import UnknownFormat, format_of_file
from gfxpack.formats.rpmsign import SignError, same_contents, sign_rpm
from gfxpack.outdir import INDEX

# format name -> how it signs a package file in place with gpg's key (only the formats
# that sign their packages: a DEB stays unsigned, apt checks the repository)
_SIGNERS: dict[str, Callable[[Path, str, str | None], None]] = {"rpm": sign_rpm}
# format name -> whether two package files hold the same package, whatever their
# signatures (a DEB carries none: the same bytes)
_SAME_PACKAGE: dict[str, Callable[[Path, Path], bool]] = {
    "deb": lambda one, other: filecmp.cmp(one, other, shallow=False),
    "rpm": same_contents,
}


def sign_packages(files: Sequence[Path], key: str, gnupghome: str | None = None) -> list[Path]:
    """Sign every package of ``files`` whose format signs its packages (others are
    skipped) and bring the size and sha256 in the ``index.json`` beside each signed
    file up to date; the files signed."""
    signed = []
    for path in files:
        try:
            fmt = format_of_file(path.name)
        except UnknownFormat:
            continue
        if not fmt.signs_packages:
            continue
        if path.is_symlink() or not path.is_file():
            raise SignError(f"{path}: not a regular {fmt.extension} file")
        _SIGNERS[fmt.name](path, key, gnupghome)
        signed.append(path)
    for directory in sorted({p.parent for p in signed}):
        _refresh_index(directory, {p.name for p in signed if p.parent == directory})
    return signed


def sign_built(
    out: Path, built: Sequence[BuiltFile], key: str, gnupghome: str | None = None
) -> list[BuiltFile]:
    """Sign a build's packages in ``out`` (:func:`sign_packages`); ``built`` with the
    signed files' sizes and digests."""
    signed = {p.name for p in sign_packages([out / item.file for item in built], key, gnupghome)}
    return [_measured(out, item) if item.file in signed else item for item in built]


def sign_unless_published(package: Path, published: Path, key: str) -> None:
    """Sign ``package``, unless the same package is published already as ``published``:
    then that file is taken, since a signature differs each time it is made and a
    published file never changes."""
    fmt = format_of_file(package.name)
    if (
        published.is_file()
        and not published.is_symlink()
        and _SAME_PACKAGE[fmt.name](package, published)
    ):
        shutil.copyfile(published, package)
    else:
        sign_packages([package], key)


def _measured(out: Path, item: BuiltFile) -> BuiltFile:
    size, (sha256,) = file_digests(out / item.file, "sha256")
    return replace(item, size=size, sha256=sha256)


def _refresh_index(directory: Path, names: set[str]) -> None:
    """Rewrite the sizes and digests of ``names`` in directory/index.json, if it has one."""
    if not (directory / INDEX).is_file() or (directory / INDEX).is_symlink():
        return
    try:
        index = build_index.read(directory)
    except build_index.InvalidBuildIndex as e:
        raise SignError(f"{e}; signed files are not recorded") from None
    files = []
    for item in index.files:
        if item.file in names:
            size, (sha256,) = file_digests(directory / item.file, "sha256")
            item = replace(item, size=size, sha256=sha256)
        files.append(item)
    build_index.write(directory, replace(index, files=tuple(files)))
