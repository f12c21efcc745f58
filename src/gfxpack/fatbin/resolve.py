"""Find a split binary's code objects the way ROCm's kpack runtime does.

For each wrapper (marked ``HIPK``, ``reserved1`` = its co_index) the runtime reads
the ``.rocm_kpack_ref`` MessagePack the wrapper points at, and builds the
archive list: ``ROCM_KPACK_PATH`` (colon-separated .kpack paths) replaces it
entirely; otherwise ``ROCM_KPACK_PATH_PREFIX`` comes first, then each embedded
search path resolved against the binary's directory, ``@GFXARCH@`` expanded
for each target id compatible with the device, most specific first
(``gfx942:sramecc+:xnack-``, ``gfx942:sramecc+``, ``gfx942:xnack-``, ``gfx942``;
no generic target: ``gfx9-4-generic`` is never tried). Then, target id by target
id in that order, every existing archive that lists it is asked for
``<kernel_name>#<index>``, and a miss falls through to the next (an ``xnack±``
archive holding a few kernels, then the bare one holding the rest). No archive at
all and no archive with the arch are distinct errors (the runtime's codes 13 and
14). ``ROCM_KPACK_DISABLE`` turns the lookup off. The rules are the runtime's:
rocm-systems ``shared/kpack/runtime/src/loader.cpp`` (``kpack_load_code_object``)
and ``isa_target_match.h``.

Before installing, the host file and its archives are apart: ``gfxpack split``
writes the host file in ``<name>_generic/...`` and each archive in the sibling
artifact ``<name>_<arch>/...``, which installing merges into one tree. A binary
inside a ``<name>_generic`` artifact (a directory holding ``artifact_manifest.txt``)
therefore has each embedded path looked up in the sibling of its arch as well,
right after the path itself: where the archive will be once installed. A miss says
what there is instead: the archives that exist for other arches, or the target ids
an archive holds the code object for.

What a lookup costs grows with the inputs, not with how often a binary repeats
itself: each reference is parsed once however many wrappers point at it, and
references may not overlap, so together they are no longer than the file; a
reference's archive list is built once, and each archive file opened once
however many paths name it; each (reference, co_index) is looked up once; and
each stored object is decompressed once (no larger than
``max_object_size``) and held only while it is handed out, one at a time
(:func:`each_code_object`).
"""

from __future__ import annotations

import itertools
import os
import posixpath
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgpack

from gfxpack import kpack
from gfxpack.artifact_layout import GENERIC, MANIFEST
from gfxpack.errors import GfxpackError
from gfxpack.fatbin import InvalidFatBinary, elf
from gfxpack.fatbin.reader import HIPK, FatBinary
from gfxpack.fatbin.targets import TargetId
from gfxpack.plan.targets import target_order

PLACEHOLDER = "@GFXARCH@"
MAX_REFERENCE = 64 * 1024  # the runtime parses at most this much
SHOWN = 5  # archives an error names before saying how many more it tried
# Directory entries read when a miss looks for the archives of other arches: enough for
# any real .kpack directory or split output, bounded for a hostile one.
LISTED = 10_000
OTHERS = 64  # archives a miss opens to say what they hold (more than there are processors)


class ResolveError(GfxpackError, ValueError):
    """A code object the runtime would not find."""

    reason = "invalid-input"  # what --json reports, for scripts


class Disabled(ResolveError):
    """``ROCM_KPACK_DISABLE`` is set."""

    reason = "disabled"


class ArchiveNotFound(ResolveError):
    """None of the searched archives exists (the runtime's error 13)."""

    reason = "archive-not-found"

    def __init__(self, message: str, tried: list[str], elsewhere: dict[str, list[str]]):
        super().__init__(message)
        self.tried = tried
        self.elsewhere = elsewhere  # archive for another arch -> the target ids it holds


class ArchNotFound(ResolveError):
    """Archives exist but none holds the code object for any form of the arch (14)."""

    reason = "arch-not-found"

    def __init__(self, message: str, held: dict[str, list[str]]):
        super().__init__(message)
        self.held = held  # archive -> the target ids it holds the code object for


@dataclass(frozen=True)
class Found:
    index: int  # the wrapper's co_index
    key: str
    arch: str  # the form that matched
    archive: Path
    code: bytes  # one object shared by every wrapper that asks for the same stored object
    wrapper: int = 0  # the wrapper's place in .hipFatBinSegment


@dataclass(frozen=True)
class Reference:
    kernel_name: str
    search_paths: list[str]


def read_references(binary: str | os.PathLike[str]) -> list[tuple[int, Reference]]:
    """(co_index, reference) of every HIPK wrapper of a split binary; wrappers that point
    at the same address share one :class:`Reference`."""
    return [(index, reference) for index, _, reference in _read_references(Path(binary))]


