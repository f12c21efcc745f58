"""What changed between two releases: packages added and removed, dependencies changed,
files added, removed and changed (by digest) inside each package, files moved between
packages, and sizes, per package and per GPU arch.

The version is taken out wherever it shows before anything is compared: a dependency
pinned to its own release (``amdrocm-blas-host8.2 (= 8.2.0-1)`` in 8.2.0, ``(= 8.2.1-1)``
in 8.2.1), a name or a path carrying the release's X.Y (``amdrocm-blas8.2`` and
``amdrocm-blas8.3``, ``/opt/rocm/core-8.2/...``) are the same in both. What is equal as
written is paired first, then what is equal once the versions are out, where that is
unambiguous. Two releases that differ in nothing else say so: ``version_only``.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from gfxpack.inventory import Inventory, Package
from gfxpack.plan.naming import InvalidName, version_xy
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
class FileChange:
    path: str  # as the new release installs it
    old: str  # what it held: "sha256:<hex>", "symlink:<target>", ...
    new: str


@dataclass(frozen=True, slots=True)
class PackageFiles:
    """The files of one package in both releases that differ."""

    package: str  # the new release's name
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[FileChange, ...]


@dataclass(frozen=True, slots=True)
class FileMove:
    path: str
    old: tuple[str, ...]  # the packages that installed it before
    new: tuple[str, ...]  # and after


@dataclass(frozen=True, slots=True)
class Rename:
    """A package whose name carries the version (amdrocm-blas8.2 -> amdrocm-blas8.3)."""

    old: str
    new: str


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
    versions: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # each side's V-Rs
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    renamed: list[Rename] = field(default_factory=list)
    dependencies: list[DependencyChange] = field(default_factory=list)
    files: list[PackageFiles] = field(default_factory=list)
    moved: list[FileMove] = field(default_factory=list)
    packages: list[SizeChange] = field(default_factory=list)
    arches: list[SizeChange] = field(default_factory=list)
    # What a side did not know and so was not compared ("files", "file contents", "sizes").
    not_compared: list[str] = field(default_factory=list)
    compared: int = 0  # packages found in both
    # Some package's version differs, and nothing but versions does: the same packages
    # with the same dependencies, files and contents (download sizes aside: the control
    # data holds the version).
    version_only: bool = False

    @property
    def changed(self) -> bool:
        """Anything differs, the version included."""
        return self.version_only or bool(
            self.added
            or self.removed
            or self.dependencies
            or self.files
            or self.moved
            or self.packages
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["changed"] = self.changed
        return data


def compare(old: Inventory, new: Inventory) -> Diff:
    diff = Diff(_label(old), _label(new), new.fmt.name, (tuple(old.versions), tuple(new.versions)))
    before, after = old.packages, new.packages
    pairs, removed, added = _pair(_name_forms(before), _name_forms(after))
    pairs.sort(key=lambda pair: pair[1])
    diff.added, diff.removed, diff.compared = sorted(added), sorted(removed), len(pairs)
    diff.renamed = [Rename(o, n) for o, n in pairs if o != n]
    for o, n in pairs:
        for relation_field in FIELDS:
            change = _relations(before[o], after[n], relation_field)
            if change is not None:
                diff.dependencies.append(change)
    if _all_known(old, new, "files"):
        unknown = False
        for o, n in pairs:
            files, unknown_here = _files(before[o], after[n])
            unknown = unknown or unknown_here
            if files is not None:
                diff.files.append(files)
        diff.moved = _moves(old, new, dict(pairs))
        if unknown:
            diff.not_compared.append("file contents")
    else:
        diff.not_compared.append("files")
    if _all_known(old, new, "download") and _all_known(old, new, "installed"):
        sides: list[tuple[str, Package | None, Package | None]]
        sides = [(n, before[o], after[n]) for o, n in pairs]
        sides += [(name, before[name], None) for name in removed]
        sides += [(name, None, after[name]) for name in added]
        diff.packages = [
            resized
            for name, o_package, n_package in sorted(sides, key=lambda side: side[0])
            if (resized := _size(name, [o_package], [n_package])) is not None
        ]
        diff.arches = _arch_sizes(old, new)
    else:
        diff.not_compared.append("sizes")
    version_changed = any(o != n or before[o].version != after[n].version for o, n in pairs)
    diff.version_only = version_changed and not (
        diff.added
        or diff.removed
        or diff.dependencies
        or diff.files
        or diff.moved
        or any(c.installed[0] != c.installed[1] for c in diff.packages)
    )
    return diff


def _label(inventory: Inventory) -> str:
    versions = inventory.versions
    shown = versions[0] if len(versions) == 1 else f"{len(versions)} versions"
    return f"{inventory.source} ({inventory.origin} {shown}, {inventory.fmt})"


def _bounded(text: str) -> str:
    # A version inside a longer number is another number: 8.2 in 18.2, 8.2.5 or 1.8.2.
    return rf"(?<!\d)(?<!\d\.){re.escape(text)}(?!\d)(?!\.\d)"


@functools.cache
def _version_forms(version: str) -> tuple[re.Pattern[str], dict[str, str]]:
    """How ``version`` ([epoch:]upstream-release) shows in names, paths and pins: whole
    (in pins), upstream (in paths) or its X.Y (in names and the default prefix), each
    with the placeholder that takes its place."""
    upstream = version.split(":", 1)[-1].rsplit("-", 1)[0]
    forms = {version: "{V-R}", upstream: "{V}"}
    with contextlib.suppress(InvalidName):  # a version with no X.Y shows only whole
        forms.setdefault(version_xy(upstream), "{X.Y}")
    longest_first = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(_bounded(form) for form in longest_first)), forms


def _unversioned(version: str, text: str) -> str:
    pattern, placeholders = _version_forms(version)
    return pattern.sub(lambda match: placeholders[match[0]], text)


def _pair(
    old: Mapping[str, str], new: Mapping[str, str]
) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """Items of two sides paired: equal as written, then equal once versions are out
    (``old`` and ``new`` map each item to that form) where only one item of each side has
    that form. Returns the pairs, and the old and the new items left, in their order."""
    pairs = [(item, item) for item in old if item in new]
    old_left = [item for item in old if item not in new]
    new_left = [item for item in new if item not in old]

    def by_form(items: list[str], forms: Mapping[str, str]) -> dict[str, str]:
        found: dict[str, list[str]] = defaultdict(list)
        for item in items:
            found[forms[item]].append(item)
        return {form: same[0] for form, same in found.items() if len(same) == 1}

    old_forms, new_forms = by_form(old_left, old), by_form(new_left, new)
    matched = old_forms.keys() & new_forms.keys()
    pairs += [(old_forms[form], new_forms[form]) for form in sorted(matched)]
    paired_old = {old_forms[form] for form in matched}
    paired_new = {new_forms[form] for form in matched}
    return (
        pairs,
        [item for item in old_left if item not in paired_old],
        [item for item in new_left if item not in paired_new],
    )


def _name_forms(packages: Mapping[str, Package]) -> dict[str, str]:
    return {name: _unversioned(package.version, name) for name, package in packages.items()}


def _forms(package: Package, items: Iterable[str]) -> dict[str, str]:
    return {item: _unversioned(package.version, item) for item in items}


def _relations(old: Package, new: Package, relation_field: str) -> DependencyChange | None:
    _, removed, added = _pair(
        _forms(old, old.relations(relation_field)), _forms(new, new.relations(relation_field))
    )
    if not removed and not added:
        return None
    return DependencyChange(new.name, relation_field, tuple(removed), tuple(added))


def _files(old: Package, new: Package) -> tuple[PackageFiles | None, bool]:
    """The files that differ between two releases of a package, and whether what some
    file holds was not known on a side (so it was compared by path only)."""
    before, after = old.files or {}, new.files or {}
    pairs, removed, added = _pair(_forms(old, before), _forms(new, after))
    changed, unknown = [], False
    for o, n in pairs:
        was, now = before[o], after[n]
        if was is None or now is None:
            unknown = True
        elif not _same_content(old, new, was, now):
            changed.append(FileChange(n, was, now))
    if not (added or removed or changed):
        return None, unknown
    changed.sort(key=lambda change: change.path)
    files = PackageFiles(new.name, tuple(sorted(added)), tuple(sorted(removed)), tuple(changed))
    return files, unknown


def _same_content(old: Package, new: Package, before: str, after: str) -> bool:
    # A symlink to a versioned name (core-8.2 -> core-8.3) is the same symlink.
    return before == after or _unversioned(old.version, before) == _unversioned(new.version, after)


def _all_known(old: Inventory, new: Inventory, attribute: str) -> bool:
    return all(
        getattr(p, attribute) is not None
        for inventory in (old, new)
        for p in inventory.packages.values()
    )


def _moves(old: Inventory, new: Inventory, paired: Mapping[str, str]) -> list[FileMove]:
    """Files installed by other packages than before; ``paired`` maps an old package's
    name to its new one, so that a package renamed with the version did not move."""

    def owners(inventory: Inventory) -> tuple[dict[str, list[Package]], dict[str, str]]:
        found: dict[str, list[Package]] = defaultdict(list)
        for package in inventory.packages.values():
            for path in package.files or ():
                found[path].append(package)
        forms = {path: _unversioned(packages[0].version, path) for path, packages in found.items()}
        return found, forms

    (before, old_forms), (after, new_forms) = owners(old), owners(new)
    moves = []
    for o, n in _pair(old_forms, new_forms)[0]:
        was = sorted(p.name for p in before[o])
        now = sorted(p.name for p in after[n])
        if sorted(paired.get(name, name) for name in was) != now:
            moves.append(FileMove(n, tuple(was), tuple(now)))
    return sorted(moves, key=lambda move: move.path)


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
    if diff.version_only:
        return "\n".join([*lines, version_only_line(diff)]) + "\n"
    if not diff.changed:
        lines.append("no differences")
    for title, names, mark in (("added", diff.added, "+"), ("removed", diff.removed, "-")):
        if names:
            lines.append(f"packages {title} ({len(names)}):")
            lines += [f"  {mark} {name}" for name in names]
    if diff.renamed:
        first = diff.renamed[0]
        lines.append(
            f"names changed with the version ({len(diff.renamed)} packages, e.g. "
            f"{first.old} -> {first.new}; --json lists them)"
        )
    if diff.dependencies:
        lines.append(f"dependencies changed ({len(diff.dependencies)}):")
        for change in diff.dependencies:
            lines.append(f"  {change.package} ({change.field}):")
            lines += [f"    - {r}" for r in change.removed]
            lines += [f"    + {r}" for r in change.added]
    if diff.files:
        lines.append(f"files changed in packages ({len(diff.files)}):")
        for files in diff.files:
            lines.append(f"  {files.package}:")
            lines += [f"    + {path}" for path in files.added]
            lines += [f"    - {path}" for path in files.removed]
            lines += [f"    ~ {c.path} ({_short(c.old)} -> {_short(c.new)})" for c in files.changed]
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


def version_only_line(diff: Diff) -> str:
    """The one line of two releases that differ only in version, e.g. ``8.2.0 → 8.2.1:
    only the version changed (160 packages, identical contents)``."""
    if "files" in diff.not_compared:
        what = "files not compared: one side does not record them"
    elif "file contents" in diff.not_compared:
        what = "the same files; their contents not compared: one side does not record them"
    else:
        what = "identical contents"
    return (
        f"{_versions(*diff.versions)}: only the version changed ({diff.compared} packages, {what})"
    )


def _versions(old: tuple[str, ...], new: tuple[str, ...]) -> str:
    """``8.2.0 → 8.2.1``: each side's version, its release left out when both share it."""
    if len(old) == len(new) == 1:
        (before, _, old_release), (after, _, new_release) = (v.rpartition("-") for v in old + new)
        if before and after and old_release == new_release:
            return f"{before} → {after}"
        return f"{old[0]} → {new[0]}"
    shown = [v[0] if len(v) == 1 else f"{len(v)} versions" for v in (old, new)]
    return " → ".join(shown)


def _short(content: str) -> str:
    """A digest cut to 12 hex digits for the text (--json has it whole)."""
    algorithm, colon, value = content.partition(":")
    if colon and algorithm != "symlink" and len(value) > 12:
        return f"{algorithm}:{value[:12]}…"
    return content


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
