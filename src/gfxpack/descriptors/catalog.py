"""The catalog: every loaded descriptor by key, with duplicates judged (spec section 7).

Keys are (type, id), and (type, id, sorted arch) for packs and standalone
kernels, so per-arch shards can share an id. A second file with the same key
and the same parsed document collapses (INFO); different content conflicts:
inside one root both are dropped for good (ERROR, the key stays conflicted),
while a later root may add descriptors but never redefine a settled one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gfxpack.descriptors.diagnostics import Diagnostics
from gfxpack.descriptors.types import Descriptor, key_text


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
class Entry:
    descriptor: Descriptor
    canonical: Any
    root_index: int
    conflicted: bool = False


class Catalog:
    def __init__(self) -> None:
        self.entries: dict[tuple, Entry] = {}
        self._root_index = 0

    def begin_root(self, index: int) -> None:
        """Entries from earlier roots are settled from now on."""
        self._root_index = index

    def insert(self, descriptor: Descriptor, diags: Diagnostics) -> None:
        key = descriptor.key
        text = key_text(key)
        incumbent = self.entries.get(key)
        document = canonical(descriptor.document)
        if incumbent is None:
            self.entries[key] = Entry(descriptor, document, self._root_index)
            arch = f" arch=[{','.join(key[2])}]" if len(key) > 2 and key[2] else ""
            diags.info(
                "D301",
                descriptor.path,
                f"loaded \"{descriptor.path}\" id={descriptor.id}{arch} name='{descriptor.name}'",
            )
        elif incumbent.canonical == document:
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

    def of_type(self, suffix: str) -> list[Entry]:
        """Every entry of a type (conflicted included), in key order."""
        return [self.entries[k] for k in sorted(k for k in self.entries if k[0] == suffix)]
