"""Join the shards of one release into one build output (``gfxpack merge``).

Each shard's OUT holds its packages and a partial index.json naming the shard,
its packages and the plan digest. Merging checks that every shard comes from
one plan (equal digests), that each package of the plan was built by exactly one
shard and that each listed file is there with its size, then gathers the files
into OUT (a hard link when on the same file system, else a copy, each renamed in
complete) and writes the index one machine's build would have written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack import outdir
from gfxpack._io import FILE_MODE
from gfxpack.errors import GfxpackError


class MergeError(GfxpackError):
    """Shards that do not add up to one release; names the shards and the packages."""


@dataclass(frozen=True, slots=True)
class _Part:
    out: Path
    index: dict[str, Any]
    label: str  # the shard's label, or "all" for a whole build
    packages: tuple[str, ...]
    files: tuple[dict[str, Any], ...]


def merge(shards: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> dict[str, Any]:
    """Check ``shards`` and write their union into ``out``; returns the full index."""
    if not shards:
        raise MergeError("give the OUT directory of every shard")
    parts = [_read_part(Path(path)) for path in shards]
    for i, part in enumerate(parts):
        if any(_same_directory(part.out, other.out) for other in parts[:i]):
            raise MergeError(f"{part.out}: given twice")
    _check_one_plan(parts)
    owner = _check_each_package_once(parts)
    files = [_checked(part, item) for part in parts for item in part.files]
    for item in files:
        if owner.get(item["package"]) is None:
            raise MergeError(f"{item['file']}: of package {item['package']}, not in the plan")
    files.sort(key=lambda item: (item["format"], item["file"]))
    names = [item["file"] for item in files]
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise MergeError(f"{twice[0]}: written by two shards")
    index = {key: value for key, value in parts[0].index.items() if key != "shard"}
    index["files"] = files
    _gather(parts, Path(out), index, names)
    return index


def _read_part(path: Path) -> _Part:
    index = outdir.read_index(path)
    if index is None:
        raise MergeError(f"{path / outdir.INDEX}: missing or not JSON; is {path} a build's --out?")
    digest, plan, files = index.get("plan_digest"), index.get("plan"), index.get("files")
    if not isinstance(digest, str) or not isinstance(plan, dict) or not isinstance(files, list):
        raise MergeError(
            f"{path / outdir.INDEX}: no plan digest; built by a gfxpack without shards? Rebuild it"
        )
    where = path / outdir.INDEX
    planned = plan.get("packages")
    if not isinstance(planned, list) or not all(
        isinstance(p, dict) and isinstance(p.get("name"), str) for p in planned
    ):
        raise MergeError(f"{where}: /plan/packages: expected a list of packages with names")
    shard = index.get("shard")
    if isinstance(shard, dict):
        label, packages = str(shard.get("label")), shard.get("packages")
    else:  # a whole build: every package of its plan
        label, packages = "all", [p["name"] for p in planned]
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        raise MergeError(f"{where}: /shard/packages: expected a list of names")
    for i, item in enumerate(files):
        if not (
            isinstance(item, dict)
            and all(isinstance(item.get(key), str) for key in ("file", "package", "format"))
            and isinstance(item.get("size"), int)
        ):
            raise MergeError(
                f"{where}: /files/{i}: expected an object with file, package, format and size"
            )
    return _Part(path, index, label, tuple(packages), tuple(files))


def _name(part: _Part) -> str:
    return f"{part.out} (shard {part.label})"


def _check_one_plan(parts: list[_Part]) -> None:
    first = parts[0]
    for part in parts[1:]:
        if part.index["plan_digest"] != first.index["plan_digest"]:
            raise MergeError(
                f"{_name(part)} and {_name(first)} were built from different plans "
                f"(plan digests {part.index['plan_digest'][:19]}… and "
                f"{first.index['plan_digest'][:19]}…): build every shard with the same "
                "package.json, targets, version, options and SOURCE_DATE_EPOCH"
            )


def _check_each_package_once(parts: list[_Part]) -> dict[str, _Part]:
    expected = [p["name"] for p in parts[0].index["plan"]["packages"]]
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


def _checked(part: _Part, item: dict[str, Any]) -> dict[str, Any]:
    """An index entry whose file is a plain name, there with the size the index says."""
    name, size = item.get("file"), item.get("size")
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise MergeError(f"{part.out / outdir.INDEX}: /files: {name!r} is not a file name")
    if item.get("package") not in part.packages:
        raise MergeError(f"{part.out / name}: its package is not one of the shard's")
    path = part.out / name
    try:
        found = os.lstat(path)
    except OSError as e:
        raise MergeError(f"{path}: {e.strerror}; the shard is incomplete") from None
    if not path.is_file() or path.is_symlink() or found.st_size != size:
        raise MergeError(f"{path}: expected a file of {size} bytes as index.json says")
    return item


def _gather(parts: list[_Part], out: Path, index: dict[str, Any], names: list[str]) -> None:
    outdir.create(out)
    earlier = outdir.begin(out, names)
    with outdir.scratch(out) as scratch:
        for part in parts:
            if _same_directory(part.out, out):
                continue
            for item in part.files:
                _place(part.out / item["file"], out / item["file"], Path(scratch))
    outdir.finish(out, index, names, earlier)


def _same_directory(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _place(source: Path, target: Path, scratch: Path) -> None:
    """``source`` at ``target``, complete or not at all: linked (or copied) into the
    scratch directory, then renamed."""
    partial = scratch / target.name
    try:
        try:
            os.link(source, partial, follow_symlinks=False)
        except OSError:
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
            shutil.copyfile(source, partial, follow_symlinks=False)
            os.chmod(partial, FILE_MODE)
        os.replace(partial, target)
    except OSError as e:
        raise MergeError(f"{target}: cannot write: {e.strerror or e}") from None
