"""The plan's JSON contract (``plan --format json``, the ``plan`` of a build's index.json):
a plan written as it (:func:`plan_as_dict`) and read back from it (:func:`plan_from_dict`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

from gfxpack.errors import GfxpackError
from gfxpack.formats.package_format import DEB, FORMATS, RPM, PackageFormat
from gfxpack.plan.model import (
    Dep,
    Kind,
    Mode,
    Note,
    PackageRelations,
    PinPolicy,
    PlannedPackage,
    Reason,
    ReleasePlan,
    Req,
    Severity,
    Variant,
    WarningRule,
)
from gfxpack.relations import InvalidRelation, Relation

StrEnumT = TypeVar("StrEnumT", Kind, Mode, PinPolicy, Severity, Variant, WarningRule)

_LISTS = ("depends", "recommends", "suggests", "provides", "conflicts", "replaces")


def plan_as_dict(
    plan: ReleasePlan, packages: Iterable[PlannedPackage] | None = None
) -> dict[str, Any]:
    """The plan as the documented JSON contract (other keys may be added)."""
    return {
        "rocm_version": plan.rocm_version,
        "release": plan.release,
        "version": plan.full_version,
        "mode": str(plan.mode),
        "targets": list(plan.targets),
        "arches": list(plan.arches),
        # Each arch and the targets its packages carry (gfx1250: gfx1250, gfx1250-strict).
        "owners": {arch: list(targets) for arch, targets in plan.owners.items()},
        "prefix": plan.prefix,
        "variant": plan.variant,
        "pin_policy": str(plan.pin_policy),
        "packages": [
            _package_as_dict(p) for p in (plan.packages if packages is None else packages)
        ],
        "notes": [_note_as_dict(note) for note in plan.notes],
    }


def _note_as_dict(note: Note) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "severity": str(note.severity),
        "message": note.message,
        "packages": list(note.packages),
    }
    if note.rule is not None:
        entry["rule"] = str(note.rule)  # what a waiver names (plan --waivers)
    return entry


def _package_as_dict(package: PlannedPackage) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": package.key,
        "base": package.base,
        "kind": str(package.kind),
        "arch": package.arch,
        "has_files": package.has_files,
    }
    for fmt in FORMATS:
        relations = package.relations(fmt)
        fields: dict[str, Any] = {"name": relations.name}
        for list_name in _LISTS:
            key = fmt.field_name(list_name)
            fields[key] = [fmt.render(dep) for dep in getattr(relations, list_name)]
        entry[fmt.name] = fields
    return entry


class InvalidPlanJson(GfxpackError, ValueError):
    """A file that is not the plan JSON contract."""


def plan_from_dict(data: object, source: str) -> ReleasePlan:
    """A plan back from its JSON contract (``plan --format json``, or the ``plan`` of a
    build's index.json), relations re-linked to the planned packages they name.
    ``source`` names the file in errors. Package specs are not part of the contract:
    the plan is for drawing and comparing, not for building."""
    try:
        return _plan_from_dict(_Json(data))
    except _Unexpected as e:
        raise InvalidPlanJson(f"{source}: not a gfxpack plan (plan --format json): {e}") from None


class _Unexpected(ValueError):
    pass


class _Json:
    """A JSON value and its JSON pointer; each accessor says what it expected."""

    def __init__(self, value: object, pointer: str = "") -> None:
        self.value, self.pointer = value, pointer

    def _fail(self, expected: str) -> _Unexpected:
        shown = json.dumps(self.value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return _Unexpected(f"{self.pointer or '/'}: expected {expected}, got {shown}")

    def __getitem__(self, key: str) -> _Json:
        if not isinstance(self.value, dict):
            raise self._fail("an object")
        if key not in self.value:
            raise _Unexpected(f"{self.pointer or '/'}: no {key!r}")
        return _Json(self.value[key], f"{self.pointer}/{key}")

    def get(self, key: str, default: object) -> _Json:
        if isinstance(self.value, dict) and key not in self.value:
            return _Json(default, f"{self.pointer}/{key}")
        return self[key]

    def items(self) -> list[_Json]:
        if not isinstance(self.value, list):
            raise self._fail("a list")
        return [_Json(v, f"{self.pointer}/{i}") for i, v in enumerate(self.value)]

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self._fail("a string")
        return self.value

    def optional_text(self) -> str | None:
        return None if self.value is None else self.text()

    def texts(self) -> tuple[str, ...]:
        return tuple(item.text() for item in self.items())

    def choice(self, kind: type[StrEnumT]) -> StrEnumT:
        try:
            return kind(self.text())
        except ValueError:
            raise self._fail(" or ".join(repr(str(k)) for k in kind)) from None


def _plan_from_dict(data: _Json) -> ReleasePlan:
    entries = data["packages"].items()
    keys = {
        fmt: {entry[fmt.name]["name"].text(): entry["name"].text() for entry in entries}
        for fmt in FORMATS
    }
    packages = tuple(
        PlannedPackage(
            key=entry["name"].text(),
            base=entry["base"].text(),
            kind=entry["kind"].choice(Kind),
            arch=entry["arch"].optional_text(),
            has_files=bool(entry["has_files"].value),
            deb=_relations_from_dict(entry[DEB.name], DEB, keys[DEB]),
            rpm=_relations_from_dict(entry[RPM.name], RPM, keys[RPM]),
        )
        for entry in entries
    )
    if len(keys[RPM]) != len(packages):
        raise _Unexpected("/packages: two packages have one name")
    targets = data["targets"].texts()
    return ReleasePlan(
        rocm_version=data["rocm_version"].text(),
        release=data["release"].text(),
        mode=data["mode"].choice(Mode),
        targets=targets,
        arches=data.get("arches", list(targets)).texts(),
        prefix=data.get("prefix", "").text(),
        variant=data.get("variant", "").choice(Variant),
        pin_policy=data.get("pin_policy", "family").choice(PinPolicy),
        packages=packages,
        notes=tuple(
            Note(
                note["severity"].choice(Severity),
                note["message"].text(),
                note["packages"].texts(),
                None if note.get("rule", None).value is None else note["rule"].choice(WarningRule),
            )
            for note in data.get("notes", []).items()
        ),
    )


def _relations_from_dict(
    fields: _Json, fmt: PackageFormat, keys: dict[str, str]
) -> PackageRelations:
    lists: dict[str, tuple[Dep, ...]] = {}
    for list_name in _LISTS:
        key = fmt.field_name(list_name)
        declared = list_name in ("provides", "conflicts", "replaces")
        deps = []
        for item in fields.get(key, []).items():
            try:
                relation = fmt.parse(item.text())
            except InvalidRelation as e:
                raise _Unexpected(f"{item.pointer}: {e}") from None
            deps.append(_dep_from_relation(relation, keys, declared))
        lists[list_name] = tuple(deps)
    return PackageRelations(name=fields["name"].text(), **lists)


def _dep_from_relation(relation: Relation, keys: dict[str, str], declared: bool) -> Dep:
    if relation.opaque is not None:
        return (Req(relation.opaque, text=relation.opaque),)
    reqs = []
    for atom in relation.atoms:
        target = keys.get(atom.name)
        if declared or target is not None:
            reason = Reason.DECLARED if declared else Reason.MEMBER
            reqs.append(Req(atom.name, target, atom.op, atom.version, reason))
        else:
            reqs.append(Req(atom.name, text=atom.text))
    return tuple(reqs)
