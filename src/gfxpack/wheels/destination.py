"""The split of one unpacked wheel, kept as the members of the wheels it becomes.

A :class:`~gfxpack.fatbin.destination.SplitDestination` for the wheel split: where
:class:`~gfxpack.fatbin.destination.TreeDestination` writes an artifacts tree
that the wheel split would then walk back, :class:`WheelDestination` keeps, for
each target's part (``<group>_<target>/stage/...``, see
:func:`~gfxpack.fatbin.split.tree_part`), the member path, its mode and where its
bytes are: a file split leaves as it is stays where the wheel was unpacked (not
linked, not copied); the files split makes (host binaries, archives) are written
once, into a spool directory, and go from there into the wheels. The split record
and the long byte runs of its recipes are kept for the host wheel and for the
join data beside it; the artifact manifests and therock_manifest.json, which no
wheel holds, are not written at all.

Each output path is written once, as in a tree: a second file at one path, or a
file where a directory is, is the same error a tree gives (an input holding a file
where split puts one of its own).
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat
from pathlib import Path
from typing import BinaryIO

from gfxpack.artifact_layout import artifact_name
from gfxpack.fatbin import SplitError
from gfxpack.fatbin.destination import write_error
from gfxpack.fatbin.record import LITERALS, SPLIT_INDEX
from gfxpack.fatbin.source import TREE_PREFIX, SplitInput

# A member: (mode, the file holding its bytes, or the bytes).
Member = tuple[int, Path | bytes]


class WheelDestination:
    """The parts of the split of ``group``'s install tree (see the module docstring),
    new files written under ``spool`` (a new, empty directory); ``shown`` names the
    wheel in what the split refuses."""

    def __init__(self, spool: Path, group: str, shown: str) -> None:
        self.spool, self._group, self._shown = spool, group, shown
        self._members: dict[str, Member | None] = {}  # output path -> member; None: made
        self._directories: set[str] = set()
        self.index: bytes | None = None

    # The protocol (see SplitDestination).

    def directory(self, path: str, like: os.stat_result | None = None) -> None:
        if path in self._members:
            self._exists(path)
        self._directories.add(path)

    def symlink(self, path: str, target: str) -> None:
        raise SplitError(f"{path}: a symlink; a wheel holds regular files only")

    def copy(self, path: str, reading: SplitInput, source: Path) -> None:
        mode = stat.S_IMODE(reading.status(source, stat.S_IFREG).st_mode)
        self._add(path, (mode & 0o777, source))

    def new_file(self, path: str) -> BinaryIO:
        self._add(path, None)
        where = self.spool / path
        where.parent.mkdir(parents=True, exist_ok=True)
        return open(where, "xb")  # a new file; the caller closes it

    def write(self, path: str, data: bytes) -> None:
        if path == SPLIT_INDEX:
            self.index = data
        elif self._target_of(path) is not None:
            self._add(path, (0o644, data))
        # Artifact manifests and therock_manifest.json: no wheel holds them.

    def remove(self, path: str) -> None:
        del self._members[path]
        (self.spool / path).unlink()

    def size(self, path: str) -> int:
        return (self.spool / path).stat().st_size

    def finish(self) -> None:
        """Nothing to make visible: the wheels are written from :meth:`files`."""

    def discard(self) -> None:
        shutil.rmtree(self.spool, ignore_errors=True)

    def error(self, error: OSError) -> SplitError | OSError:
        # A path written twice is the wheel's doing: named by it. What the system
        # refused names the spool, which the wheel split names OUT for.
        named = Path(self._shown) if isinstance(error, FileExistsError) else self.spool
        return write_error(error, named, self.spool)

    # What the wheels are made of.

    def literals(self) -> Path:
        """The file of the long byte runs the split record refers to."""
        return self.spool / LITERALS

    def targets(self) -> list[str]:
        """The targets with a part (:data:`~gfxpack.artifact_layout.GENERIC` the host's)."""
        found = {self._target_of(path) for path in self._members}
        return sorted(t for t in found if t is not None)

    def files(self, target: str) -> list[tuple[str, int, Path | bytes]]:
        """Every file of ``target``'s part as (path inside the install tree, mode, file
        or bytes), sorted by path."""
        top = f"{artifact_name(self._group, target)}/{TREE_PREFIX}/"
        files: list[tuple[str, int, Path | bytes]] = []
        for path, member in self._members.items():
            if not path.startswith(top):
                continue
            if member is None:  # made here: its mode as the split left it
                made = self.spool / path
                member = (stat.S_IMODE(made.stat().st_mode) & 0o777, made)
            files.append((path[len(top) :], *member))
        return sorted(files, key=lambda f: f[0])

    def _target_of(self, path: str) -> str | None:
        directory, _, rest = path.partition("/")
        prefix = f"{self._group}_"
        if not directory.startswith(prefix) or not rest.startswith(f"{TREE_PREFIX}/"):
            return None
        return directory[len(prefix) :]

    def _add(self, path: str, member: Member | None) -> None:
        parents = []
        parent = posixpath.dirname(path)
        while parent:
            parents.append(parent)
            parent = posixpath.dirname(parent)
        if path in self._members or path in self._directories:
            self._exists(path)
        if clash := next((p for p in parents if p in self._members), None):
            self._exists(clash)
        self._directories.update(parents)
        self._members[path] = member

    def _exists(self, path: str) -> None:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(self.spool / path))


__all__ = ["WheelDestination"]
