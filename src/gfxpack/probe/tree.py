"""An installed root as probe reads it: listed once, no symlink followed out of it.

The walk records every entry's kind without following a symlink; a link is then
followed by :meth:`InstalledTree.resolve` as the runtime inside that root would
follow it (an absolute target starts again at the root, ``..`` stops at the root),
through entries the walk saw only, at most :data:`MAX_LINKS` links deep. So a
library whose data is a link to a file in the root counts, one to a file outside
it does not, and a loop ends. The listing is bounded: a root of more than
:data:`MAX_ENTRIES` entries is refused rather than read without end.
"""

from __future__ import annotations

import bisect
import os
import posixpath
import stat
from pathlib import Path

from gfxpack.probe.model import ProbeError
from gfxpack.regular_files import printable

MAX_ENTRIES = 2_000_000  # a full ROCm install is about 60,000 entries
MAX_LINKS = 40  # as the kernel's path lookup (ELOOP)
FILE, DIRECTORY, LINK, OTHER = "file", "dir", "link", "other"


class InstalledTree:
    """The entries of ``root``: relative path (``/``-separated) -> kind."""

    def __init__(self, root: Path, limit: int = MAX_ENTRIES) -> None:
        self.root = root
        self.kinds: dict[str, str] = {}
        self.children: dict[str, list[str]] = {}
        self._by_kind: dict[str, list[str]] = {}
        self._walk(limit)

    def _walk(self, limit: int) -> None:
        try:
            top = os.lstat(self.root)
        except OSError as e:
            raise ProbeError(f"{printable(str(self.root))}: cannot read ({e.strerror})") from None
        if not stat.S_ISDIR(top.st_mode):
            raise ProbeError(f"{printable(str(self.root))}: expected a directory (an install root)")
        pending = [""]
        while pending:
            relative = pending.pop()
            names: list[str] = []
            try:
                with os.scandir(self.root / relative if relative else self.root) as listing:
                    entries = list(listing)
            except OSError:
                entries = []  # unreadable: nothing in it counts
            for entry in entries:
                path = f"{relative}/{entry.name}" if relative else entry.name
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue  # gone since the listing
                kind = (
                    DIRECTORY
                    if stat.S_ISDIR(mode)
                    else FILE
                    if stat.S_ISREG(mode)
                    else LINK
                    if stat.S_ISLNK(mode)
                    else OTHER
                )
                self.kinds[path] = kind
                names.append(entry.name)
                if len(self.kinds) > limit:
                    raise ProbeError(
                        f"{printable(str(self.root))}: more than {limit:,} entries; "
                        "expected an install root"
                    )
                if kind == DIRECTORY:
                    pending.append(path)
            self.children[relative] = sorted(names)

    def paths(self, kind: str = FILE) -> list[str]:
        """Every entry of ``kind``, in path order (listed once per kind)."""
        if kind not in self._by_kind:
            self._by_kind[kind] = sorted(p for p, k in self.kinds.items() if k == kind)
        return self._by_kind[kind]

    def files_under(self, top: str) -> list[str]:
        """Every regular file below the directory ``top`` (no link followed), in path
        order: a slice of the sorted list, however many other files the root holds."""
        files = self.paths(FILE)
        prefix = top + "/"
        start = bisect.bisect_left(files, prefix)
        end = bisect.bisect_left(files, top + "0")  # "0" follows "/" in code point order
        return files[start:end]

    def listing(self, directory: str) -> list[str]:
        """The names directly in ``directory`` (after links, inside the root)."""
        real = self.resolve(directory)
        if real is None or self.kinds.get(real, DIRECTORY if real == "" else None) != DIRECTORY:
            return []
        return self.children.get(real, [])

    def is_file(self, path: str) -> bool:
        """Whether ``path`` reaches a regular file of the root."""
        real = self.resolve(path)
        return real is not None and self.kinds.get(real) == FILE

    def is_directory(self, path: str) -> bool:
        real = self.resolve(path)
        return real is not None and (real == "" or self.kinds.get(real) == DIRECTORY)

    def resolve(self, path: str) -> str | None:
        """The entry ``path`` reaches, links followed inside the root; None when it
        leads nowhere the walk saw (out of the root, a loop, nothing there)."""
        pending = [p for p in path.split("/") if p not in ("", ".")]
        pending.reverse()
        here: list[str] = []
        links = 0
        while pending:
            part = pending.pop()
            if part == "..":
                if here:
                    here.pop()
                continue
            current = "/".join([*here, part])
            kind = self.kinds.get(current)
            if kind is None:
                return None
            if kind != LINK:
                here.append(part)
                continue
            links += 1
            if links > MAX_LINKS:
                return None
            try:
                target = os.readlink(self.root / current)
            except OSError:
                return None
            if target.startswith("/"):
                here = []
            pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
        return "/".join(here)

    def absolute(self, path: str) -> Path:
        return self.root / path if path else self.root


def parent(path: str) -> str:
    return posixpath.dirname(path)
