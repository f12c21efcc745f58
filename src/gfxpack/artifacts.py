"""A TheRock artifacts directory: what it holds, and which files go to which package.

Layout (spec packaging.md section 3, the names in :mod:`gfxpack.artifact_layout`):
one directory per artifact, ``<name>_<component>_<target>/``, holding
``artifact_manifest.txt`` (one build-tree prefix per line) and the prefix trees.
The payload of a package is the content under the manifest lines its package.json
subdirs select, merged into the install prefix. Packaging never inspects files: host vs device is
decided by the directory's target alone. What may be read and packaged at all
(no symlink followed, no FIFO, names and modes) is :mod:`gfxpack.artifact_files`.

:func:`scan` reads the tree into an :class:`ArtifactTree`; :func:`route` maps
every planned package to its entries and rejects any path two packages would
install (Decision 7).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gfxpack.artifact_files import (
    InvalidArtifacts,
    printable,
    real_directory,
    walk,
)
from gfxpack.artifact_layout import (
    CANONICAL_THEROCK_DIR,
    GENERIC,
    MANIFEST,
    THEROCK_MANIFEST,
    artifact_directories,
    read_manifest,
    read_therock_manifest,
    says_kpack_split,
)
from gfxpack.config import ArtifactSource
from gfxpack.errors import GfxpackError
from gfxpack.formats.debug_symbols import DEBUG_COMPONENT, DEBUG_ROOT, debug_path_problem
from gfxpack.formats.payload import Entry, EntryKind, with_parents
from gfxpack.plan import ArtifactIndex, Kind, Mode, PlannedPackage, ReleasePlan
from gfxpack.plan.artifact_index import builds_target
from gfxpack.plan.naming import arch_suffix
from gfxpack.regular_files import same_bytes

__all__ = [
    "ArtifactTree",
    "ContentCollision",
    "InvalidArtifacts",
    "route",
    "scan",
    "selects",
]


class ContentCollision(GfxpackError, ValueError):
    """Two packages of one build would install the same path."""


@dataclass(frozen=True)
class ArtifactTree:
    root: Path
    directories: tuple[str, ...]  # artifact directory names that carry a manifest
    kpack_split: bool  # a therock_manifest.json says KPACK_SPLIT_ARTIFACTS
    warnings: tuple[str, ...] = ()
    _manifests: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)

    @property
    def index(self) -> ArtifactIndex:
        return ArtifactIndex(self.directories)

    def manifest(self, directory: str) -> tuple[str, ...]:
        """The prefixes listed in one directory's artifact_manifest.txt."""
        if directory not in self._manifests:
            self._manifests[directory] = read_manifest(self.root / directory / MANIFEST)
        return self._manifests[directory]


def scan(root: str | os.PathLike[str]) -> ArtifactTree:
    """Read an artifacts directory: its artifact directories and the kpack flag."""
    root = Path(root)
    if not root.exists():
        raise InvalidArtifacts(f"{root}: artifacts directory does not exist")
    if not root.is_dir():
        raise InvalidArtifacts(f"{root}: not a directory")
    directories, warnings = artifact_directories(root)
    if not directories:
        raise InvalidArtifacts(
            f"{root}: no artifact directories (expected <name>_<component>_<target>/ "
            f"holding {MANIFEST}, such as blas_lib_generic/)"
        )
    return ArtifactTree(root, tuple(directories), _kpack_split(root), tuple(warnings))


def _kpack_split(root: Path) -> bool:
    """Whether any therock_manifest.json says {"flags": {"KPACK_SPLIT_ARTIFACTS": true}}:
    the one where TheRock writes it, else the first of the others that does."""
    # A symlink on the way to the canonical place is not followed: the walk decides.
    canonical = os.path.join(root, CANONICAL_THEROCK_DIR, THEROCK_MANIFEST)
    if (
        real_directory(str(root), CANONICAL_THEROCK_DIR, [])
        and os.path.lexists(canonical)
        and _says_kpack_split(canonical)
    ):
        return True
    return any(_says_kpack_split(manifest) for manifest in _find(root, THEROCK_MANIFEST))


def _says_kpack_split(manifest: str) -> bool:
    return says_kpack_split(read_therock_manifest(manifest)[1])


def _find(root: Path, name: str) -> list[str]:
    """Every path called ``name`` in the tree, sorted; directory symlinks not followed."""

    def unreadable(error: OSError) -> None:
        raise InvalidArtifacts(f"{printable(str(error.filename))}: cannot read: {error.strerror}")

    found = []
    for directory, dirnames, filenames in os.walk(root, onerror=unreadable):
        if name in filenames or name in dirnames:
            found.append(os.path.join(directory, name))
    return sorted(found)


def selects(subdir: str, prefix: str) -> bool:
    """Whether a package.json subdir name selects a manifest line: its components must
    equal a contiguous run of the line's components, case-insensitively (upstream
    matches a substring, so ``BLAS`` would also claim ``hipBLASLt``).

    >>> selects("rocBLAS", "math-libs/BLAS/rocBLAS/stage"), selects("BLAS", "math-libs/hipBLAS")
    (True, False)
    """
    wanted = [part.lower() for part in subdir.strip("/").split("/") if part]
    parts = [part.lower() for part in prefix.split("/")]
    return any(parts[i : i + len(wanted)] == wanted for i in range(len(parts) - len(wanted) + 1))


# --- routing ----------------------------------------------------------------------------------


