"""The catalog: every loaded descriptor by key, with duplicates judged (spec section 7).

Keys are (type, id), and (type, id, sorted arch) for packs and standalone
kernels, so per-arch shards can share an id. A second file with the same key
and the same parsed document collapses (INFO); different content conflicts:
inside one root both are dropped for good (ERROR, the key stays conflicted),
while a later root may add descriptors but never redefine a settled one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gfxpack.descriptors.diagnostics import Diagnostics
from gfxpack.descriptors.jsonc import JsoncError, loads
from gfxpack.descriptors.parse import Rejections, read_bytes
from gfxpack.descriptors.types import Descriptor, Key, key_text


def canonical(value: Any) -> Any:
    """Parsed JSON in a form where equality is the spec's: key order ignored, ints and
    floats compared as numbers, and a boolean never equal to a number."""
    if isinstance(value, dict):
        return ("object", frozenset((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("array", tuple(canonical(v) for v in value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    return (type(value).__name__, value)


@dataclass
class CatalogEntry:
    descriptor: Descriptor
    root_index: int
    conflicted: bool = False
    _canonical: Any = None

    @property
    def canonical(self) -> Any:
        # Computed only when a second file claims the key: most keys never need it.
        if self._canonical is None:
            self._canonical = document_of(self.descriptor)
        return self._canonical


def document_of(descriptor: Descriptor) -> Any:
    """The canonical document of a loaded file, read again (None if it no longer reads)."""
    try:
        return canonical(loads(read_bytes(descriptor.path)))
    except (OSError, JsoncError):
        return None


class Catalog:
    def __init__(self) -> None:
        self.entries: dict[Key, CatalogEntry] = {}
        self._root_index = 0
        # Lookups built on first use after the last insert: resolution only reads.
        self._index: dict[str, list[CatalogEntry]] | None = None
        self._groups: dict[str, dict[str, list[CatalogEntry]]] = {}
        # Files the parser did not load, by what they claimed: what a dangling reference
        # to one of them reports.
        self.rejected: Rejections = {}

    def begin_root(self, index: int) -> None:
        """Entries from earlier roots are settled from now on."""
        self._root_index = index

    def insert(self, descriptor: Descriptor, diags: Diagnostics) -> None:
        key = descriptor.key
        incumbent = self.entries.get(key)
        if incumbent is None:
            self.entries[key] = CatalogEntry(descriptor, self._root_index)
            self._index = None
            self._groups = {}
            arch = f" arch=[{','.join(key[2])}]" if len(key) > 2 and key[2] else ""
            diags.info(
                "D301",
                descriptor.path,
                f"loaded \"{descriptor.path}\" id={descriptor.id}{arch} name='{descriptor.name}'",
            )
            return
        text = key_text(key)
        if (document := document_of(descriptor)) is not None and incumbent.canonical == document:
            diags.info(
                "D302",
                descriptor.path,
                f'duplicate identical descriptor "{descriptor.path}" {text} already '
                f'loaded from "{incumbent.descriptor.path}"; skipping',
            )
        elif incumbent.root_index < self._root_index:
            diags.error(
                "D303",
                descriptor.path,
                f"\"{descriptor.path}\" redefines {text} name='{descriptor.name}' under "
                "an earlier root; ignoring the redefinition",
            )
        else:
            incumbent.conflicted = True
            diags.error(
                "D304",
                descriptor.path,
                f'"{descriptor.path}" and "{incumbent.descriptor.path}" both define '
                f"{text} name='{descriptor.name}' with different contents; ignoring both",
            )

    def healthy(self, suffix: str, ident: str) -> Descriptor | None:
        """The non-conflicted descriptor of a non-arch type, or None."""
        entry = self.entries.get((suffix, ident))
        return None if entry is None or entry.conflicted else entry.descriptor

    def of_type(self, suffix: str) -> list[CatalogEntry]:
        """Every entry of a type (conflicted included), in key order."""
        if self._index is None:
            index: dict[str, list[CatalogEntry]] = {}
            for key in sorted(self.entries):
                index.setdefault(key[0], []).append(self.entries[key])
            self._index = index
        return self._index.get(suffix, [])

    def packs_of(self, engine: str) -> list[CatalogEntry]:
        """Every pack naming an engine, in key order."""
        return self._grouped(".kdp.json", lambda d: d.body.engine).get(engine, [])

    def kernels_with_id(self, ident: str) -> list[CatalogEntry]:
        """Every standalone kernel with an id, whatever its arch, in key order."""
        return self._grouped(".ukd.json", lambda d: d.id).get(ident, [])

    def _grouped(
        self, suffix: str, by: Callable[[Descriptor], str]
    ) -> dict[str, list[CatalogEntry]]:
        if suffix not in self._groups:
            groups: dict[str, list[CatalogEntry]] = {}
            for entry in self.of_type(suffix):
                groups.setdefault(by(entry.descriptor), []).append(entry)
            self._groups[suffix] = groups
        return self._groups[suffix]
