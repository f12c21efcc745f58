"""What changed between two releases: packages added and removed, dependencies changed,
files moved between packages, and sizes, per package and per GPU arch.

A dependency pinned to its own release (``amdrocm-blas-host8.2 (= 8.2.0-1)`` in 8.2.0,
``(= 8.2.1-1)`` in 8.2.1) is the same dependency in both: relations are compared with
each package's own version taken out, and shown as written.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from gfxpack.inventory import Inventory, Package
from gfxpack.plan.targets import target_order
from gfxpack.units import human

FIELDS = ("depends", "recommends")
HOST = "host"  # the size group of packages of no GPU arch


@dataclass(frozen=True, slots=True)
class DependencyChange:
    package: str
    field: str  # depends or recommends
    removed: tuple[str, ...]
    added: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileMove:
    path: str
    old: tuple[str, ...]  # the packages that installed it before
    new: tuple[str, ...]  # and after


@dataclass(frozen=True, slots=True)
class SizeChange:
    name: str  # a package, or an arch ("host" for packages of no arch)
    download: tuple[int, int]  # before, after
    installed: tuple[int, int]


@dataclass
class Diff:
    old: str
    new: str
    fmt: str  # the format's name
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    dependencies: list[DependencyChange] = field(default_factory=list)
    moved: list[FileMove] = field(default_factory=list)
    packages: list[SizeChange] = field(default_factory=list)
    arches: list[SizeChange] = field(default_factory=list)
    # What a side did not know and so was not compared ("files", "sizes").
    not_compared: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.dependencies or self.moved or self.packages)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["changed"] = self.changed
        return data


def compare(old: Inventory, new: Inventory) -> Diff:
    diff = Diff(_label(old), _label(new), new.fmt.name)
    before, after = old.packages, new.packages
    diff.added = sorted(after.keys() - before.keys())
    diff.removed = sorted(before.keys() - after.keys())
    for name in sorted(before.keys() & after.keys()):
        for relation_field in FIELDS:
            change = _relations(before[name], after[name], relation_field)
            if change is not None:
                diff.dependencies.append(change)
    if _all_known(old, new, "files"):
        diff.moved = _moves(old, new)
    else:
        diff.not_compared.append("files")
    if _all_known(old, new, "download") and _all_known(old, new, "installed"):
        diff.packages = [
            resized
            for name in sorted(before.keys() | after.keys())
            if (resized := _size(name, [before.get(name)], [after.get(name)])) is not None
        ]
        diff.arches = _arch_sizes(old, new)
    else:
        diff.not_compared.append("sizes")
    return diff


def _label(inventory: Inventory) -> str:
    versions = inventory.versions
    shown = versions[0] if len(versions) == 1 else f"{len(versions)} versions"
    return f"{inventory.source} ({inventory.origin} {shown}, {inventory.fmt})"


def _unversioned(package: Package, relation: str) -> str:
    return relation.replace(package.version, "{version}")


def _relations(old: Package, new: Package, relation_field: str) -> DependencyChange | None:
    before = {_unversioned(old, r): r for r in old.relations(relation_field)}
    after = {_unversioned(new, r): r for r in new.relations(relation_field)}
    removed = tuple(before[k] for k in before if k not in after)
    added = tuple(after[k] for k in after if k not in before)
    if not removed and not added:
        return None
    return DependencyChange(new.name, relation_field, removed, added)


def _all_known(old: Inventory, new: Inventory, attribute: str) -> bool:
    return all(
        getattr(p, attribute) is not None
        for inventory in (old, new)
        for p in inventory.packages.values()
    )


def _owners(inventory: Inventory) -> dict[str, tuple[str, ...]]:
    owners: dict[str, list[str]] = defaultdict(list)
    for package in inventory.packages.values():
        for path in package.files or ():
            owners[path].append(package.name)
    return {path: tuple(sorted(names)) for path, names in owners.items()}


def _moves(old: Inventory, new: Inventory) -> list[FileMove]:
    before, after = _owners(old), _owners(new)
    return [
        FileMove(path, before[path], after[path])
        for path in sorted(before.keys() & after.keys())
        if before[path] != after[path]
    ]


def _size(name: str, old: list[Package | None], new: list[Package | None]) -> SizeChange | None:
    def total(packages: list[Package | None], attribute: str) -> int:
        return sum(getattr(p, attribute) or 0 for p in packages if p is not None)

    change = SizeChange(
        name,
        (total(old, "download"), total(new, "download")),
        (total(old, "installed"), total(new, "installed")),
    )
    if change.download[0] == change.download[1] and change.installed[0] == change.installed[1]:
        return None
    return change


def _arch_sizes(old: Inventory, new: Inventory) -> list[SizeChange]:
    def by_arch(inventory: Inventory) -> dict[str, list[Package | None]]:
        groups: dict[str, list[Package | None]] = defaultdict(list)
        for package in inventory.packages.values():
            groups[package.arch or HOST].append(package)
        return groups

    before, after = by_arch(old), by_arch(new)
    arches = sorted(before.keys() | after.keys(), key=lambda a: (a != HOST, target_order(a)))
    return [
        change
        for arch in arches
        if (change := _size(arch, before.get(arch, []), after.get(arch, []))) is not None
    ]


def text(diff: Diff) -> str:
    """The diff for people."""
    lines = [f"--- {diff.old}", f"+++ {diff.new}"]
    if not diff.changed:
        lines.append("no differences")
    for title, names, mark in (("added", diff.added, "+"), ("removed", diff.removed, "-")):
        if names:
            lines.append(f"packages {title} ({len(names)}):")
            lines += [f"  {mark} {name}" for name in names]
    if diff.dependencies:
        lines.append(f"dependencies changed ({len(diff.dependencies)}):")
        for change in diff.dependencies:
            lines.append(f"  {change.package} ({change.field}):")
            lines += [f"    - {r}" for r in change.removed]
            lines += [f"    + {r}" for r in change.added]
    if diff.moved:
        lines.append(f"files moved ({len(diff.moved)}):")
        lines += [f"  {m.path}: {', '.join(m.old)} -> {', '.join(m.new)}" for m in diff.moved]
    for title, changes in (("package", diff.packages), ("arch", diff.arches)):
        shown = [c for c in changes if title == "arch" or _noticeable(c)]
        if shown:
            width = max(len(c.name) for c in shown)
            lines.append(f"size per {title}:")
            lines += [
                f"  {c.name:<{width}}  download {_delta(c.download)}, "
                f"installed {_delta(c.installed)}"
                for c in shown
            ]
        if len(shown) < len(changes):
            lines.append(
                f"  ({len(changes) - len(shown)} more packages changed by less than "
                f"{human(NOTICEABLE)}, e.g. compressed control data; --json lists them)"
            )
    lines += [f"({what} not compared: one side does not record them)" for what in diff.not_compared]
    return "\n".join(lines) + "\n"


# Size changes smaller than this are compression noise to a reader (a version string
# in the control data); the text leaves them out of the per-package list.
NOTICEABLE = 1024


def _noticeable(change: SizeChange) -> bool:
    return any(
        abs(new - old) >= NOTICEABLE or (0 in (old, new) and old != new)
        for old, new in (change.download, change.installed)
    )


def _delta(sizes: tuple[int, int]) -> str:
    old, new = sizes
    if old == new:
        return f"{human(new)} (unchanged)"
    return f"{human(old)} -> {human(new)} ({'+' if new > old else '-'}{human(abs(new - old))})"
