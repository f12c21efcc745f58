"""A build directory's ``index.json``: its shape, its one reader and its one writer.

Four commands write one (``gfxpack build``, ``gfxpack merge``, ``gfxpack sign``, which
re-measures the files it signed, and ``gfxpack repo --setup-package``, whose index
lists only files) and several read one (repo's inputs, merge, report, diff's
inventory, sign, build's shard check); all go through :func:`read` and :func:`write`,
so the shape is stated once, here::

    {
      "rocm_version": "8.2.0", "release": "1", "mode": "kpack", "targets": ["gfx942"],
      "files": [{"file": ..., "package": ..., "kind": ..., "arch": ..., "format": ...,
                 "size": ..., "sha256": ..., "seconds": ..., "installed_size": ...}],
      "plan": {... plan --format json ...},
      "plan_digest": "...",
      "shard": {"label": "2/4", "packages": [...]}      (a shard's build only)
    }

Only ``files`` with ``file``, ``size`` and ``sha256`` is always there; the rest is
what a build records (a setup package's index has none of it). The plan stays a JSON
object here: :mod:`gfxpack.views` reads it, a layer above.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack.errors import GfxpackError
from gfxpack.outdir import INDEX, INDEX_LIMIT, write_json
from gfxpack.regular_files import UnreadableFile, read_small_text

_SHA256 = re.compile(r"[0-9a-f]{64}")


class InvalidBuildIndex(GfxpackError, ValueError):
    """An index.json that is not one gfxpack writes; names the file and the JSON pointer."""


class MissingBuildIndex(InvalidBuildIndex):
    """The directory has no index.json."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexedFile:
    """One file the index vouches for (its name in the directory, size and sha256) and,
    from a build, what it is: the planned package, its kind and arch, the format, how
    long it took and what it installs."""

    file: str
    size: int
    sha256: str
    package: str | None = None  # None: a listing without a plan (setup packages)
    kind: str | None = None
    arch: str | None = None  # None also for a host or generic package, so always written
    format: str | None = None
    seconds: float | None = None
    installed_size: int | None = None

    def as_json(self) -> dict[str, Any]:
        if self.package is None:
            return {"file": self.file, "size": self.size, "sha256": self.sha256}
        document: dict[str, Any] = {
            "file": self.file,
            "package": self.package,
            "kind": self.kind,
            "arch": self.arch,
            "format": self.format,
            "size": self.size,
            "sha256": self.sha256,
            "seconds": self.seconds,
        }
        if self.installed_size is not None:
            document["installed_size"] = self.installed_size
        return document


@dataclass(frozen=True, slots=True)
class ShardRecord:
    """Which shard of a release a build is, and the plan keys it built."""

    label: str
    packages: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildIndex:
    """What a build directory holds; see the module for the JSON."""

    files: tuple[IndexedFile, ...]
    rocm_version: str | None = None
    release: str | None = None
    mode: str | None = None
    targets: tuple[str, ...] | None = None
    plan: Mapping[str, Any] | None = None  # plan --format json
    plan_digest: str | None = None  # what merge compares: shards of one release share it
    shard: ShardRecord | None = None

    @property
    def version(self) -> str | None:
        """``ROCM_VERSION-RELEASE``, when the index names its version."""
        if self.rocm_version is None:
            return None
        return f"{self.rocm_version}-{self.release or '1'}"

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {}
        for key in ("rocm_version", "release", "mode"):
            if getattr(self, key) is not None:
                document[key] = getattr(self, key)
        if self.targets is not None:
            document["targets"] = list(self.targets)
        document["files"] = [item.as_json() for item in self.files]
        if self.plan is not None:
            document["plan"] = self.plan
        if self.plan_digest is not None:
            document["plan_digest"] = self.plan_digest
        if self.shard is not None:
            document["shard"] = {"label": self.shard.label, "packages": list(self.shard.packages)}
        return document


def write(directory: Path, index: BuildIndex) -> None:
    """``directory``/index.json, complete or not at all (mode 0644)."""
    write_json(directory / INDEX, index.as_json())


def read(directory: Path) -> BuildIndex:
    """The index.json of ``directory``, checked; MissingBuildIndex when there is none,
    InvalidBuildIndex (naming the file and the JSON pointer) when it is not one gfxpack
    writes. A symlink, FIFO or device is refused, never followed or opened."""
    path = directory / INDEX
    try:
        text = read_small_text(path, INDEX_LIMIT, "build index", follow_symlinks=False)
    except UnreadableFile as e:
        if e.missing:
            raise MissingBuildIndex(f"{directory}: no {INDEX}") from None
        raise InvalidBuildIndex(str(e)) from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise InvalidBuildIndex(f"{path}: not readable JSON: {e}") from None
    return from_json(document, str(path))


