"""The counts ``gfxpack plan`` prints by default (``--format summary``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gfxpack.formats.package_format import FORMATS, PackageFormat
from gfxpack.plan.model import Kind, PlannedPackage, ReleasePlan


@dataclass(frozen=True, slots=True)
class KindCount:
    """How many packages of one kind, with files, and their relations per format."""

    kind: Kind
    packages: int
    with_files: int
    depends: dict[PackageFormat, int]


@dataclass(frozen=True, slots=True)
class PlanSummary:
    bases: int
    packages: int
    kinds: tuple[KindCount, ...]  # in Kind order, kinds with no package left out


def summary(plan: ReleasePlan, packages: Iterable[PlannedPackage] | None = None) -> PlanSummary:
    """The counts ``gfxpack plan`` prints, of the plan or of ``packages``."""
    chosen = list(plan.packages if packages is None else packages)
    kinds = []
    for kind in Kind:
        of_kind = [p for p in chosen if p.kind is kind]
        if of_kind:
            depends = {fmt: sum(len(p.relations(fmt).depends) for p in of_kind) for fmt in FORMATS}
            kinds.append(KindCount(kind, len(of_kind), sum(p.has_files for p in of_kind), depends))
    return PlanSummary(len({p.base for p in chosen}), len(chosen), tuple(kinds))