def source_directories(
    package: PlannedPackage,
    source: ArtifactSource,
    component: str,
    plan: ReleasePlan,
    tree: ArtifactTree,
) -> list[str]:
    """The artifact directories one (artifact, component) contributes to a package
    (spec section 9): generic for host and versioned packages, the arch and its xnack
    variants for a device (with the other targets of its owner the plan names, such as
    gfx1250-strict: each keeps its directory), the family in single-arch mode."""
    if not source.gfxarch or package.arch is None:
        if package.kind is Kind.DEVICE:
            return []  # Artifact_Gfxarch False content is host-only
        return [f"{source.artifact}_{component}_{GENERIC}"]
    if plan.mode is Mode.SINGLE_ARCH:
        return [f"{source.artifact}_{component}_{plan.targets[0]}"]
    prefix = f"{source.artifact}_{component}_"
    return [
        name
        for name in tree.directories
        if name.startswith(prefix)
        and name[len(prefix) :] != GENERIC
        and arch_suffix(name[len(prefix) :]) == package.arch
        and builds_target(name[len(prefix) :], plan.targets)
    ]


def package_entries(
    package: PlannedPackage, plan: ReleasePlan, tree: ArtifactTree, mtime: int
) -> tuple[Entry, ...]:
    """Every path a package installs, with its prefix's directories, sorted."""
    spec = plan.specs[package.base]
    present = set(tree.directories)
    found: dict[str, tuple[Entry, str]] = {}
    problems: list[str] = []
    # A debug package holds the dbg component, under /usr/lib/debug; no other package
    # holds it (formats/debug_symbols.py).
    debug = package.kind is Kind.DEBUG
    install_root = DEBUG_ROOT if debug else plan.prefix
    for source in spec.artifactory:
        for subdir in source.subdirs:
            for component in subdir.components:
                if debug != (component == DEBUG_COMPONENT):
                    continue
                for directory in source_directories(package, source, component, plan, tree):
                    if directory not in present:
                        continue
                    for prefix in tree.manifest(directory):
                        if not selects(subdir.name, prefix):
                            continue
                        root = str(tree.root / directory)
                        if not real_directory(root, prefix, problems):
                            continue
                        top = os.path.join(root, prefix)
                        for entry in walk(
                            top, install_root, mtime, spec.allow_special_modes, problems
                        ):
                            origin = f"{directory}/{prefix}"
                            if debug and not _debug_entry(entry, origin, problems):
                                continue
                            _merge(found, entry, origin, package)
    if problems:
        raise InvalidArtifacts("\n".join(dict.fromkeys(problems)))
    entries = [entry for entry, _ in found.values()]
    stop = DEBUG_ROOT if debug else posixpath.dirname(plan.prefix)
    return with_parents(entries, mtime, stop=stop)


def _debug_entry(entry: Entry, origin: str, problems: list[str]) -> bool:
    """Whether a dbg component's entry is one a debug package may install; if not,
    the problem names the artifact file."""
    relative = entry.path[len(DEBUG_ROOT) + 1 :]
    problem = debug_path_problem(relative, entry.kind)
    if problem:
        problems.append(f"{printable(origin)}/{printable(relative)}: {problem}")
    return problem is None


def _merge(
    found: dict[str, tuple[Entry, str]], entry: Entry, origin: str, package: PlannedPackage
) -> None:
    """Add ``entry`` (from the artifact directory and prefix ``origin``) to a package's
    entries. Two directories of one device package (the targets of one owner, such as
    gfx1250 and gfx1250-strict, or xnack variants) may give one path: the same
    directory, symlink or file (mode and bytes) is installed once; anything else is
    an error naming both places and the path."""
    previous = found.get(entry.path)
    if previous is None:
        found[entry.path] = (entry, origin)
    elif not _same_entry(previous[0], entry):
        raise ContentCollision(
            f"{package.key}: {entry.path} comes from both {previous[1]} and {origin}, "
            "with different contents"
        )


def _same_entry(one: Entry, other: Entry) -> bool:
    """Whether two entries install the same thing: kind, mode, link target, bytes
    (directories are shared whatever their modes, as between packages)."""
    if one.kind == other.kind == EntryKind.DIR:
        return True
    if (one.kind, one.mode, one.target, one.size) != (
        other.kind,
        other.mode,
        other.target,
        other.size,
    ):
        return False
    if not one.is_file or one.data is not None or other.data is not None:
        return one.data == other.data
    if one.source is None or other.source is None:
        return one.source == other.source
    return _same_bytes(one.source, other.source)


def _same_bytes(one: str, other: str) -> bool:
    try:
        return same_bytes(one, other)
    except OSError as e:
        raise InvalidArtifacts(
            f"{printable(str(e.filename or one))}: cannot read: {e.strerror or e}"
        ) from None


def route(plan: ReleasePlan, tree: ArtifactTree, mtime: int) -> dict[str, tuple[Entry, ...]]:
    """Entries for every package with files; a path installed by two packages is an
    error naming both and the path, an entry no package may carry an error naming
    the entry (all such problems at once)."""
    routed: dict[str, tuple[Entry, ...]] = {}
    problems: list[str] = []
    for package in plan.packages:
        if package.has_files:
            try:
                routed[package.key] = package_entries(package, plan, tree, mtime)
            except InvalidArtifacts as e:
                problems.extend(str(e).splitlines())
    if problems:
        raise InvalidArtifacts("\n".join(dict.fromkeys(problems)))
    check_ownership(routed)
    return routed


def check_ownership(routed: Mapping[str, tuple[Entry, ...]]) -> None:
    owners: dict[str, tuple[str, str]] = {}
    problems = []
    for key, entries in routed.items():
        for entry in entries:
            first = owners.setdefault(entry.path, (key, entry.kind))
            if first[0] == key:
                continue
            if first[1] == entry.kind == "dir":
                continue  # directories are shared
            problems.append(f"{first[0]} and {key} both install {entry.path}")
    if problems:
        raise ContentCollision("\n".join(problems))
