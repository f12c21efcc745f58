"""The values the planner returns: planned packages, their relations, the plan."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from functools import cached_property

from gfxpack.config import PackageSpec
from gfxpack.errors import GfxpackError
from gfxpack.formats.package_format import FORMATS, PackageFormat
from gfxpack.plan.naming import InvalidName, arch_suffix


class Kind(Enum):
    """The package types of seed 000. (Not a StrEnum: ``title`` would shadow
    ``str.title``; ``str(kind)`` is still its value.)"""

    VERSIONED = "versioned"
    NON_VERSIONED = "non-versioned"
    HOST = "host"
    DEVICE = "device"
    META = "meta"  # a gfxarch package's aggregator: host + devices
    GENERIC_META = "generic-meta"  # a Gfxarch=True metapackage: every arch meta
    ARCH_META = "arch-meta"  # a Gfxarch=True metapackage for one arch
    VERSIONED_META = "versioned-meta"  # a Gfxarch=False metapackage
    # The debug symbols of a host or versioned package (-dbgsym / -debuginfo): the dbg
    # component, under /usr/lib/debug (plan/debug.py). Never per arch.
    DEBUG = "debug"

    def __str__(self) -> str:
        return str(self.value)

    @property
    def is_aggregator(self) -> bool:
        return self in _AGGREGATORS

    @property
    def title(self) -> str:
        """The seed's name for the type, as its tables print it."""
        return _TITLES[self]

    @property
    def label(self) -> str:
        """The seed's name for the type, as its trees print it."""
        return _TITLES[self].lower()


_AGGREGATORS = frozenset({Kind.META, Kind.GENERIC_META, Kind.ARCH_META, Kind.VERSIONED_META})
_TITLES = {
    Kind.VERSIONED: "Versioned",
    Kind.NON_VERSIONED: "Non-versioned",
    Kind.HOST: "Host",
    Kind.DEVICE: "Device",
    Kind.META: "Meta",
    Kind.GENERIC_META: "Generic Meta",
    Kind.ARCH_META: "Arch-specific Meta",
    Kind.VERSIONED_META: "Versioned Meta",
    Kind.DEBUG: "Debug symbols",
}


class Reason(StrEnum):
    """Why an edge exists: the rule of spec section 7.1 that made it."""

    SYSTEM = "system dependency"
    NON_GFXARCH = "non-gfxarch"
    HOST_VARIANT = "gfxarch → host variant"
    SAME_ARCH = "gfxarch → same arch"
    FULL_META = "gfxarch → full meta"
    HOST_FALLBACK = "gfxarch → host variant, no device for this arch"
    OWN_HOST = "own host package"
    MEMBER = "member"
    ALIAS = "versioned package"
    RUNTIME_META = "runtime meta"
    DEBUG_SYMBOLS = "debug symbols of"  # always =: symbols match one build only
    DECLARED = "declared"  # Provides / Conflicts / Replaces, copied as written


class PinPolicy(StrEnum):
    FAMILY = "family"  # = within a family and from aggregators, >= elsewhere
    EXACT = "exact"
    MINIMUM = "minimum"
    UPSTREAM = "upstream"  # only metapackages pin (spec section 7.2)


class Mode(StrEnum):
    KPACK = "kpack"
    SINGLE_ARCH = "single-arch"


class Variant(StrEnum):
    """A build variant; its packages' names and prefix say which."""

    STANDARD = ""
    ASAN = "asan"  # -asan names and the core-asan-X.Y prefix


class MissingDependencies(StrEnum):
    """What becomes of an amdrocm dependency no buildable package satisfies."""

    ERROR = "error"  # the plan fails
    WARN = "warn"  # the dependency is omitted, with a warning


class Severity(StrEnum):
    WARNING = "warning"
    INFO = "info"


class WarningRule(StrEnum):
    """What a warning of plan or build is about: the ``rule`` a waiver names to accept
    a known one (``plan --waivers``, ``build --waivers``; verify/waivers.py reads them)."""

    DEPENDENCY_CYCLE = "dependency-cycle"
    CROSS_ARCH_PATH = "cross-arch-path"
    NO_ARTIFACTS = "no-artifacts"
    MISSING_ARCH = "missing-arch"
    DEPENDENCY_OMITTED = "dependency-omitted"
    DEPENDENCY_REPLACED = "dependency-replaced"
    VERSION_CONSTRAINT = "version-constraint"
    SINGLE_ARCH = "single-arch"
    PLACEHOLDER = "placeholder"  # build only: a field left as gfxpack init wrote it