def _read_references(path: Path) -> list[tuple[int, int, Reference]]:
    """(co_index, file offset of the reference, reference) of every wrapper."""
    if not path.is_file():
        raise ResolveError(f"{path}: no such file")
    with FatBinary(path, split=True) as fat:
        if fat.elf is None or not fat.wrappers:
            raise ResolveError(f"{path}: no HIP wrappers (not a HIP binary)")
        if any(w.magic != HIPK for w in fat.wrappers):
            raise ResolveError(f"{path}: not split (its wrappers are not marked HIPK)")
        parsed: dict[int, tuple[Reference, int, int]] = {}  # offset -> (it, length, wrapper)
        references = []
        for wrapper in fat.wrappers:
            try:
                start = fat.elf.offset_of(wrapper.binary, 1)
            except elf.ElfError as e:
                raise InvalidFatBinary(path, f"wrapper {wrapper.index}: {e}") from None
            if start not in parsed:
                raw = bytes(fat.view[start : start + MAX_REFERENCE])
                parsed[start] = (*_parse_reference(path, wrapper.index, raw), wrapper.index)
            references.append((wrapper.reserved, start, parsed[start][0]))
        # References inside one another would each cost up to MAX_REFERENCE: refused, the
        # references of one file cost no more than the file.
        ordered = sorted(parsed.items())
        for (before, (_, length, _w)), (after, (_, _l, inside)) in itertools.pairwise(ordered):
            if before + length > after:
                raise InvalidFatBinary(
                    path,
                    f"wrapper {inside}: its kpack reference (file offset {after:#x}) lies "
                    f"inside another one (file offset {before:#x}, {length} bytes)",
                )
        return references


def _parse_reference(path: Path, index: int, raw: bytes) -> tuple[Reference, int]:
    """The reference at the start of ``raw``, and how many bytes it takes."""
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=MAX_REFERENCE)
    unpacker.feed(raw)
    try:
        value = next(unpacker)
    except (StopIteration, ValueError, msgpack.UnpackException) as e:
        raise InvalidFatBinary(path, f"wrapper {index}: unreadable kpack reference ({e})") from None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("kernel_name"), str)
        or not isinstance(value.get("kpack_search_paths"), list)
    ):
        raise InvalidFatBinary(
            path, f"wrapper {index}: expected {{kernel_name: str, kpack_search_paths: [str]}}"
        )
    paths = [p for p in value["kpack_search_paths"] if isinstance(p, str)]
    if not paths:
        raise InvalidFatBinary(path, f"wrapper {index}: no search path")
    return Reference(value["kernel_name"], paths), unpacker.tell()


def archive_paths(
    binary: Path, reference: Reference, arches: list[str], environ: Mapping[str, str]
) -> list[str]:
    """The archives the runtime tries, in order; in split output each embedded path is
    followed by its place in the sibling artifact of its arch."""
    override = _path_list(environ.get("ROCM_KPACK_PATH", ""))
    if override:
        return override
    paths = _path_list(environ.get("ROCM_KPACK_PATH_PREFIX", ""))
    directory = os.path.dirname(os.path.abspath(binary))
    artifact = split_artifact(directory)
    for resolved in _embedded(directory, reference):
        forms = [(resolved.replace(PLACEHOLDER, arch, 1), [arch]) for arch in arches]
        for path, siblings in forms if PLACEHOLDER in resolved else [(resolved, arches)]:
            paths.append(path)
            if artifact is not None:
                paths.extend(_in_sibling(artifact, path, arch) for arch in siblings)
    return [path for path in paths if path]


def _embedded(directory: str, reference: Reference) -> list[str]:
    """The reference's search paths, resolved against the binary's directory."""
    return [posixpath.normpath(posixpath.join(directory, p)) for p in reference.search_paths]


def split_artifact(directory: str) -> tuple[str, str] | None:
    """(artifact directory, artifact name) of the ``<name>_generic`` artifact that holds
    ``directory``, as ``gfxpack split`` writes them; None outside split output."""
    here = directory
    while True:
        name = posixpath.basename(here)
        if name.endswith(f"_{GENERIC}") and _is_file(posixpath.join(here, MANIFEST)):
            return here, name[: -len(GENERIC) - 1]
        parent = posixpath.dirname(here)
        if parent == here:
            return None
        here = parent