def from_json(document: Any, where: str) -> BuildIndex:
    """A parsed index.json (from ``where``) as a BuildIndex; see :func:`read`."""
    check = _Checker(where)
    if not isinstance(document, dict):
        raise InvalidBuildIndex(f"{where}: not a gfxpack build index (expected a JSON object)")
    listed = document.get("files")
    if not isinstance(listed, list):
        raise InvalidBuildIndex(f"{where}: not a gfxpack build index (no files list)")
    files = tuple(_file(check, item, f"/files/{i}") for i, item in enumerate(listed))
    targets = check.optional(document, "", "targets", list)
    plan = check.optional(document, "", "plan", dict)
    shard = check.optional(document, "", "shard", dict)
    return BuildIndex(
        files=files,
        rocm_version=check.optional(document, "", "rocm_version", str),
        release=check.optional(document, "", "release", str),
        mode=check.optional(document, "", "mode", str),
        targets=None if targets is None else check.strings(targets, "/targets"),
        plan=plan,
        plan_digest=check.optional(document, "", "plan_digest", str),
        shard=None if shard is None else _shard(check, shard),
    )


class _Checker:
    """Type checks that name the file and the JSON pointer of what is wrong."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, pointer: str, expected: str, value: Any) -> InvalidBuildIndex:
        shown = repr(value) if len(repr(value)) <= 80 else f"{repr(value)[:77]}..."
        return InvalidBuildIndex(f"{self.where}: {pointer}: expected {expected}, got {shown}")

    def optional(self, document: dict[str, Any], at: str, key: str, kind: type) -> Any:
        value = document.get(key)
        if value is None:
            return None
        # bool is an int to Python, never a size or a count to JSON readers.
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise self.fail(f"{at}/{key}", _NAMES[kind], value)
        return value

    def required(self, document: dict[str, Any], at: str, key: str, kind: type) -> Any:
        if document.get(key) is None:
            shown = "null" if key in document else "nothing"
            raise InvalidBuildIndex(
                f"{self.where}: {at}/{key}: expected {_NAMES[kind]}, got {shown}"
            )
        return self.optional(document, at, key, kind)

    def strings(self, values: list[Any], at: str) -> tuple[str, ...]:
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise self.fail(f"{at}/{i}", "a string", value)
        return tuple(values)


_NAMES: dict[type, str] = {
    str: "a string",
    int: "a whole number",
    float: "a number",
    list: "a list",
    dict: "an object",
}


def _file(check: _Checker, item: Any, at: str) -> IndexedFile:
    if not isinstance(item, dict):
        raise check.fail(at, "an object with file, size and sha256", item)
    name = check.required(item, at, "file", str)
    size = check.required(item, at, "size", int)
    sha256 = check.required(item, at, "sha256", str)
    if size < 0:
        raise check.fail(f"{at}/size", "a size in bytes", size)
    if not _SHA256.fullmatch(sha256):
        raise check.fail(f"{at}/sha256", "64 lowercase hex digits", sha256)
    seconds = item.get("seconds")
    if seconds is not None and (not isinstance(seconds, int | float) or isinstance(seconds, bool)):
        raise check.fail(f"{at}/seconds", "a number", seconds)
    installed = check.optional(item, at, "installed_size", int)
    if installed is not None and installed < 0:
        raise check.fail(f"{at}/installed_size", "a size in bytes", installed)
    return IndexedFile(
        file=name,
        size=size,
        sha256=sha256,
        package=check.optional(item, at, "package", str),
        kind=check.optional(item, at, "kind", str),
        arch=check.optional(item, at, "arch", str),
        format=check.optional(item, at, "format", str),
        seconds=seconds,
        installed_size=installed,
    )


def _shard(check: _Checker, shard: dict[str, Any]) -> ShardRecord:
    label = check.required(shard, "/shard", "label", str)
    packages = check.required(shard, "/shard", "packages", list)
    return ShardRecord(label, check.strings(packages, "/shard/packages"))


__all__ = [
    "INDEX",
    "BuildIndex",
    "IndexedFile",
    "InvalidBuildIndex",
    "MissingBuildIndex",
    "ShardRecord",
    "from_json",
    "read",
    "write",
]
