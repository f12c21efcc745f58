"""Lint: every descriptor file against its type's JSON Schema, the lowest version it needs,
then the loader (spec descriptors.md section 13; RFC 0020 sections 11.3 and 11.4).

Schemas ship in ``gfxpack/descriptors/schemas/<type>/<major>.<minor>.json``,
Draft 7, with ``version`` as a const. The lowest version a file needs is the
lowest minor of its major whose schema accepts the document; a file stamped
higher than that is flagged, since authors stamp the lowest version they need.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gfxpack.descriptors.diagnostics import Diagnostic, Level
from gfxpack.descriptors.jsonc import JsoncError, loads
from gfxpack.descriptors.loader import SYMBOLS_UNCHECKED, LoadResult, load_validated
from gfxpack.descriptors.parse import UNKNOWN_ARCH
from gfxpack.descriptors.registry import EngineNames, SymbolRegistry
from gfxpack.descriptors.schema_messages import violation_lines
from gfxpack.descriptors.walk import descriptor_files
from gfxpack.kpack import DEFAULT_MAX_OBJECT_SIZE
from gfxpack.regular_files import read_regular

if TYPE_CHECKING:
    from jsonschema import Draft7Validator

_VERSION = re.compile(r"^([0-9]{1,9})\.([0-9]{1,9})$")


@cache
def schema_versions(suffix: str) -> dict[tuple[int, int], Draft7Validator]:
    """Every shipped schema of a type, by (major, minor)."""
    # Imported here, not at the top: jsonschema takes longer to import than most
    # commands take to run, and list-engines and pack import this module too.
    from jsonschema import Draft7Validator

    kind = suffix.split(".")[1]
    found = {}
    for item in resources.files("gfxpack.descriptors").joinpath("schemas", kind).iterdir():
        match = _VERSION.match(item.name.removesuffix(".json"))
        if match:
            schema = json.loads(item.read_text(encoding="utf-8"))
            Draft7Validator.check_schema(schema)
            found[int(match[1]), int(match[2])] = Draft7Validator(schema)
    return found


@dataclass
class FileReport:
    path: str
    suffix: str
    declared: str | None = None
    needs: str | None = None
    schema_errors: list[str] = field(default_factory=list)

    @property
    def overstamped(self) -> bool:
        return (
            self.needs is not None
            and self.declared is not None
            and _minor(self.needs) < _minor(self.declared)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "type": self.suffix,
            "version": self.declared,
            "needs": self.needs,
            "schema_errors": self.schema_errors,
        }


def _minor(version: str) -> tuple[int, int]:
    match = _VERSION.match(version)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def schema_errors(document: object, suffix: str) -> list[str]:
    """Violations of the schema for the version the document declares."""
    version = document.get("version") if isinstance(document, dict) else None
    match = _VERSION.match(version) if isinstance(version, str) else None
    versions = schema_versions(suffix)
    if match is None:
        return ["'version' must be a string \"<major>.<minor>\""]
    wanted = (int(match[1]), int(match[2]))
    if wanted not in versions:
        known = ", ".join(f"{a}.{b}" for a, b in sorted(versions))
        return [f"no schema for {suffix} version {version} (gfxpack knows {known})"]
    return violation_lines(versions[wanted].iter_errors(document))


def lowest_version(
    document: dict[str, Any], suffix: str, valid_as_declared: bool = False
) -> str | None:
    """The lowest minor of the document's major whose schema accepts it."""
    declared = (
        _minor(document.get("version", "")) if isinstance(document.get("version"), str) else None
    )
    if declared is None:
        return None
    for major, minor in sorted(schema_versions(suffix)):
        if major != declared[0]:
            continue
        if (major, minor) == declared and valid_as_declared:
            return f"{major}.{minor}"  # already validated once: a large file costs one pass
        candidate = {**document, "version": f"{major}.{minor}"}
        if schema_versions(suffix)[major, minor].is_valid(candidate):
            return f"{major}.{minor}"
    return None


def lint_file(path: str | Path, suffix: str) -> FileReport:
    report = FileReport(str(path), suffix)
    try:
        document = loads(read_regular(path))
    except (OSError, JsoncError) as e:
        report.schema_errors.append(f"cannot be read: {e}")
        return report
    if isinstance(document, dict) and isinstance(document.get("version"), str):
        report.declared = document["version"]
    report.schema_errors = schema_errors(document, suffix)
    if isinstance(document, dict):
        report.needs = lowest_version(document, suffix, not report.schema_errors)
    return report


@dataclass
class LintResult:
    files: list[FileReport]
    load: LoadResult

    @property
    def failed(self) -> bool:
        """A schema error, a loader ERROR, or an arch no device is (the provider would
        load it, but what it names is dead: lint is where an author hears of it)."""
        return (
            any(f.schema_errors for f in self.files)
            or bool(self.load.diagnostics.at_least(Level.ERROR))
            or any(d.code == UNKNOWN_ARCH for d in self.load.diagnostics.items)
        )

    @property
    def problems(self) -> list[Diagnostic]:
        """The loader's warnings and errors."""
        return self.load.diagnostics.at_least(Level.WARN)

    @property
    def unchecked(self) -> list[Diagnostic]:
        """What the load left unchecked (D510: no symbol registry): an INFO, but shown
        beside OK so that a pass is not read as covering the symbols."""
        return [d for d in self.load.diagnostics.items if d.code == SYMBOLS_UNCHECKED]

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": [f.as_dict() for f in self.files],
            "diagnostics": [d.as_dict() for d in [*self.problems, *self.unchecked]],
            "ok": not self.failed,
            "symbols_checked": not self.unchecked,
        }


def lint(
    roots: Sequence[str | os.PathLike[str]],
    registry: SymbolRegistry | None = None,
    max_object_size: int = DEFAULT_MAX_OBJECT_SIZE,
    authored: bool = False,
) -> LintResult:
    """Schema-check every descriptor file under the roots, then load them (reading no
    kpack code object larger than ``max_object_size``). ``authored``: the roots are
    authored sources, whose packs may be empty until ``descriptors pack`` fills them
    from the kernel list."""
    load = load_validated(
        roots, registry, names=EngineNames(), max_object_size=max_object_size, authored=authored
    )
    files = []
    for root in roots:
        for path, suffix in descriptor_files(Path(root), type(load.diagnostics)(), authored):
            files.append(lint_file(path, suffix))
    return LintResult(files, load)