@dataclass(frozen=True, slots=True)
class Req:
    """One alternative of a planned relation, in no format's syntax (each format
    renders it: PackageFormat.render).

    ``target`` is the key of the planned package it points to, or None for a
    system package, whose ``text`` is copied verbatim into its own format.
    """

    name: str
    target: str | None = None
    op: str | None = None
    version: str | None = None
    reason: Reason = Reason.SYSTEM
    text: str | None = None


# One relation: satisfied by any of its alternatives.
Dep = tuple[Req, ...]


@dataclass(frozen=True, slots=True)
class PackageRelations:
    """One format's name and relation lists for a planned package."""

    name: str
    depends: tuple[Dep, ...] = ()
    recommends: tuple[Dep, ...] = ()
    suggests: tuple[Dep, ...] = ()
    provides: tuple[Dep, ...] = ()
    conflicts: tuple[Dep, ...] = ()
    replaces: tuple[Dep, ...] = ()  # RPM: Obsoletes

    def dependency_lists(self) -> Iterator[tuple[str, tuple[Dep, ...]]]:
        yield "depends", self.depends
        yield "recommends", self.recommends
        yield "suggests", self.suggests

    def edges(self) -> Iterator[Req]:
        """Every in-set alternative of Depends, Recommends and Suggests."""
        for _, deps in self.dependency_lists():
            for dep in deps:
                for req in dep:
                    if req.target is not None:
                        yield req


@dataclass(frozen=True, slots=True)
class PlannedPackage:
    """One package to build. ``key`` is its name in package.json's spelling (RPM's),
    unique in a plan; ``deb`` and ``rpm`` hold each format's name and relations."""

    key: str
    base: str
    kind: Kind
    arch: str | None
    has_files: bool
    deb: PackageRelations
    rpm: PackageRelations

    def relations(self, fmt: PackageFormat) -> PackageRelations:
        found: PackageRelations = getattr(self, fmt.name)
        return found

    def name(self, fmt: PackageFormat) -> str:
        return self.relations(fmt).name


@dataclass(frozen=True, slots=True)
class Note:
    """Something the planner decided that the user should hear about."""

    severity: Severity
    message: str
    packages: tuple[str, ...] = ()
    # A warning's rule, which a waiver names (None: an informational note).
    rule: WarningRule | None = None


@dataclass(frozen=True)
class ReleasePlan:
    """Every package of one release, in build order, with its relations."""

    rocm_version: str
    release: str
    mode: Mode
    targets: tuple[str, ...]
    arches: tuple[str, ...]
    prefix: str
    variant: Variant
    pin_policy: PinPolicy
    packages: tuple[PlannedPackage, ...]
    specs: Mapping[str, PackageSpec] = field(default_factory=dict)
    notes: tuple[Note, ...] = ()

    @property
    def full_version(self) -> str:
        return f"{self.rocm_version}-{self.release}"

    @cached_property
    def by_key(self) -> dict[str, PlannedPackage]:
        return {package.key: package for package in self.packages}

    def get(self, name: str) -> PlannedPackage | None:
        """A package by its name in any format."""
        found = self.by_key.get(name)
        if found is None:
            found = next((p for p in self.packages for fmt in FORMATS if p.name(fmt) == name), None)
        return found

    def family(self, base: str) -> list[PlannedPackage]:
        return [package for package in self.packages if package.base == base]

    @property
    def owners(self) -> dict[str, tuple[str, ...]]:
        """Each arch and the targets built into its packages, in processor order:
        ``gfx1250: (gfx1250, gfx1250-strict)`` when both are targets (their owner is
        :data:`gfxpack.amdgpu.OWNERS`'), ``gfx942: (gfx942,)`` otherwise."""
        by_arch: dict[str, list[str]] = {arch: [] for arch in self.arches}
        for target in self.targets:
            try:
                suffix = arch_suffix(target)
            except InvalidName:
                continue  # a plan read back from JSON names what it likes
            if suffix in by_arch:
                by_arch[suffix].append(target)
        return {arch: tuple(targets) for arch, targets in by_arch.items()}


@dataclass(frozen=True, slots=True)
class Cause:
    """One reason a plan cannot be made, naming the packages involved."""

    message: str
    packages: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message


class PlanError(GfxpackError, ValueError):
    """Every problem found while planning, reported together."""

    def __init__(self, causes: list[Cause]):
        self.causes = tuple(causes)
        super().__init__("\n".join(str(cause) for cause in causes))
