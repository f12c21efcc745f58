"""A TheRock artifacts directory: what it holds, and which files go to which package.

Layout (spec packaging.md section 3): one directory per artifact,
``<name>_<component>_<target>/``, holding ``artifact_manifest.txt`` (one
build-tree prefix per line) and the prefix trees. The payload of a package is
the content under the manifest lines its package.json subdirs select, merged
into the install prefix. Packaging never inspects files: host vs device is
decided by the directory's target alone.

:func:`scan` reads the tree into an :class:`ArtifactTree`; :func:`route` maps
every planned package to its entries and rejects any path two packages would
install (Decision 7).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gfxpack.config import ArtifactSource
from gfxpack.errors import GfxpackError
from gfxpack.formats.payload import Entry, entry_from_disk, with_parents
from gfxpack.plan import ArtifactIndex, Kind, Mode, PlannedPackage, ReleasePlan
from gfxpack.plan.artifact_index import ARTIFACT_DIR, GENERIC
from gfxpack.plan.naming import arch_suffix

MANIFEST = "artifact_manifest.txt"
THEROCK_MANIFEST = "therock_manifest.json"


class InvalidArtifacts(GfxpackError, ValueError):
    """An artifacts directory that cannot be read as TheRock's layout."""


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
            self._manifests[directory] = _read_manifest(self.root / directory / MANIFEST)
        return self._manifests[directory]


def scan(root: str | os.PathLike[str]) -> ArtifactTree:
    """Read an artifacts directory: its artifact directories and the kpack flag."""
    root = Path(root)
    if not root.exists():
        raise InvalidArtifacts(f"{root}: artifacts directory does not exist")
    if not root.is_dir():
        raise InvalidArtifacts(f"{root}: not a directory")
    directories, warnings = [], []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if not entry.is_dir() or not ARTIFACT_DIR.match(entry.name):
            continue
        if not os.path.isfile(os.path.join(entry.path, MANIFEST)):
            warnings.append(f"{entry.path}: no {MANIFEST}; directory ignored")
            continue
        directories.append(entry.name)
    if not directories:
        raise InvalidArtifacts(
            f"{root}: no artifact directories (expected <name>_<component>_<target>/ "
            f"holding {MANIFEST}, such as blas_lib_generic/)"
        )
    return ArtifactTree(root, tuple(directories), _kpack_split(root), tuple(warnings))


def _read_manifest(path: Path) -> tuple[str, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArtifacts(f"{path}: cannot read: {e}") from None
    prefixes = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        normalized = posixpath.normpath(line)
        if line.startswith("/") or normalized == ".." or normalized.startswith("../"):
            raise InvalidArtifacts(
                f"{path}:{number}: {line!r} must be a relative path inside the artifact"
            )
        prefixes.append(normalized)
    return tuple(prefixes)


def _kpack_split(root: Path) -> bool:
    """Whether any therock_manifest.json says {"flags": {"KPACK_SPLIT_ARTIFACTS": true}}."""
    for manifest in sorted(root.rglob(THEROCK_MANIFEST)):
        try:
            flags = json.loads(manifest.read_text(encoding="utf-8")).get("flags", {})
        except (OSError, ValueError, AttributeError) as e:
            raise InvalidArtifacts(f"{manifest}: not a JSON object: {e}") from None
        if isinstance(flags, dict) and flags.get("KPACK_SPLIT_ARTIFACTS") is True:
            return True
    return False


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
    variants for a device, the family in single-arch mode."""
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
    ]


def package_entries(
    package: PlannedPackage, plan: ReleasePlan, tree: ArtifactTree, mtime: int
) -> tuple[Entry, ...]:
    """Every path a package installs, with its prefix's directories, sorted."""
    spec = plan.specs[package.base]
    present = set(tree.directories)
    found: dict[str, tuple[Entry, str]] = {}
    for source in spec.artifactory:
        for subdir in source.subdirs:
            for component in subdir.components:
                for directory in source_directories(package, source, component, plan, tree):
                    if directory not in present:
                        continue
                    for prefix in tree.manifest(directory):
                        if selects(subdir.name, prefix):
                            top = tree.root / directory / prefix
                            for entry in _walk(top, plan.prefix, mtime):
                                _merge(found, entry, f"{directory}/{prefix}", package)
    entries = [entry for entry, _ in found.values()]
    return with_parents(entries, mtime, stop=posixpath.dirname(plan.prefix))


def _walk(top: Path, prefix: str, mtime: int) -> Iterator[Entry]:
    """Everything under ``top``, hidden entries included, symlinks not followed."""
    if not top.is_dir():
        return
    for directory, dirnames, filenames in os.walk(top):
        relative = os.path.relpath(directory, top)
        base = prefix if relative == "." else f"{prefix}/{relative}"
        for name in sorted(dirnames + filenames):
            yield entry_from_disk(os.path.join(directory, name), f"{base}/{name}", mtime)
        # os.walk lists symlinks to directories as dirs; they are entries, not trees.
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(directory, d))]


def _merge(
    found: dict[str, tuple[Entry, str]], entry: Entry, origin: str, package: PlannedPackage
) -> None:
    previous = found.get(entry.path)
    if previous is None:
        found[entry.path] = (entry, origin)
    elif not (previous[0].kind == entry.kind == "dir"):
        raise ContentCollision(
            f"{package.key}: {entry.path} comes from both {previous[1]} and {origin}"
        )


def route(plan: ReleasePlan, tree: ArtifactTree, mtime: int) -> dict[str, tuple[Entry, ...]]:
    """Entries for every package with files; a path installed by two packages is an
    error naming both and the path (all such paths at once)."""
    routed = {
        package.key: package_entries(package, plan, tree, mtime)
        for package in plan.packages
        if package.has_files
    }
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
