"""Find a split binary's code objects the way ROCm's kpack runtime does.

For each wrapper (marked ``HIPK``, ``reserved1`` = its index) the runtime reads
the ``.rocm_kpack_ref`` MessagePack the wrapper points at, and builds the
archive list: ``ROCM_KPACK_PATH`` (colon-separated .kpack paths) replaces it
entirely; otherwise ``ROCM_KPACK_PATH_PREFIX`` comes first, then each embedded
search path resolved against the binary's directory, ``@GFXARCH@`` expanded
for each of the device's target ids, most specific first (``gfx90a:xnack-``,
``gfx90a``, then the family generic). Then, arch by arch in that order, the
first existing archive that lists the arch is asked for
``<kernel_name>#<index>``. No archive at all and no archive with the arch are
distinct errors (the runtime's codes 13 and 14). ``ROCM_KPACK_DISABLE`` turns
the lookup off.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import msgpack

from gfxpack import kpack
from gfxpack.errors import GfxpackError
from gfxpack.fatbin import InvalidFatBinary, elf
from gfxpack.fatbin.reader import HIPK, FatBinary
from gfxpack.fatbin.targets import TargetId

PLACEHOLDER = "@GFXARCH@"
MAX_REFERENCE = 64 * 1024  # the runtime parses at most this much


class ResolveError(GfxpackError, ValueError):
    """A code object the runtime would not find."""


class ArchiveNotFound(ResolveError):
    """None of the searched archives exists (the runtime's error 13)."""


class ArchNotFound(ResolveError):
    """Archives exist but none holds the code object for any form of the arch (14)."""


@dataclass(frozen=True)
class Found:
    index: int
    key: str
    arch: str  # the form that matched
    archive: Path
    code: bytes


@dataclass(frozen=True)
class Reference:
    kernel_name: str
    search_paths: list[str]


def read_references(binary: str | os.PathLike[str]) -> list[tuple[int, Reference]]:
    """(co_index, reference) of every HIPK wrapper of a split binary."""
    path = Path(binary)
    if not path.is_file():
        raise ResolveError(f"{path}: no such file")
    with FatBinary(path, split=True) as fat:
        if fat.elf is None or not fat.wrappers:
            raise ResolveError(f"{path}: no HIP wrappers (not a HIP binary)")
        if any(w.magic != HIPK for w in fat.wrappers):
            raise ResolveError(f"{path}: not split (its wrappers are not marked HIPK)")
        references = []
        for wrapper in fat.wrappers:
            try:
                start = fat.elf.offset_of(wrapper.binary, 1)
            except elf.ElfError as e:
                raise InvalidFatBinary(path, f"wrapper {wrapper.index}: {e}") from None
            raw = bytes(fat.view[start : start + MAX_REFERENCE])
            references.append((wrapper.reserved, _parse_reference(path, wrapper.index, raw)))
        return references


def _parse_reference(path: Path, index: int, raw: bytes) -> Reference:
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
    return Reference(value["kernel_name"], paths)


def archive_paths(
    binary: Path, reference: Reference, arches: list[str], environ: Mapping[str, str]
) -> list[str]:
    """The archives the runtime tries, in order."""
    override = _path_list(environ.get("ROCM_KPACK_PATH", ""))
    if override:
        return override
    paths = _path_list(environ.get("ROCM_KPACK_PATH_PREFIX", ""))
    directory = os.path.dirname(os.path.abspath(binary))
    for relative in reference.search_paths:
        resolved = posixpath.normpath(posixpath.join(directory, relative))
        if PLACEHOLDER in resolved:
            paths.extend(resolved.replace(PLACEHOLDER, arch, 1) for arch in arches)
        else:
            paths.append(resolved)
    return paths


def _path_list(value: str) -> list[str]:
    return [part for part in value.split(":") if part]


def resolve(
    binary: str | os.PathLike[str], target: str, environ: Mapping[str, str] | None = None
) -> list[Found]:
    """Every wrapper's code object for a device with target id ``target``."""
    environ = os.environ if environ is None else environ
    if environ.get("ROCM_KPACK_DISABLE", "0") not in ("", "0"):
        raise ResolveError("kpack loading is turned off by ROCM_KPACK_DISABLE")
    try:
        arches = TargetId.parse(target).less_specific()
    except ValueError as e:
        raise ResolveError(str(e)) from None
    path = Path(binary)
    found = []
    readers: dict[str, kpack.KpackReader | None] = {}
    try:
        for index, reference in read_references(path):
            candidates = archive_paths(path, reference, arches, environ)
            for candidate in candidates:
                if candidate not in readers:
                    readers[candidate] = _open(candidate)
            present = [c for c in dict.fromkeys(candidates) if readers[c] is not None]
            key = f"{reference.kernel_name}#{index}"
            if not present:
                raise ArchiveNotFound(
                    f"{path}: wrapper {index}: no archive found; tried "
                    + ", ".join(dict.fromkeys(candidates))
                )
            found.append(_find(path, index, key, arches, present, readers))
    finally:
        for reader in readers.values():
            if reader is not None:
                reader.close()
    return found


def _open(candidate: str) -> kpack.KpackReader | None:
    if not os.path.isfile(candidate):
        return None
    try:
        return kpack.KpackReader.open(candidate)
    except kpack.InvalidKpack:
        return None  # the runtime skips archives it cannot open


def _find(
    path: Path,
    index: int,
    key: str,
    arches: list[str],
    present: list[str],
    readers: Mapping[str, kpack.KpackReader | None],
) -> Found:
    for arch in arches:
        for candidate in present:
            reader = readers[candidate]
            assert reader is not None
            if arch not in reader.arches:
                continue
            if any(k.toc_key == key and k.arch == arch for k in reader.kernels):
                return Found(index, key, arch, Path(candidate), reader.read(key, arch))
            break  # the runtime asks only the first archive listing the arch
    raise ArchNotFound(
        f"{path}: wrapper {index}: {key} not found for {', '.join(arches)} in " + ", ".join(present)
    )
