"""What a ``repo --in`` directory offers: its package files, checked before anything is
published.

A gfxpack build says which files it made, with their sizes and sha256, in its
``index.json``; those must all be there, as plain regular files directly in the
directory, with exactly those bytes. A directory without ``index.json`` that shows
signs of an interrupted gfxpack build is refused; one of .deb/.rpm files made by
other tools is accepted with a warning.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gfxpack import build_index
from gfxpack._io import hasher
from gfxpack.errors import GfxpackError
from gfxpack.formats.package_format import FORMATS, PackageFormat, format_of_file
from gfxpack.outdir import INDEX
from gfxpack.regular_files import open_regular

# A package file name: one path component, no whitespace or control characters.
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~^%:-]*\.(deb|rpm)\Z")
_CHUNK = 1 << 20
# What an interrupted or failed gfxpack build leaves behind.
BUILD_LEFTOVERS = (".gfxpack-partial-*", f".{INDEX}.partial")


class RepoError(GfxpackError):
    pass


@dataclass(frozen=True, slots=True)
class InputFile:
    path: Path
    size: int
    sha256: str

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def format(self) -> PackageFormat:
        return format_of_file(self.name)


def digest(path: Path, limit: int | None = None) -> tuple[int, str]:
    """(size, sha256) of the regular file ``path``, read in chunks. Its last component
    is never followed, and only a regular file is opened (a symlink, a FIFO or a device
    is an OSError: NotARegularFile, or ELOOP), so a path swapped since it was checked
    neither hangs nor streams forever; with ``limit``, at most ``limit`` + 1 bytes are
    read (the size then says the file is not that one)."""
    sink = hasher("sha256")
    with open(open_regular(path, follow_symlinks=False), "rb") as file:
        while chunk := file.read(_CHUNK if limit is None else min(_CHUNK, limit + 1 - sink.size)):
            sink.write(chunk)
    return sink.size, sink.hexdigest()


def _regular(path: Path, where: str) -> os.stat_result:
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise RepoError(f"{where}: {path.name} is not there") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        raise RepoError(f"{path}: {kind}; only regular files are published")
    return info


def collect(build: Path, warn: Callable[[str], None]) -> tuple[list[InputFile], str | None]:
    """The package files of one ``--in`` directory, each checked (see the module), and
    the build version (``ROCM_VERSION-RELEASE``) its index names, if any: a setup
    package's or an index-less directory's files belong to no build."""
    try:
        if not build.is_dir():
            raise RepoError(f"{build}: not a directory (give the --out directory of gfxpack build)")
        if (build / INDEX).exists() or (build / INDEX).is_symlink():
            return _from_index(build)
        return _without_index(build, warn), None
    except OSError as e:
        raise RepoError(f"{build}: cannot read: {e.strerror}") from None


def _from_index(build: Path) -> tuple[list[InputFile], str | None]:
    index = build / INDEX
    _regular(index, str(build))
    try:
        read = build_index.read(build)
    except build_index.InvalidBuildIndex as e:
        raise RepoError(str(e)) from None
    files = []
    missing = []
    for number, item in enumerate(read.files):
        name, size, sha256 = item.file, item.size, item.sha256
        if not FILE_NAME.match(name):
            raise RepoError(
                f"{index}: /files/{number}/file: {name!r} is not a package file name "
                f"inside {build} (one .deb or .rpm name, no directories)"
            )
        path = build / name
        if not path.exists() and not path.is_symlink():
            missing.append(name)
            continue
        info = _regular(path, str(index))
        if info.st_size != size:
            problem = f"size {info.st_size}, not {size}"
        elif digest(path)[1] != sha256:
            problem = "its sha256 differs"
        else:
            problem = ""
        if problem:
            raise RepoError(
                f"{path}: does not match {index} ({problem}); an interrupted or failed "
                "build? build again"
            )
        files.append(InputFile(path, size, sha256))
    if missing:
        raise RepoError(
            f"{index} lists {len(missing)} file(s) that are not there, e.g. {missing[0]} "
            "(an interrupted or failed build? build again)"
        )
    return files, read.version


def _without_index(build: Path, warn: Callable[[str], None]) -> list[InputFile]:
    leftovers = sorted(p.name for pattern in BUILD_LEFTOVERS for p in build.glob(pattern))
    if leftovers:
        raise RepoError(
            f"{build}: no {INDEX}, and {leftovers[0]} is left: an interrupted or failed "
            "gfxpack build; build again"
        )
    extensions = [fmt.extension for fmt in FORMATS]
    candidates = sorted(p for p in build.iterdir() if p.suffix in extensions)
    if not candidates:
        raise RepoError(f"{build}: no {' or '.join(extensions)} files and no {INDEX}")
    files = []
    for path in candidates:
        if not FILE_NAME.match(path.name):
            raise RepoError(
                f"{build}: {path.name!r} is not a package file name "
                "(letters, digits and ._+~^%:- only)"
            )
        _regular(path, str(build))
        files.append(InputFile(path, *digest(path)))
    warn(
        f"{build}: no {INDEX}, so not a gfxpack build; publishing its "
        f"{len(files)} package file(s) as they are"
    )
    return files