def _is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _in_sibling(artifact: tuple[str, str], path: str, arch: str) -> str:
    """Where ``path`` inside the generic artifact is in the artifact of ``arch`` ('' when
    it lies outside the generic artifact: no sibling stands for it)."""
    top, name = artifact
    if not path.startswith(top + "/"):
        return ""
    sibling = posixpath.join(posixpath.dirname(top), f"{name}_{arch}")
    return sibling + path[len(top) :]


def _path_list(value: str) -> list[str]:
    return [part for part in value.split(":") if part]


def resolve(
    binary: str | os.PathLike[str],
    target: str,
    environ: Mapping[str, str] | None = None,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> list[Found]:
    """Every wrapper's code object for a device with target id ``target``, in wrapper
    order. All of them are held at once: :func:`each_code_object` streams them."""
    found = each_code_object(binary, target, environ, max_object_size)
    return sorted(found, key=lambda item: item.wrapper)


def each_code_object(
    binary: str | os.PathLike[str],
    target: str,
    environ: Mapping[str, str] | None = None,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> Iterator[Found]:
    """Every wrapper's code object, by archive and stored object (not by wrapper), each
    stored object read once and held only until the next one is read. Every wrapper is
    located in the archives' tables first: a missing archive or arch is raised before
    anything is read."""
    environ = os.environ if environ is None else environ
    if environ.get("ROCM_KPACK_DISABLE", "0") not in ("", "0"):
        raise Disabled("kpack loading is turned off by ROCM_KPACK_DISABLE")
    try:
        arches = TargetId.parse(target).compatible()
    except ValueError as e:
        raise ResolveError(str(e)) from None
    path = Path(binary)
    readers = _Readers(max_object_size)
    try:
        located = _locate(path, arches, environ, readers)
        located.sort(key=lambda item: (item[2], item[4].ordinal, item[4].original_size))
        stored: tuple[str, int, int] | None = None
        code = b""
        for wrapper, index, candidate, arch, kernel in located:
            if (candidate, kernel.ordinal, kernel.original_size) != stored:
                code = b""  # the previous object goes before the next is read
                code = readers.get(candidate).read_kernel(kernel)
                stored = (candidate, kernel.ordinal, kernel.original_size)
            yield Found(index, kernel.toc_key, arch, Path(candidate), code, wrapper)
    finally:
        readers.close()


class _Readers:
    """The archives a lookup opens: each file once, however many paths name it (a
    reference may spell one archive a thousand ways: /proc/self/root/...)."""

    def __init__(self, max_object_size: int):
        self._max_object_size = max_object_size
        self._by_path: dict[str, kpack.KpackReader | None] = {}
        self._by_file: dict[tuple[int, int], kpack.KpackReader | None] = {}

    def present(self, candidate: str) -> bool:
        """Whether ``candidate`` is an archive that opens (the runtime skips others)."""
        if candidate not in self._by_path:
            self._by_path[candidate] = self._open(candidate)
        return self._by_path[candidate] is not None

    def _open(self, candidate: str) -> kpack.KpackReader | None:
        try:
            info = os.stat(candidate)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        identity = (info.st_dev, info.st_ino)
        if identity not in self._by_file:
            try:
                self._by_file[identity] = kpack.KpackReader.open(candidate, self._max_object_size)
            except kpack.InvalidKpack:
                self._by_file[identity] = None
        return self._by_file[identity]

    def get(self, candidate: str) -> kpack.KpackReader:
        reader = self._by_path.get(candidate)
        assert reader is not None, candidate
        return reader

    def close(self) -> None:
        for reader in self._by_file.values():
            if reader is not None:
                reader.close()


def _locate(
    path: Path, arches: list[str], environ: Mapping[str, str], readers: _Readers
) -> list[tuple[int, int, str, str, kpack.Kernel]]:
    """(wrapper, co_index, archive, arch, entry) of every wrapper, from the tables alone."""
    searched: dict[int, tuple[list[str], list[str]]] = {}  # reference -> (tried, present)
    entries: dict[tuple[int, int], tuple[str, str, kpack.Kernel]] = {}
    located = []
    for wrapper, (index, start, reference) in enumerate(_read_references(path)):
        if start not in searched:
            candidates = list(dict.fromkeys(archive_paths(path, reference, arches, environ)))
            searched[start] = (candidates, [c for c in candidates if readers.present(c)])
        candidates, present = searched[start]
        if not present:
            # With ROCM_KPACK_PATH the binary's own places are not searched: none named.
            override = _path_list(environ.get("ROCM_KPACK_PATH", ""))
            elsewhere = {} if override else _other_archives(path, reference, readers)
            others = [
                f"{archive} ({', '.join(targets) or 'empty'})"
                for archive, targets in itertools.islice(elsewhere.items(), SHOWN)
            ]
            found = f"; archives for other target ids: {', '.join(others)}" if others else ""
            raise ArchiveNotFound(
                f"{path}: wrapper {index}: no archive found; tried {_listed(candidates)}{found}",
                candidates,
                elsewhere,
            )
        if (start, index) not in entries:
            key = f"{reference.kernel_name}#{index}"
            entries[start, index] = _find(path, index, key, arches, present, readers)
        located.append((wrapper, index, *entries[start, index]))
    return located


def _other_archives(path: Path, reference: Reference, readers: _Readers) -> dict[str, list[str]]:
    """archive -> the target ids it holds, of the archives named like the reference's
    ``@GFXARCH@`` paths that exist for other arches (in a sibling artifact too), in
    processor order: what a device of another arch would find. At most OTHERS are
    opened, however many files a directory holds."""
    found = dict(itertools.islice(_named_like(path, reference, readers), OTHERS))
    return {
        archive: sorted(readers.get(archive).arches, key=target_order)
        for archive in sorted(found, key=lambda archive: target_order(found[archive]))
    }


def _named_like(path: Path, reference: Reference, readers: _Readers) -> Iterator[tuple[str, str]]:
    """(archive, the arch its name gives) of every archive that opens and whose name fits
    a ``@GFXARCH@`` search path of the reference with some arch in place of the
    placeholder: beside the binary or, in split output, in the sibling artifact of
    that arch. Each directory is read once, and LISTED bounds the work in all (a
    directory read and each name compared count one), however many search paths the
    reference holds and however many artifacts are beside it."""
    directory = os.path.dirname(os.path.abspath(path))
    artifact = split_artifact(directory)
    siblings = _siblings(artifact) if artifact is not None else []
    listings: dict[str, list[str]] = {}
    budget = LISTED
    looked: set[tuple[str, str, str | None]] = set()
    for resolved in _embedded(directory, reference):
        folder, pattern = posixpath.split(resolved)
        if PLACEHOLDER not in pattern:
            continue
        folders: list[tuple[str, str | None]] = [(folder, None)]
        if artifact is not None:
            folders += [(_in_sibling(artifact, folder, arch), arch) for arch in siblings]
        head, _, tail = pattern.partition(PLACEHOLDER)
        for where, only in folders:
            if not where or (where, pattern, only) in looked:
                continue
            looked.add((where, pattern, only))
            if where not in listings:
                listings[where] = _names(where)
            names = listings[where][: budget - 1]
            budget -= len(names) + 1
            for name in names:
                arch = name[len(head) : len(name) - len(tail)]
                candidate = posixpath.join(where, name)
                if (
                    len(name) > len(head) + len(tail)
                    and name.startswith(head)
                    and name.endswith(tail)
                    and only in (None, arch)
                    and readers.present(candidate)
                ):
                    yield candidate, arch
            if budget <= 0:
                return


def _siblings(artifact: tuple[str, str]) -> list[str]:
    """The arches of the artifacts beside a generic one: ``<name>_<arch>``."""
    top, name = artifact
    return [
        entry[len(name) + 1 :]
        for entry in _names(posixpath.dirname(top))
        if entry.startswith(f"{name}_") and entry != posixpath.basename(top)
    ]


def _names(directory: str) -> list[str]:
    """Up to LISTED names in ``directory``; none when it cannot be read."""
    try:
        with os.scandir(directory) as listing:
            return [entry.name for entry in itertools.islice(listing, LISTED)]
    except OSError:
        return []


def _listed(paths: list[str]) -> str:
    """The first few of ``paths``, and how many more there are."""
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def _find(
    path: Path,
    index: int,
    key: str,
    arches: list[str],
    present: list[str],
    readers: _Readers,
) -> tuple[str, str, kpack.Kernel]:
    """(archive, arch, entry) of ``key``: the most specific arch first, every archive
    listing it in search order; one that lacks the key falls through to the next."""
    for arch in arches:
        for candidate in present:
            reader = readers.get(candidate)
            if arch in reader.arches and arch in reader.arches_of(key):
                return candidate, arch, reader.find(key, arch)
    held = {
        candidate: sorted(readers.get(candidate).arches_of(key), key=target_order)
        for candidate in present
    }
    holdings = [
        f"{candidate} holds it for {', '.join(targets)}"
        if targets
        else f"{candidate} does not hold it"
        for candidate, targets in itertools.islice(held.items(), SHOWN)
    ]
    more = f"; and {len(held) - SHOWN} more archives" if len(held) > SHOWN else ""
    raise ArchNotFound(
        f"{path}: wrapper {index}: {key} not found for {', '.join(arches)}; "
        + "; ".join(holdings)
        + more,
        held,
    )
