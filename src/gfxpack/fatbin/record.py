"""The split record: what :mod:`gfxpack.fatbin.join` needs to give back a split's input.

``gfxpack-split.msgpack`` at the top of a split (in a split wheel, inside the host
wheel's own record) holds, for every artifact split, where each file came from and
how to undo each rewrite (:meth:`gfxpack.fatbin.rewrite.Recipe.to_msgpack`);
``gfxpack-split.data`` beside it holds the long byte runs those recipes refer to
(compressed bundles: their zstd bytes cannot be made again from the code objects).
The split fills a :class:`SplitRecord` as it writes; join reads it back with
:func:`read_split_index`, and checks every field it uses (the record is input).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from gfxpack.fatbin import SplitError
from gfxpack.regular_files import NotARegularFile, open_regular, printable

SPLIT_INDEX = "gfxpack-split.msgpack"
LITERALS = "gfxpack-split.data"  # long literal bytes of the join records
INDEX_FORMAT = 2  # 2: the original's digest takes code objects by their sha256


@dataclass
class SplitRecord:
    """The record of one split, as it is written: ``kind`` ("therock" or "tree"), one
    entry per fat artifact split (:meth:`add_job`), the directories copied as they are,
    and the input's therock_manifest.json bytes (None when it had none)."""

    kind: str
    jobs: list[dict[str, Any]] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)
    therock_manifest: bytes | None = None

    def add_job(
        self,
        group: str,
        source: str | None,
        generic: str,
        archives: dict[str, str],
        files: list[list[Any]],
    ) -> None:
        """One fat artifact: its ``<name>_<component>``, the input directory it came
        from (None for an install tree), its host directory, its archives by processor
        and its files as ``[output path, original path, kind, recipe or None]``."""
        self.jobs.append(
            {
                "group": group,
                "source": source,
                "generic": generic,
                "archives": archives,
                "files": files,
            }
        )

    def to_msgpack(self) -> bytes:
        index: dict[str, Any] = {
            "format": INDEX_FORMAT,
            "kind": self.kind,
            "jobs": self.jobs,
            "copied": self.copied,
        }
        if self.therock_manifest is not None:
            index["therock_manifest"] = self.therock_manifest
        return msgpack.packb(index, use_bin_type=True)


def read_split_index(split: Path) -> dict[str, Any]:
    """The split record of the split ``split``: a regular file read through the
    split's directory, never through a symlink (nor a FIFO, which would block)."""
    path = split / SPLIT_INDEX
    try:
        directory = os.open(split, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = open_regular(SPLIT_INDEX, follow_symlinks=False, dir_fd=directory)
        finally:
            os.close(directory)
        with os.fdopen(fd, "rb") as file:
            index = msgpack.unpackb(file.read(), raw=False)
    except FileNotFoundError:
        raise SplitError(f"{split}: no {SPLIT_INDEX}; not made by 'gfxpack split'") from None
    except NotARegularFile as e:
        raise SplitError(f"{printable(str(path))}: {e.strerror}") from None
    except (OSError, ValueError, msgpack.UnpackException) as e:
        raise SplitError(f"{printable(str(path))}: unreadable: {e}") from None
    if isinstance(index, dict) and index.get("format") == 1:
        raise SplitError(f"{path}: made by an earlier gfxpack; split the input again")
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        raise SplitError(f"{path}: unknown format")
    return index


def is_split(out: Path) -> bool:
    """Whether the directory ``out`` holds a split record (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(out / SPLIT_INDEX).st_mode)
    except OSError:
        return False


__all__ = ["INDEX_FORMAT", "LITERALS", "SPLIT_INDEX", "SplitRecord", "is_split", "read_split_index"]
