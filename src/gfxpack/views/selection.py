"""Which packages a view shows: a package's family, or what it reaches."""

from __future__ import annotations

from gfxpack.formats.package_format import DEB, PackageFormat
from gfxpack.plan.model import PlannedPackage, ReleasePlan


def family(plan: ReleasePlan, name: str) -> tuple[str | None, list[PlannedPackage]]:
    """What a drawing of ``name`` shows: the package to highlight (None for a base) and
    every package of its base."""
    package = plan.get(name)
    members = plan.family(package.base if package is not None else name)
    if not members:
        raise KeyError(name)
    return (package.key if package is not None else None), members


def reachable(plan: ReleasePlan, root: str, fmt: PackageFormat = DEB) -> list[PlannedPackage]:
    """Packages reachable from ``root`` over Depends, in plan order."""
    start = plan.get(root)
    if start is None:
        raise KeyError(root)
    seen = {start.key}
    stack = [start]
    while stack:
        for req in stack.pop().relations(fmt).edges():
            if req.target not in seen and req.target in plan.by_key:
                seen.add(req.target)
                stack.append(plan.by_key[req.target])
    return [p for p in plan.packages if p.key in seen]
