"""What an artifacts directory holds, as a plain value the planner can ask.

The planner never reads the disk: gfxarch-ness and the devices a package gets
depend on which ``<name>_<component>_<target>`` directories exist (spec
packaging.md sections 3 and 5), and this index answers those questions from a
list of directory names (their pattern is :mod:`gfxpack.artifact_layout`'s).
``gfxpack.artifacts`` builds it from a real tree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gfxpack.artifact_layout import ARTIFACT_DIR, GENERIC
from gfxpack.config import PackageSpec
from gfxpack.plan.naming import TARGET, arch_suffix
from gfxpack.plan.targets import sort_targets


@dataclass(frozen=True, slots=True)
class ArtifactDir:
    name: str
    component: str
    target: str


class ArtifactIndex:
    """The artifact directories of one build, by name."""

    def __init__(self, directory_names: Iterable[str]):
        dirs = []
        for entry in directory_names:
            match = ARTIFACT_DIR.match(entry)
            # Anything else in the tree (logs, manifests) is not an artifact.
            if match and (match[3] == GENERIC or TARGET.match(match[3])):
                dirs.append(ArtifactDir(*match.groups()))
        self.dirs = tuple(sorted(dirs, key=lambda d: (d.name, d.component, d.target)))
        self._names = frozenset(d.name for d in self.dirs)

    def is_present(self, spec: PackageSpec) -> bool:
        """A base is present when one of its artifact names has a directory."""
        return any(source.artifact in self._names for source in spec.artifactory)

    def arch_suffixes(self, spec: PackageSpec) -> frozenset[str]:
        """Arch suffixes with per-arch content for the base's gfxarch artifacts."""
        wanted = {
            (source.artifact, component)
            for source in spec.artifactory
            if source.gfxarch
            for subdir in source.subdirs
            for component in subdir.components
        }
        return frozenset(
            arch_suffix(d.target)
            for d in self.dirs
            if d.target != GENERIC and (d.name, d.component) in wanted
        )

    def targets(self) -> tuple[str, ...]:
        """Every non-generic target, xnack features stripped, in processor order (spec
        section 4, Decision 16)."""
        return tuple(
            sort_targets({d.target.split(":", 1)[0] for d in self.dirs if d.target != GENERIC})
        )
