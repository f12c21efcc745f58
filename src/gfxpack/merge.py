"""Join the shards of one release into one build output (``gfxpack merge``).

Each shard's OUT holds its packages and a partial index.json naming the shard,
its packages and the plan digest. Merging checks that every shard comes from
one plan (equal digests), that each package of the plan was built by exactly one
shard and that each listed file is there with the size and sha256 the index
says, then gathers the files into OUT (a hard link when on the same file system,
else a copy, each renamed in complete) and writes the index one machine's build
would have written.

A listed file must be the shard's own: a regular file directly in the shard's OUT,
never a symlink, with no hard link but its own name (and the one an earlier merge
into the same OUT made), so that merge never links a file living elsewhere on the
machine into OUT. Everything is checked before anything is written, and each file
is linked or copied from the very file that was checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from io import BufferedReader
from pathlib import Path

from gfxpack import build_index, outdir
from gfxpack._io import FILE_MODE
from gfxpack.build_index import BuildIndex, IndexedFile
from gfxpack.errors import GfxpackError
from gfxpack.regular_files import NotARegularFile, open_regular


class MergeError(GfxpackError):
    """Shards that do not add up to one release; names the shards and the packages."""


@dataclass(frozen=True, slots=True)
class _Part:
    out: Path
    index: BuildIndex
    label: str  # the shard's label, or "all" for a whole build
    packages: tuple[str, ...]
    plan_digest: str


@dataclass(frozen=True, slots=True)
class _Source:
    """A listed file as checked, and which file it was (device, inode): that one is
    linked, not whatever its name leads to later."""

    item: IndexedFile
    path: Path
    target: Path  # its name in OUT
    identity: tuple[int, int]
    in_out: bool  # the shard is OUT itself: the file stays where it is


def merge(shards: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> BuildIndex:
    """Check ``shards`` and write their union into ``out``; returns the full index."""
    if not shards:
        raise MergeError("give the OUT directory of every shard")
    parts = [_read_part(Path(path)) for path in shards]
    for i, part in enumerate(parts):
        if any(_same_directory(part.out, other.out) for other in parts[:i]):
            raise MergeError(f"{part.out}: given twice")
    _check_one_plan(parts)
    owner = _check_each_package_once(parts)
    target = Path(out)
    sources = [_checked(part, item, target) for part in parts for item in part.index.files]
    files = [source.item for source in sources]
    for item in files:
        if item.package is None or owner.get(item.package) is None:
            raise MergeError(f"{item.file}: of package {item.package}, not in the plan")
    files.sort(key=lambda item: (item.format or "", item.file))
    names = [item.file for item in files]
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise MergeError(f"{twice[0]}: written by two shards")
    index = replace(parts[0].index, files=tuple(files), shard=None)
    _gather([source for source in sources if not source.in_out], target, index, names)
    return index


def _read_part(path: Path) -> _Part:
    try:
        index = build_index.read(path)
    except build_index.MissingBuildIndex:
        raise MergeError(
            f"{path / outdir.INDEX}: missing or not JSON; is {path} a build's --out?"
        ) from None
    digest, plan = index.plan_digest, index.plan
    if digest is None or plan is None:
        raise MergeError(
            f"{path / outdir.INDEX}: no plan digest; built by a gfxpack without shards? Rebuild it"
        )
    where = path / outdir.INDEX
    planned = plan.get("packages")
    if not isinstance(planned, list) or not all(
        isinstance(p, dict) and isinstance(p.get("name"), str) for p in planned
    ):
        raise MergeError(f"{where}: /plan/packages: expected a list of packages with names")
    if index.shard is not None:
        label, packages = index.shard.label, index.shard.packages
    else:  # a whole build: every package of its plan
        label, packages = "all", tuple(p["name"] for p in planned)
    for i, item in enumerate(index.files):
        if item.package is None or item.format is None:
            raise MergeError(
                f"{where}: /files/{i}: expected an object with file, package, format, size "
                "and sha256 (64 hex digits)"
            )
    return _Part(path, index, label, packages, digest)


def _name(part: _Part) -> str:
    return f"{part.out} (shard {part.label})"


def _check_one_plan(parts: list[_Part]) -> None:
    first = parts[0]
    for part in parts[1:]:
        if part.plan_digest != first.plan_digest:
            raise MergeError(
                f"{_name(part)} and {_name(first)} were built from different plans "
                f"(plan digests {part.plan_digest[:19]}… and "
                f"{first.plan_digest[:19]}…): build every shard with the same "
                "package.json, targets, version, options and SOURCE_DATE_EPOCH"
            )


def _check_each_package_once(parts: list[_Part]) -> dict[str, _Part]:
    plan = parts[0].index.plan or {}
    expected = [p["name"] for p in plan["packages"]]
    owner: dict[str, _Part] = {}
    for part in parts:
        for key in part.packages:
            if key not in expected:
                raise MergeError(f"{_name(part)}: package {key} is not in the plan")
            if key in owner:
                raise MergeError(
                    f"package {key} was built twice: by {_name(owner[key])} and by {_name(part)}"
                )
            owner[key] = part
    missing = [key for key in expected if key not in owner]
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise MergeError(
            f"{len(missing)} of {len(expected)} packages built by no shard given: {shown} "
            "(is a shard's OUT missing?)"
        )
    return owner


def _checked(part: _Part, item: IndexedFile, out: Path) -> _Source:
    """The file of an index entry: a plain name, the shard's own file (see the module),
    with the size and sha256 the index says."""
    name, size = item.file, item.size
    if not name or "/" in name or name.startswith("."):
        raise MergeError(f"{part.out / outdir.INDEX}: /files: {name!r} is not a file name")
    if item.package not in part.packages:
        raise MergeError(f"{part.out / name}: its package is not one of the shard's")
    path, target = part.out / name, out / name
    in_out = _same_directory(part.out, out)
    with _opened(path) as file:
        found = _own_file(file, path, None if in_out else target)
        if found.st_size != size:
            raise MergeError(f"{path}: expected a file of {size} bytes as index.json says")
        if hashlib.file_digest(file, "sha256").hexdigest() != item.sha256:
            raise MergeError(
                f"{path}: not the file {part.out / outdir.INDEX} lists (another sha256; "
                "damaged or changed since its build?): build the shard again"
            )
    return _Source(item, path, target, _identity(found), in_out)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[BufferedReader]:
    """``path`` open for reading: a regular file, never reached through a symlink."""
    try:
        fd = open_regular(path, follow_symlinks=False)
    except NotARegularFile as e:
        raise MergeError(f"{path}: {e.strerror}; merge takes only the shard's own files") from None
    except OSError as e:
        raise MergeError(f"{path}: {e.strerror}; the shard is incomplete") from None
    with os.fdopen(fd, "rb") as file:
        yield file


def _own_file(file: BufferedReader, path: Path, target: Path | None) -> os.stat_result:
    """The open file's status, when it has no hard link but its name in the shard (and
    its name at ``target``, where an earlier merge linked it): another link may be any
    file of the machine, which OUT would then share."""
    found = os.fstat(file.fileno())
    allowed = 1
    if target is not None:
        with contextlib.suppress(OSError):
            if _identity(os.lstat(target)) == _identity(found):
                allowed = 2
    if found.st_nlink > allowed:
        raise MergeError(
            f"{path}: has {found.st_nlink - 1} other hard link(s), so it may be a file of "
            "the machine rather than the shard's; merge takes only the shard's own files "
            "(copy the shard without links, or build it again)"
        )
    return found


def _identity(found: os.stat_result) -> tuple[int, int]:
    return found.st_dev, found.st_ino


def _gather(sources: list[_Source], out: Path, index: BuildIndex, names: list[str]) -> None:
    outdir.create(out)
    earlier = outdir.begin(out, names)
    with outdir.scratch(out) as scratch:
        for source in sources:
            _place(source, Path(scratch))
    outdir.finish(out, lambda: build_index.write(out, index), names, earlier)


def _same_directory(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _place(source: _Source, scratch: Path) -> None:
    """The checked file at its target, complete or not at all: linked (or copied) into
    the scratch directory, then renamed. Refused when its name now leads to another file."""
    partial = scratch / source.target.name
    with _opened(source.path) as file:
        if _identity(_own_file(file, source.path, source.target)) != source.identity:
            raise _replaced(source)
        try:
            try:
                os.link(source.path, partial, follow_symlinks=False)
            except OSError:  # another file system, or links not allowed: a copy of it
                with contextlib.suppress(FileNotFoundError):
                    partial.unlink()
                with open(partial, "xb") as copy:
                    shutil.copyfileobj(file, copy, 1 << 20)
                os.chmod(partial, FILE_MODE)
            else:  # linked by name: the name must still lead to the file checked
                if _identity(os.lstat(partial)) != source.identity:
                    partial.unlink()
                    raise _replaced(source)
            os.replace(partial, source.target)
        except OSError as e:
            raise MergeError(f"{source.target}: cannot write: {e.strerror or e}") from None


def _replaced(source: _Source) -> MergeError:
    return MergeError(f"{source.path}: replaced while merging; merge again")
