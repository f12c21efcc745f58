"""Which packages get a debug-symbol package, and that package. Pure.

A base whose Artifactory lists the ``dbg`` component gets one debug package per
package that holds its host files (the host package of a gfxarch base, the versioned
package of any other; in single-arch mode the versioned package), never per arch:
device packages carry GPU code objects, whose symbols a host debugger does not read,
and one host package per release keeps the debug archive small. Its name and fields
are the format's (:mod:`gfxpack.formats.debug_symbols`); it depends on exactly the
package whose symbols it holds, whatever the pin policy, since symbols describe one
build only. ``Disable_Debug_Package`` turns it off.
"""

from __future__ import annotations

from gfxpack.artifact_layout import GENERIC
from gfxpack.config import ArtifactSource, PackageSpec
from gfxpack.formats.debug_symbols import DEBUG_COMPONENT, debug_name
from gfxpack.formats.package_format import FORMATS
from gfxpack.plan.artifact_index import ArtifactIndex
from gfxpack.plan.model import Kind, PackageRelations, PlannedPackage, Reason, Req


def lists_debug_component(spec: PackageSpec) -> bool:
    """Whether package.json gives the base a ``dbg`` component."""
    return any(
        DEBUG_COMPONENT in subdir.components
        for source in spec.artifactory
        for subdir in source.subdirs
    )


def wants_debug_package(spec: PackageSpec, artifacts: ArtifactIndex | None) -> bool:
    """Whether the base gets a debug package: it lists ``dbg``, does not disable it,
    and (with an artifacts tree) the tree has a ``<artifact>_dbg_*`` directory for it."""
    if spec.metapackage or spec.disable_debug_package or not lists_debug_component(spec):
        return False
    if artifacts is None:
        return True
    names = {source.artifact for source in _debug_sources(spec)}
    return any(d.component == DEBUG_COMPONENT and d.name in names for d in artifacts.dirs)


def per_arch_debug_directories(spec: PackageSpec, artifacts: ArtifactIndex) -> list[str]:
    """The tree's per-arch ``<artifact>_dbg_<arch>`` directories of the base's
    gfxarch sources, which no package carries (a debug package is never per arch)."""
    names = {source.artifact for source in _debug_sources(spec) if source.gfxarch}
    return [
        f"{d.name}_{d.component}_{d.target}"
        for d in artifacts.dirs
        if d.component == DEBUG_COMPONENT and d.name in names and d.target != GENERIC
    ]


def _debug_sources(spec: PackageSpec) -> list[ArtifactSource]:
    return [
        source
        for source in spec.artifactory
        if any(DEBUG_COMPONENT in subdir.components for subdir in source.subdirs)
    ]


def debug_package(owner: PlannedPackage, version: str) -> PlannedPackage:
    """The debug package of ``owner`` (its host or versioned package), ``version`` the
    release's ``V-R``: ``Depends: X (= V-R)`` / ``Requires: X = V-R``."""
    relations = {}
    for fmt in FORMATS:
        name = owner.name(fmt)
        own = Req(name, owner.key, "=", version, Reason.DEBUG_SYMBOLS)
        relations[fmt.name] = PackageRelations(name=debug_name(name, fmt.name), depends=((own,),))
    return PlannedPackage(
        key=debug_name(owner.key, "rpm"),
        base=owner.base,
        kind=Kind.DEBUG,
        arch=owner.arch,
        has_files=True,
        **relations,
    )
