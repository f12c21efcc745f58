"""Where the packager takes built code objects from: files under a directory, or the
entries of existing .kpack archives; one per (kernel, arch)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gfxpack.descriptors.kernel_list import ListedKernel, PackError
from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE, InvalidKpack, KpackReader


class CodeObjects(Protocol):
    """A source of built code objects, one per (kernel, arch)."""

    def read(self, kernel: ListedKernel, arch: str) -> tuple[bytes, str] | str:
        """The code object and a label of its origin, or why there is none."""
        ...

    def close(self) -> None: ...


class CodeObjectFiles:
    """Code objects as files under one directory, named by each kernel's ``code_object``
    template (``{arch}``, ``{toc_key}`` and ``{name}`` are filled in)."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise PackError([f"{self.directory}: the code object directory does not exist"])

    def read(self, kernel: ListedKernel, arch: str) -> tuple[bytes, str] | str:
        try:
            relative = kernel.code_object.format_map(
                {"arch": arch, "toc_key": kernel.toc_key, "name": kernel.name}
            )
        except (KeyError, ValueError, IndexError) as e:
            return f"its code_object {kernel.code_object!r} is not a valid template ({e})"
        path = self.directory / relative
        top = os.path.realpath(self.directory)
        if os.path.isabs(relative) or os.path.commonpath([os.path.realpath(path), top]) != top:
            return f"its code object {relative!r} lies outside {self.directory}"
        try:
            return path.read_bytes(), relative
        except FileNotFoundError:
            return f"there is no {path}"
        except OSError as e:
            return f"{path} cannot be read: {e.strerror or e}"

    def close(self) -> None:
        pass


class CodeObjectArchives:
    """Code objects taken from existing .kpack archives, looked up by (toc_key, arch);
    the first archive given that holds one wins."""

    def __init__(
        self,
        archives: Sequence[str | os.PathLike[str]],
        max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
    ):
        self.readers: list[KpackReader] = []
        try:
            for archive in archives:
                self.readers.append(KpackReader.open(archive, max_object_size))
        except InvalidKpack as e:
            self.close()
            raise PackError([str(e)]) from None

    def read(self, kernel: ListedKernel, arch: str) -> tuple[bytes, str] | str:
        for reader in self.readers:
            try:
                entry = reader.find(kernel.toc_key, arch)
            except InvalidKpack:
                continue
            try:
                code = reader.read_kernel(entry)
            except InvalidKpack as e:
                return str(e)
            return code, f"{Path(reader.name).name}#{kernel.toc_key}"
        names = ", ".join(Path(r.name).name for r in self.readers)
        return f"no archive ({names}) holds toc_key '{kernel.toc_key}' for {arch}"

    def close(self) -> None:
        for reader in self.readers:
            reader.close()
