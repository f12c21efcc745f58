"""What a release holds, in one format's spelling: every package with its dependencies,
files and sizes, read from a plan, a build directory or a published repository.

The three sources know different things: a plan knows names and dependencies but no
files or sizes; a build and a repository know everything, read from the packages
themselves (a .deb's control file and data, each file hashed as it streams by; an
.rpm's header, with the file digests rpm verifies), so what is compared is what was
shipped. ``diff`` compares two inventories; fields a source does not know are None and
are not compared.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack import build_index, views
from gfxpack.errors import GfxpackError
from gfxpack.formats import DEB, PackageFormat
from gfxpack.outdir import INDEX, INDEX_LIMIT
from gfxpack.plan import ReleasePlan
from gfxpack.regular_files import UnreadableFile, read_small_text
from gfxpack.relations import InvalidRelation
from gfxpack.repo.debfile import InvalidDeb, read_deb
from gfxpack.verify.rules import arch_of


class InventoryError(GfxpackError):
    """A source that is not a plan, a build or a repository, or cannot be read."""


@dataclass(frozen=True, slots=True)
class Package:
    name: str
    version: str  # V-R, the release the package belongs to
    arch: str | None  # the GPU arch of a …-gfxNNN package
    kind: str | None  # the plan's kind, when the source has the plan
    depends: tuple[str, ...]  # Depends + Pre-Depends (DEB), Requires (RPM), as written
    recommends: tuple[str, ...]
    # Installed paths, directories excepted, with what each holds: "sha256:<hex>" for a
    # file, "symlink:<target>" for a symlink, None when only the path is known.
    files: Mapping[str, str | None] | None
    download: int | None  # bytes of the package file
    installed: int | None  # bytes on disk: DEB Installed-Size (KiB) x 1024, RPM SIZE

    def relations(self, field: str) -> tuple[str, ...]:
        return self.depends if field == "depends" else self.recommends


@dataclass(frozen=True)
class Inventory:
    source: str  # the path given, for headings and errors
    origin: str  # "plan", "build" or "repository"
    fmt: PackageFormat
    packages: dict[str, Package]

    @property
    def versions(self) -> list[str]:
        return sorted({p.version for p in self.packages.values()})


# What turns a package.json into a plan: the diff command's release options.
Planner = Callable[[Path], ReleasePlan]


def load(
    path: Path, fmt: PackageFormat, planner: Planner | None = None, suite: str | None = None
) -> Inventory:
    """A plan file (``plan --format json``, or a package.json when ``planner`` is
    given), a build directory (its index.json) or a repository (apt or rpm-md)."""
    if path.is_dir():
        if (path / INDEX).is_file():
            return from_build(path, fmt)
        from gfxpack.verify.universe import locate

        if locate(path, fmt) is not None:
            return from_repository(path, fmt, suite)
        raise InventoryError(
            f"{path}: neither a build directory (no {INDEX}) nor a {fmt} repository "
            "(no dists/ or repodata/, no apt/ or rpm/)"
        )
    if not os.path.lexists(path):
        raise InventoryError(f"{path}: no such file or directory")
    data = _read_json(path)
    if isinstance(data, list):
        if planner is None:
            raise InventoryError(
                f"{path}: a package.json needs the release to plan: add --target and --rocm-version"
            )
        return from_plan(planner(path), fmt, str(path))
    if isinstance(data, dict) and "files" in data and path.name == INDEX:
        return from_build(path.parent, fmt)
    return from_plan(views.plan_from_dict(data, str(path)), fmt, str(path))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_small_text(path, INDEX_LIMIT, "JSON document"))
    except UnreadableFile as e:
        raise InventoryError(str(e)) from None
    except ValueError as e:
        raise InventoryError(f"{path}: not JSON: {e}") from None
    except RecursionError:
        raise InventoryError(f"{path}: not JSON gfxpack reads: nested too deeply") from None


def from_plan(plan: ReleasePlan, fmt: PackageFormat, source: str) -> Inventory:
    packages = {}
    for planned in plan.packages:
        relations = planned.relations(fmt)
        packages[relations.name] = Package(
            name=relations.name,
            version=plan.full_version,
            arch=planned.arch,
            kind=str(planned.kind),
            depends=tuple(fmt.render(dep) for dep in relations.depends),
            recommends=tuple(fmt.render(dep) for dep in relations.recommends),
            files=None,
            download=None,
            installed=None,
        )
    return Inventory(source, "plan", fmt, packages)


def from_build(build: Path, fmt: PackageFormat) -> Inventory:
    """The packages of ``fmt`` an index.json lists, each read from its file."""
    index = build / INDEX
    try:
        read = build_index.read(build)
    except build_index.InvalidBuildIndex as e:
        raise InventoryError(str(e)) from None
    listed = [(item.file, item.kind) for item in read.files if item.format == fmt.name]
    if not listed:
        raise InventoryError(f"{index}: the build has no {fmt} packages")
    packages = {}
    for name, kind in listed:
        if "/" in name or name.startswith("."):
            raise InventoryError(f"{index}: file {name!r} is not a file of the build directory")
        package = read_package(build / name, fmt, kind, build)
        packages[package.name] = package
    return Inventory(str(build), "build", fmt, packages)


def from_repository(root: Path, fmt: PackageFormat, suite: str | None = None) -> Inventory:
    """The newest version of every package name of the repository, read from its file."""
    from gfxpack.verify.system import read_system
    from gfxpack.verify.universe import load as load_universe

    universe = load_universe(root, fmt, read_system(None, fmt), suite)
    versions: dict[str, list[Any]] = defaultdict(list)
    for solvable in universe.packages():
        versions[solvable.name].append(solvable)
    newest = {name: universe.newest(solvables) for name, solvables in versions.items()}
    packages = {}
    for name, solvable in sorted(newest.items()):
        location = universe.location(solvable)
        if location.startswith("/") or ".." in Path(location).parts:
            raise InventoryError(f"{universe.label}: {name} is listed at {location!r}, outside it")
        packages[name] = read_package(universe.root / location, fmt, None, universe.root)
    return Inventory(str(root), "repository", fmt, packages)


def read_package(
    path: Path, fmt: PackageFormat, kind: str | None, root: Path | None = None
) -> Package:
    """The package file at ``path``, which must stay inside ``root`` (no symlink out)."""
    if root is not None and not path.resolve().is_relative_to(root.resolve()):
        raise InventoryError(f"{path}: leads outside {root} (a symlink?); not read")
    try:
        download = path.stat().st_size
    except OSError as e:
        raise InventoryError(f"{path}: {e.strerror}") from None
    return _READERS[fmt.name](path, kind, download)


def read_deb_package(path: Path, kind: str | None, download: int) -> Package:
    """A .deb as an inventory package."""
    try:
        deb = read_deb(str(path), digests=True)  # checks the ar structure and the control
    except InvalidDeb as e:
        raise InventoryError(str(e)) from None
    control, contents = deb.fields, deb.digests or {}
    name, version = deb.name, deb.version

    def field(*names: str) -> tuple[str, ...]:
        texts = [control[n] for n in names if control.get(n)]
        try:
            return tuple(DEB.render_relation(r) for text in texts for r in DEB.parse_field(text))
        except InvalidRelation as e:
            raise InventoryError(f"{path}: {'/'.join(names)}: {e}") from None

    installed = control.get("Installed-Size", "")
    return Package(
        name=name,
        version=version,
        arch=arch_of(name),
        kind=kind,
        depends=field("Pre-Depends", "Depends"),
        recommends=field("Recommends"),
        files={"/" + p: content for p, content in contents.items()},
        download=download,
        installed=int(installed) * 1024 if installed.isdigit() else None,
    )


_RPM_FLAGS = {"EQ": "=", "GE": ">=", "LE": "<=", "GT": ">", "LT": "<"}


def read_rpm_package(path: Path, kind: str | None, download: int) -> Package:
    """An .rpm as an inventory package (its header, read by createrepo_c)."""
    import createrepo_c as cr

    from gfxpack.repo.rpmfile import InvalidRpm, read_files  # imports createrepo_c

    try:
        files = read_files(str(path))  # checks the headers before createrepo_c reads them
    except InvalidRpm as e:
        raise InventoryError(str(e)) from None
    try:
        header = cr.package_from_rpm(str(path), cr.SHA256, path.name)
    except (OSError, cr.CreaterepoCError) as e:
        raise InventoryError(f"{path}: not a readable RPM package: {e}") from None
    release = f"{header.version}-{header.release}"
    version = release if header.epoch in (None, "", "0") else f"{header.epoch}:{release}"
    return Package(
        name=header.name,
        version=version,
        arch=arch_of(header.name),
        kind=kind,
        depends=tuple(_rpm_relation(r) for r in header.requires if not r[0].startswith("rpmlib(")),
        recommends=tuple(_rpm_relation(r) for r in header.recommends),
        files=files,
        download=download,
        installed=header.size_installed,
    )


def _rpm_relation(entry: tuple[Any, ...]) -> str:
    """``name op [epoch:]version-release`` from createrepo_c's dependency tuple."""
    name, flags, epoch, version, release = entry[:5]
    if not flags or flags not in _RPM_FLAGS:
        return str(name)
    evr = ("" if epoch in (None, "", "0") else f"{epoch}:") + str(version or "")
    if release:
        evr += f"-{release}"
    return f"{name} {_RPM_FLAGS[flags]} {evr}"


# format name -> how one of its package files becomes an inventory entry
_READERS: dict[str, Callable[[Path, str | None, int], Package]] = {
    "deb": read_deb_package,
    "rpm": read_rpm_package,
}
