"""Typed descriptors: the seven file types, after parsing and validation.

These are values: nothing changes them after parsing. They are plain slotted
dataclasses rather than frozen ones because a tree makes tens of thousands of
them and a frozen dataclass costs five times as much to construct.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Suffix -> kind name, in the spec's table order.
SUFFIXES = {
    ".kmd.json": "MetadataSchema",
    ".uhd.json": "HeuristicDescriptor",
    ".ued.json": "EngineDescriptor",
    ".umd.json": "MatchDescriptor",
    ".udd.json": "DispatchDescriptor",
    ".kdp.json": "KernelDescriptorPack",
    ".ukd.json": "KernelDescriptor",
}
ARCH_KEYED = (".kdp.json", ".ukd.json")
# Every type reads major 1 up to minor 0.
SUPPORTED = {suffix: (1, 0) for suffix in SUFFIXES}
MISSING = object()  # a KMD field with no default_value


@dataclass(slots=True)
class Field:
    name: str
    type: str  # bool | int | float | string | int_list
    default: Any = MISSING

    @property
    def mandatory(self) -> bool:
        return self.default is MISSING


@dataclass(slots=True)
class SignatureArg:
    kind: str
    size: int
    offset: int
    name: str | None = None


@dataclass(slots=True)
class KernelSource:
    kind: str
    source_file: str | None = None
    entry_point: str | None = None
    library: str | None = None
    toc_key: str | None = None
    symbol: str | None = None
    sha256: str | None = None
    signature: tuple[SignatureArg, ...] | None = None

    @property
    def archive(self) -> tuple[str, str]:
        """(library, toc_key) of a kpack source: the archive and the kernel in it."""
        if self.library is None or self.toc_key is None:
            raise ValueError(f"a {self.kind} kernel source names no kpack archive")
        return self.library, self.toc_key


@dataclass(slots=True)
class KernelDescriptor:
    id: str
    name: str
    source: KernelSource
    metadata: dict[str, Any] = field(default_factory=dict)
    priority: int = 0
    arch: tuple[str, ...] = ()
    origin_directory: str = ""  # the directory of the file that defines it (L4)
    tree_root: str = ""  # the root that file was found under
    path: str = ""


# A catalog key: (suffix, id), and (suffix, id, sorted arch) for arch-keyed types.
Key = tuple[str, str] | tuple[str, str, tuple[str, ...]]


@dataclass(slots=True)
class Descriptor:
    """One loaded file; ``body`` holds the type's fields. The parsed document, on which
    equality is judged, is not kept: it is read again from ``path`` in the rare case that
    a second file claims the same key (a tree holds one document object per JSON value,
    and keeping them all doubles what the garbage collector walks)."""

    suffix: str
    id: str  # lowercase UUID
    name: str
    path: str
    root: str
    body: Any
    arch: tuple[str, ...] = ()

    @property
    def key(self) -> Key:
        if self.suffix in ARCH_KEYED:
            return (self.suffix, self.id, tuple(sorted(self.arch)))
        return (self.suffix, self.id)


@dataclass(slots=True)
class MetadataSchema:
    fields: tuple[Field, ...]
    by_name: dict[str, Field] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {f.name: f for f in self.fields}

    def field(self, name: str) -> Field | None:
        return self.by_name.get(name)


@dataclass(slots=True)
class Heuristic:
    kind: str  # native | model
    payload: str


@dataclass(slots=True)
class Engine:
    metadata: str
    heuristic: str | None = None
    knobs: tuple[str, ...] = ()
    behavior_notes: tuple[str, ...] = ()
    numerical_notes: tuple[str, ...] = ()
    sdk_version: tuple[int, int, int] = (1, 0, 0)
    graph_match: str | None = None


@dataclass(slots=True)
class Matcher:
    scope: str  # graph | kernel
    symbol: str


@dataclass(slots=True)
class Dispatch:
    symbol: str


@dataclass(slots=True)
class Pack:
    engine: str
    dispatch: str
    matchers: tuple[str, ...]
    # Inline kernels, and the ids of referenced .ukd.json kernels, in authored order.
    kernels: tuple[KernelDescriptor, ...]
    references: tuple[str, ...]


def key_text(key: Key) -> str:
    """``<suffix> id=<uuid>[ arch=[a,b]]``."""
    text = f"{key[0]} id={key[1]}"
    return f"{text} arch=[{','.join(key[2])}]" if len(key) > 2 and key[2] else text


def arch_text(arch: tuple[str, ...]) -> str:
    return f"[{', '.join(arch)}]" if arch else "any arch"


def arch_covers(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    """An empty outer list covers everything; else every inner entry must be in it (so an
    arch-independent kernel, inheriting its pack's arch, is covered by any pack)."""
    return not outer or all(a in outer for a in inner)


def arch_overlaps(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return not a or not b or any(x in b for x in a)


def device_base(device: str) -> str:
    """A device arch compared up to its first ':' (gfx942:sramecc+:xnack- -> gfx942)."""
    return device.split(":", 1)[0]
