"""Fat ROCm binaries: read their device code, split it into .kpack archives, join it back.

- :mod:`~gfxpack.fatbin.reader` finds ``.hip_fatbin`` and its wrappers in an
  ELF file and parses every offload bundle (:mod:`~gfxpack.fatbin.bundle`);
- :mod:`~gfxpack.fatbin.rewrite` turns one fat binary into a host binary that
  ROCm's kpack runtime loads, and records how to undo it;
- :mod:`~gfxpack.fatbin.split` and :mod:`~gfxpack.fatbin.join` do that for
  whole trees: split reads its input (:mod:`~gfxpack.fatbin.source`) and writes
  through a destination (:mod:`~gfxpack.fatbin.destination`), keeping a split
  record (:mod:`~gfxpack.fatbin.record`) that join reads back;
  :mod:`~gfxpack.fatbin.resolve` finds code objects the way the runtime does.
"""

from __future__ import annotations

import os

from gfxpack.errors import GfxpackError


class InvalidFatBinary(GfxpackError, ValueError):
    """A fat binary whose device code cannot be read; names the file and bundle."""

    def __init__(self, path: str | os.PathLike[str], problem: str, bundle: int | None = None):
        self.path = str(path)
        self.problem = problem
        self.bundle = bundle
        where = f"{path}: bundle {bundle}" if bundle is not None else str(path)
        super().__init__(f"{where}: {problem}")


class SplitError(GfxpackError, ValueError):
    """An input or output directory split cannot use."""
