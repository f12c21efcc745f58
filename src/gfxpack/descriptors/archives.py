"""Where the resolver reads the .kpack archives kernels name: a small protocol, and the
implementation that opens them from disk.

The resolver only asks three questions of an archive (does it exist, for which
arches does it hold a kernel, what is that kernel's sha256), so it resolves
from anything that answers them: the files on disk here, or values in tests.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Protocol

from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE, InvalidKpack, KpackReader


class ArchiveSource(Protocol):
    """The kpack archives a resolution reads. ``arches`` and ``digest`` raise ValueError
    (an InvalidKpack among them) for an archive that cannot be read."""

    def exists(self, path: str) -> bool: ...

    def arches(self, path: str, toc_key: str) -> list[str]:
        """The arches ``path`` holds a kernel ``toc_key`` for."""
        ...

    def digest(self, path: str, toc_key: str, arch: str) -> str:
        """The hex sha256 of kernel ``toc_key`` for ``arch`` in ``path``."""
        ...


class KpackArchives:
    """Archives on disk, each opened and read once per resolution; close() (or a ``with``
    block) closes them. No code object larger than ``max_object_size`` is read."""

    def __init__(self, max_object_size: int = DEFAULT_MAX_OBJECT_SIZE) -> None:
        self._readers: dict[str, KpackReader | str] = {}
        self._max_object_size = max_object_size

    def __enter__(self) -> KpackArchives:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def _reader(self, path: str) -> KpackReader:
        if path not in self._readers:
            try:
                self._readers[path] = KpackReader.open(path, self._max_object_size)
            except InvalidKpack as e:
                self._readers[path] = e.problem
        found = self._readers[path]
        if isinstance(found, str):
            raise ValueError(found)
        return found

    def arches(self, path: str, toc_key: str) -> list[str]:
        return self._reader(path).arches_of(toc_key)

    def digest(self, path: str, toc_key: str, arch: str) -> str:
        # The reader remembers digests and decompresses a shared frame once.
        reader = self._reader(path)
        return reader.digest(reader.find(toc_key, arch))

    def close(self) -> None:
        for reader in self._readers.values():
            if isinstance(reader, KpackReader):
                reader.close()
