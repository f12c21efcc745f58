"""What an artifacts directory holds, as a plain value the planner can ask.

The planner never reads the disk: gfxarch-ness and the devices a package gets
depend on which ``<name>_<component>_<target>`` directories exist (spec
packaging.md sections 3 and 5), and this index answers those questions from a
list of directory names (their pattern is :mod:`gfxpack.artifact_layout`'s).
``gfxpack.artifacts`` builds it from a real tree.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from gfxpack.amdgpu import OWNER_OF
from gfxpack.artifact_layout import ARTIFACT_DIR, GENERIC
from gfxpack.config import PackageSpec
from gfxpack.formats.debug_symbols import DEBUG_COMPONENT
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

    def arch_suffixes(
        self, spec: PackageSpec, targets: Collection[str] | None = None
    ) -> frozenset[str]:
        """Arch suffixes with per-arch content for the base's gfxarch artifacts. Debug
        symbols make no device package (plan/debug.py): a ``dbg`` directory is not
        per-arch content."""
        wanted = {
            (source.artifact, component)
            for source in spec.artifactory
            if source.gfxarch
            for subdir in source.subdirs
            for component in subdir.components
            if component != DEBUG_COMPONENT
        }
        # A target an owner shares its packages with (gfx1250-strict) counts only when
        # ``targets`` (the release's) names it: its directories are routed only then.
        return frozenset(
            arch_suffix(d.target)
            for d in self.dirs
            if d.target != GENERIC
            and (d.name, d.component) in wanted
            and (targets is None or builds_target(d.target, targets))
        )

    def targets(self) -> tuple[str, ...]:
        """Every non-generic target, xnack features stripped, in processor order (spec
        section 4, Decision 16)."""
        return tuple(
            sort_targets({d.target.split(":", 1)[0] for d in self.dirs if d.target != GENERIC})
        )


def builds_target(target: str, targets: Collection[str]) -> bool:
    """Whether a release of ``targets`` builds an artifact directory's ``target``: a
    target an owner shares its packages with (gfx1250-strict) only when named."""
    processor = target.split(":", 1)[0].lower()
    return processor not in OWNER_OF or processor in targets
