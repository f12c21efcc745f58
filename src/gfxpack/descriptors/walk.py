"""Finding descriptor files under a root (spec descriptors.md section 8): the one walker.

Recursive; folder names carry no meaning; directory symlinks are not
followed, file symlinks count; hidden paths are walked. A file is a
descriptor when its name ends in one of the seven suffixes after a non-empty
stem (case-sensitive); other ``.json``/``.jsonc`` files are reported and
never opened; everything else is ignored. Only regular files are opened: a
FIFO, device or socket named like JSON is reported (WARN D106) and skipped.

An *authored* tree (what ``descriptors pack --descriptors`` and ``descriptors
lint --authored`` read) is walked by the packager's rule instead (spec section 16):
hidden entries are skipped (editor and VCS files: what is packed is what the
author sees), and a symlink, to a file or a directory, is an ERROR (D102): the
packager copies what it reads into packages, so nothing outside the tree may be
read; an unreadable directory is an ERROR too (D104), since a packer that skipped
it would ship a tree with files missing. An installed tree is what a package
manager put there, so the loader reads it as the provider does.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from gfxpack.descriptors.diagnostics import Diagnostics, PathText
from gfxpack.descriptors.types import SUFFIXES
from gfxpack.regular_files import file_kind

MAX_CONSECUTIVE_ERRORS = 64


def descriptor_suffix(name: str) -> str | None:
    for suffix in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return suffix
    return None


class _Walk:
    def __init__(self, root: Path, diags: Diagnostics, authored: bool):
        self.root = root
        self.diags = diags
        self.authored = authored
        self.consecutive = 0
        self.stopped = False

    def failed(self, code: str, path: PathText, message: str) -> None:
        self.diags.error(code, path, message)
        self.consecutive += 1
        if self.consecutive >= MAX_CONSECUTIVE_ERRORS and not self.stopped:
            self.stopped = True
            self.diags.error(
                "D105",
                self.root,
                f'giving up on "{self.root}" after {MAX_CONSECUTIVE_ERRORS} '
                "consecutive errors; the walk is not advancing",
            )

    def files(self, directory: str) -> Iterator[str]:
        """Regular files (and symlinks to them) under ``directory``, depth first in name
        order, which is the order of their path components."""
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except PermissionError as e:
            if self.authored:
                self.failed("D104", directory, f'"{directory}" cannot be listed: {e.strerror}')
            return  # an installed tree's unreadable directories are skipped silently
        except OSError as e:
            self.failed("D104", self.root, f'could not continue walking "{self.root}": {e}')
            return
        for entry in entries:
            if self.stopped:
                return
            if self.authored and entry.name.startswith("."):
                continue
            try:
                entry.name.encode("utf-8")
            except UnicodeEncodeError as e:
                self.failed(
                    "D103",
                    directory,
                    f'skipping an entry under "{directory}": undecodable name ({e.reason})',
                )
                continue
            try:
                if self.authored and entry.is_symlink():
                    self.failed(
                        "D102",
                        entry.path,
                        f'"{entry.path}" is a symlink; an authored tree is read from '
                        "regular files only",
                    )
                    continue
                if entry.is_dir(follow_symlinks=False):
                    self.consecutive = 0
                    yield from self.files(entry.path)
                    continue
                if entry.is_symlink():
                    mode = os.stat(entry.path).st_mode  # dangling ones fail here
                    regular = stat.S_ISREG(mode)
                else:
                    regular = entry.is_file(follow_symlinks=False)
                    mode = 0 if regular else entry.stat(follow_symlinks=False).st_mode
            except OSError as e:
                self.failed("D102", entry.path, f'skipping "{entry.path}": {e.strerror or e}')
                continue
            self.consecutive = 0
            if regular:
                yield entry.path
            elif entry.name.lower().endswith((".json", ".jsonc")):
                # Never opened (a FIFO would block the loader), but never silently either.
                self.diags.warn(
                    "D106",
                    entry.path,
                    f'"{entry.path}" is not a regular file ({file_kind(mode)}); skipping',
                )


def descriptor_files(
    root: Path, diags: Diagnostics, authored: bool = False
) -> list[tuple[str, str]]:
    """Descriptor files under a root with their suffix, sorted by path components;
    ``authored``: the root is an authored tree (see the module's docstring)."""
    if not root.is_dir():
        diags.info("D101", root, f'no descriptor directory at "{root}"')
        return []
    found = []
    for path in _Walk(root, diags, authored).files(str(root)):
        name = os.path.basename(path)
        suffix = descriptor_suffix(name)
        if suffix is not None:
            found.append((path, suffix))
        elif name.lower().endswith((".json", ".jsonc")):
            diags.warn(
                "D106",
                path,
                f'"{path}" is not a descriptor filename (expected '
                "<name>.{kmd,uhd,ued,umd,udd,kdp,ukd}.json); skipping",
            )
    return found
