"""plan(): package.json specs + targets + version -> ReleasePlan. Pure. One module, past
600 lines, because :class:`_Planner` is one pass over the specs whose steps share its
state (the rules themselves live in :mod:`gfxpack.plan.rules`).

The planner takes values and returns values: no filesystem, no subprocess, no
logging. What exists on disk arrives as an optional ArtifactIndex; everything
worth telling the user comes back as plan notes or as one PlanError listing
every problem.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from gfxpack._gc import paused_gc
from gfxpack.amdgpu import OWNER_OF, OWNERS
from gfxpack.config import PackageSpec, Relations
from gfxpack.formats.package_format import FORMATS, PackageFormat
from gfxpack.plan import checks, debug, rules
from gfxpack.plan.artifact_index import ArtifactIndex
from gfxpack.plan.model import (
    Cause,
    Dep,
    Kind,
    MissingDependencies,
    Mode,
    Note,
    PackageRelations,
    PinPolicy,
    PlanError,
    PlannedPackage,
    Reason,
    ReleasePlan,
    Req,
    Severity,
    Variant,
    WarningRule,
)
from gfxpack.plan.naming import (
    InvalidName,
    Naming,
    arch_suffix,
    check_release,
    install_prefix,
    version_xy,
)
from gfxpack.plan.rules import Choice, Ref, RuleName, Shape
from gfxpack.plan.targets import check_target, sort_targets
from gfxpack.relations import Relation


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """How to plan. Every field has the default gfxpack documents."""

    mode: Mode = Mode.KPACK
    pin_policy: PinPolicy = PinPolicy.FAMILY
    variant: Variant = Variant.STANDARD
    install_prefix: str | None = None  # None: /opt/rocm/core-X.Y
    missing_dependencies: MissingDependencies = MissingDependencies.ERROR


def plan(
    specs: Sequence[PackageSpec],
    targets: Sequence[str],
    rocm_version: str,
    release: str = "1",
    options: PlanOptions = PlanOptions(),
    artifacts: ArtifactIndex | None = None,
) -> ReleasePlan:
    """Plan every package of a release; raise PlanError listing every problem."""
    with paused_gc():
        planner = _Planner(specs, targets, rocm_version, release, options, artifacts)
        return planner.run()


def _one_owner(first: str, other: str) -> bool:
    """Whether two different targets are both listed under one owner (gfxpack.amdgpu's
    OWNERS): built as their own targets, shipped in that owner's packages."""
    owner = OWNER_OF.get(first)
    return first != other and owner is not None and OWNER_OF.get(other) == owner


class _Planner:
    def __init__(
        self,
        specs: Sequence[PackageSpec],
        targets: Sequence[str],
        rocm_version: str,
        release: str,
        options: PlanOptions,
        artifacts: ArtifactIndex | None,
    ):
        self.options = options
        self.artifacts = artifacts
        self.rocm_version = rocm_version
        self.release = release
        self.causes: list[Cause] = []
        self.notes: dict[str, Note] = {}  # by message: each said once
        self._names: dict[tuple[Ref, PackageFormat | None], str] = {}
        self._reqs: dict[tuple[Ref, Reason, str | None, PackageFormat], Req] = {}
        self.all_specs = {spec.name: spec for spec in specs}
        self.specs = specs
        self.targets, self.arches = self._targets(targets)
        try:
            self.naming = Naming(version_xy(rocm_version), asan=options.variant == Variant.ASAN)
            check_release(release)
        except InvalidName as e:
            self.causes.append(Cause(str(e)))
        # The options are enums; a caller's plain string is checked all the same.
        if options.variant not in set(Variant):
            self.causes.append(Cause(f"build variant {options.variant!r}: expected '' or 'asan'"))
        if options.missing_dependencies not in set(MissingDependencies):
            self.causes.append(
                Cause(
                    f"missing_dependencies {options.missing_dependencies!r}: "
                    "expected 'error' or 'warn'"
                )
            )
        self.version = f"{rocm_version}-{release}"

    # -- inputs ------------------------------------------------------------

    def _targets(self, targets: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Requested targets and their name suffixes, xnack variants merged."""
        kept: list[str] = []
        by_suffix: dict[str, str] = {}
        in_tree = self._tree_suffixes()
        for target in targets:
            unknown = check_target(target)
            if unknown is not None:
                self.causes.append(Cause(unknown))
                continue
            try:
                suffix = arch_suffix(target)
            except InvalidName as e:
                self.causes.append(Cause(str(e)))
                continue
            # An owned target (gfx1250-strict) needs artifacts of its own, not its owner's.
            processor = target.split(":", 1)[0]
            if (
                in_tree is not None
                and (processor if processor in OWNER_OF else suffix) not in in_tree
            ):
                have = ", ".join(self.artifacts.targets() if self.artifacts else ()) or "none"
                self.causes.append(
                    Cause(
                        f"target {target}: the artifacts tree has no per-arch artifacts for it "
                        f"(its targets: {have})"
                    )
                )
                continue
            base_target = target.split(":", 1)[0]
            first = by_suffix.get(suffix)
            if first is None:
                by_suffix[suffix] = base_target
                kept.append(base_target)
            elif _one_owner(first, base_target):
                # Targets of one owner (gfx1250, gfx1250-strict) share its packages.
                if base_target not in kept:
                    kept.append(base_target)
            elif first.lower() != base_target.lower():
                self.causes.append(
                    Cause(
                        f"targets {first} and {base_target} both map to the name suffix "
                        f"-{suffix}; package names would collide",
                        (first, base_target),
                    )
                )
            if OWNER_OF.get(base_target, base_target) != base_target:
                self.note(
                    Severity.INFO,
                    f"target {base_target} is built into the {suffix} packages "
                    f"({suffix} owns {', '.join(OWNERS[suffix])}: each target's files keep "
                    "their own names in them)",
                )
            if base_target != target:
                self.note(
                    Severity.INFO,
                    f"target {target} is built into the {suffix} packages "
                    "(an xnack variant is a build of that device target: its files join "
                    "the target's device package)",
                )
        if not kept and not self.causes:
            self.causes.append(Cause("no GPU targets: give at least one, such as gfx942"))
        if self.options.mode is Mode.SINGLE_ARCH and len(kept) > 1:
            self.warn(
                WarningRule.SINGLE_ARCH,
                f"single-arch mode builds for the first target only ({kept[0]}); "
                f"ignoring {', '.join(kept[1:])}",
            )
            kept = kept[:1]
        # Processor order (Decision 16): devices, arch metas and every listing follow it.
        kept = sort_targets(kept)
        return tuple(kept), tuple(dict.fromkeys(arch_suffix(t) for t in kept))

    def _tree_suffixes(self) -> set[str] | None:
        """The arch suffixes the artifacts tree has per-arch directories for (None: no
        tree); a target an owner lists (gfx1250, gfx1250-strict) by its own name."""
        if self.artifacts is None:
            return None
        suffixes = set()
        for target in self.artifacts.targets():
            if target in OWNER_OF:
                suffixes.add(target)  # gfx1250-strict's own artifacts, see _targets
                continue
            try:
                suffixes.add(arch_suffix(target))
            except InvalidName:
                continue  # reported when that target is asked for
        return suffixes

    def note(self, severity: Severity, message: str, packages: Iterable[str] = ()) -> None:
        self.notes.setdefault(message, Note(severity, message, tuple(packages)))

    def warn(self, rule: WarningRule, message: str, packages: Iterable[str] = ()) -> None:
        """A warning, under the rule a waiver names to accept it."""
        self.notes.setdefault(message, Note(Severity.WARNING, message, tuple(packages), rule))

    # -- classification ----------------------------------------------------

    def _buildable(self) -> dict[str, PackageSpec]:
        buildable = {}
        for spec in self.specs:
            if spec.disabled:
                self.note(
                    Severity.INFO,
                    f"{spec.name} is disabled (DisablePackaging): not built",
                    [spec.name],
                )
            elif (
                self.artifacts is not None
                and not spec.metapackage
                and not self.artifacts.is_present(spec)
            ):
                wanted = ", ".join(f"{s.artifact}_*" for s in spec.artifactory) or "no Artifactory"
                self.warn(
                    WarningRule.NO_ARTIFACTS,
                    f"{spec.name} has no artifacts ({wanted}): not built",
                    [spec.name],
                )
            else:
                buildable[spec.name] = spec
        return buildable

    def _classify(self, spec: PackageSpec) -> tuple[bool, tuple[str, ...]]:
        """Gfxarch-ness (spec section 5) and the arches with a device or arch meta."""
        if spec.is_devel and not spec.metapackage:
            if spec.gfxarch:
                self.note(
                    Severity.INFO,
                    f"{spec.name}: -devel packages are never gfxarch (they depend on the "
                    "host packages of their gfxarch dependencies, never on device code); "
                    "built as versioned + non-versioned",
                    [spec.name],
                )
            return False, ()
        if not spec.gfxarch:
            return False, ()
        if spec.metapackage or self.artifacts is None:
            return True, self.arches
        have = self.artifacts.arch_suffixes(spec, self.targets)
        if not have:
            self.warn(
                WarningRule.MISSING_ARCH,
                f"{spec.name}: Gfxarch is True but no per-arch artifacts exist; "
                "built as a non-gfxarch package",
                [spec.name],
            )
            return False, ()
        present = tuple(arch for arch in self.arches if arch in have)
        missing = [arch for arch in self.arches if arch not in have]
        if missing and self.options.mode is Mode.KPACK:
            self.warn(
                WarningRule.MISSING_ARCH,
                f"{spec.name}: no artifacts for {', '.join(missing)}: "
                "no device package for that target; its meta depends on the devices that exist",
                [spec.name],
            )
        return True, present

    # -- what the rules ask of the other bases (rules.Bases) ---------------------

    def is_gfxarch(self, base: str) -> bool:
        return self.gfxarch[base]

    def is_metapackage(self, base: str) -> bool:
        return self.buildable[base].metapackage

    def has_arch(self, base: str, arch: str) -> bool:
        return arch in self.device_arches[base]

    def host_name(self, base: str) -> str:
        return self.naming.host(base)

    def name(self, ref: Ref, fmt: PackageFormat | None = None) -> str:
        """The name of ``ref`` in ``fmt``; without a format, its key in the plan."""
        key = (ref, fmt)
        name = self._names.get(key)
        if name is None:
            if ref.shape is Shape.HOST:
                name = self.naming.host(ref.base, fmt)
            elif ref.shape is Shape.VERSIONED:
                name = self.naming.versioned(ref.base, fmt, ref.arch)
            else:
                name = self.naming.non_versioned(ref.base, fmt, ref.arch)
            self._names[key] = name
        return name

    # -- the plan ------------------------------------------------------------

    def run(self) -> ReleasePlan:
        if self.causes:
            raise PlanError(self.causes)
        self.buildable = self._buildable()
        self.gfxarch: dict[str, bool] = {}
        self.device_arches: dict[str, tuple[str, ...]] = {}
        for spec in self.buildable.values():
            self.gfxarch[spec.name], self.device_arches[spec.name] = self._classify(spec)

        declared = checks.declared_dependencies(self.all_specs, self.buildable)
        if self.options.missing_dependencies == MissingDependencies.ERROR:
            self.causes.extend(declared)
        else:
            for cause in declared:
                self.warn(
                    WarningRule.DEPENDENCY_OMITTED, f"{cause}: dependency omitted", cause.packages
                )

        if not self.buildable:
            # No false green: a plan of nothing would build nothing, successfully.
            self.causes.append(Cause(self._nothing_to_plan()))
            raise PlanError(self.causes)
        packages: list[PlannedPackage] = []
        for spec in self.buildable.values():
            if self.options.mode is Mode.SINGLE_ARCH:
                packages.extend(self._single_arch_family(spec))
            elif self.gfxarch[spec.name] and spec.metapackage:
                packages.extend(self._gfxarch_meta_family(spec))
            elif self.gfxarch[spec.name]:
                packages.extend(self._gfxarch_family(spec))
            else:
                packages.extend(self._simple_family(spec))

        result = ReleasePlan(
            rocm_version=self.rocm_version,
            release=self.release,
            mode=self.options.mode,
            targets=self.targets,
            arches=self.arches,
            prefix=install_prefix(self.options.install_prefix, self.naming.xy, self.naming.asan),
            variant=self.options.variant,
            pin_policy=self.options.pin_policy,
            packages=tuple(packages),
            specs=self.buildable,
            notes=tuple(self.notes.values()),
        )
        self.causes.extend(checks.check_plan(result))
        if self.causes:
            raise PlanError(self.causes)
        for cycle in checks.cycles(result):
            self.warn(
                WarningRule.DEPENDENCY_CYCLE,
                f"{cycle}: dpkg and rpm install the packages of a cycle together",
                cycle.packages,
            )
        for path in checks.cross_arch_paths(result):
            self.warn(
                WarningRule.CROSS_ARCH_PATH,
                f"{path}; installing it installs device code of other arches too "
                "(gfxpack verify reports it as a cross-arch violation)",
                path.packages,
            )
        return dataclasses.replace(result, notes=tuple(self.notes.values()))

    def _nothing_to_plan(self) -> str:
        if not self.specs:
            return "planned nothing: package.json defines no package (an empty array)"
        disabled = sum(spec.disabled for spec in self.specs)
        return (
            "planned nothing: every package package.json defines is disabled "
            f"(DisablePackaging) or has no artifacts ({disabled} disabled, "
            f"{len(self.specs) - disabled} without artifacts)"
        )

    # One method per package type of seed 000; each yields the family in build order.

    def _gfxarch_family(self, spec: PackageSpec) -> Iterator[PlannedPackage]:
        """host + one device per arch + per-package meta + non-versioned (N+3)."""
        base = spec.name
        host = Ref(Shape.HOST, base)
        yield from self._with_debug(
            spec, self._package(spec, host, Kind.HOST, None, True, RuleName.HOST)
        )
        devices = [Ref(Shape.VERSIONED, base, arch) for arch in self.device_arches[base]]
        for ref in devices:
            own_host = [(host, Reason.OWN_HOST)]
            yield self._package(spec, ref, Kind.DEVICE, ref.arch, True, RuleName.DEVICE, own_host)
        meta = Ref(Shape.VERSIONED, base)
        members = [(ref, Reason.MEMBER) for ref in [host, *devices]]
        yield self._package(spec, meta, Kind.META, None, False, None, members)
        yield self._non_versioned(spec, Ref(Shape.NON_VERSIONED, base), meta)

    def _gfxarch_meta_family(self, spec: PackageSpec) -> Iterator[PlannedPackage]:
        """generic meta + one arch meta per arch + non-versioned (N+2)."""
        base = spec.name
        arch_metas = [Ref(Shape.VERSIONED, base, arch) for arch in self.arches]
        generic = Ref(Shape.VERSIONED, base)
        members = [(ref, Reason.MEMBER) for ref in arch_metas]
        yield self._package(spec, generic, Kind.GENERIC_META, None, False, None, members)
        for ref in arch_metas:
            runtime = self._runtime_meta(spec, ref)
            yield self._package(
                spec, ref, Kind.ARCH_META, ref.arch, False, RuleName.ARCH_META, runtime
            )
        yield self._non_versioned(spec, Ref(Shape.NON_VERSIONED, base), generic)

    def _simple_family(self, spec: PackageSpec) -> Iterator[PlannedPackage]:
        """versioned (or versioned meta) + non-versioned (2)."""
        versioned = Ref(Shape.VERSIONED, spec.name)
        if spec.metapackage:
            kind, rule, has_files = Kind.VERSIONED_META, RuleName.VERSIONED_META, False
        else:
            kind, rule, has_files = (
                Kind.VERSIONED,
                RuleName.DEVEL if spec.is_devel else RuleName.VERSIONED,
                True,
            )
        yield from self._with_debug(
            spec,
            self._package(spec, versioned, kind, None, has_files, rule, self._runtime_meta(spec)),
        )
        yield self._non_versioned(spec, Ref(Shape.NON_VERSIONED, spec.name), versioned)

    def _single_arch_family(self, spec: PackageSpec) -> Iterator[PlannedPackage]:
        """Legacy mode: versioned + non-versioned, both arch-suffixed if gfxarch."""
        arch = self.arches[0] if self.gfxarch[spec.name] else None
        versioned = Ref(Shape.VERSIONED, spec.name, arch)
        kind = Kind.VERSIONED_META if spec.metapackage else Kind.VERSIONED
        yield from self._with_debug(
            spec,
            self._package(
                spec,
                versioned,
                kind,
                arch,
                not spec.metapackage,
                RuleName.SINGLE_ARCH,
                self._runtime_meta(spec),
            ),
        )
        yield self._non_versioned(spec, Ref(Shape.NON_VERSIONED, spec.name, arch), versioned)

    def _with_debug(self, spec: PackageSpec, owner: PlannedPackage) -> Iterator[PlannedPackage]:
        """``owner`` (the package of the base's host files) and its debug package, when
        the base has one (plan/debug.py); what is left out is said."""
        yield owner
        if spec.metapackage:
            return
        if self.artifacts is not None and self.options.mode is Mode.KPACK:
            unused = debug.per_arch_debug_directories(spec, self.artifacts)
            if unused:
                self.note(
                    Severity.INFO,
                    f"{spec.name}: {', '.join(unused)} not packaged: debug symbols are "
                    "packaged per host package, from the generic dbg directories, never "
                    "per arch",
                    [spec.name],
                )
        if spec.disable_debug_package and debug.lists_debug_component(spec):
            self.note(
                Severity.INFO,
                f"{spec.name}: Disable_Debug_Package is set: its dbg component is not packaged",
                [spec.name],
            )
        if debug.wants_debug_package(spec, self.artifacts):
            yield debug.debug_package(owner, self.version)

    def _runtime_meta(
        self, spec: PackageSpec, arch_meta: Ref | None = None
    ) -> list[tuple[Ref, Reason]]:
        """A devel metapackage also depends on its runtime's metapackage: the arch meta
        of a gfxarch devel meta for arch A on the runtime's variant for A
        (``amdrocm-core-devel8.2-gfx942 → amdrocm-core8.2-gfx942``, Decision 15), any
        other devel meta on the runtime's full package."""
        if not (spec.metapackage and spec.is_devel):
            return []
        runtime = spec.name[: -len("-devel")]
        if runtime not in self.buildable:
            return []
        if arch_meta is not None:
            assert arch_meta.arch is not None
            choice = rules.arch_meta(self, runtime, arch_meta.arch)
            if choice.warning:
                name = self.name(arch_meta)
                self.warn(_choice_rule(choice), f"{name}: {choice.warning}", [name, runtime])
            return [] if choice.ref is None else [(choice.ref, Reason.RUNTIME_META)]
        arch = (
            self.arches[0]
            if (self.options.mode is Mode.SINGLE_ARCH and self.gfxarch[runtime])
            else None
        )
        return [(Ref(Shape.VERSIONED, runtime, arch), Reason.RUNTIME_META)]

    def _non_versioned(self, spec: PackageSpec, ref: Ref, target: Ref) -> PlannedPackage:
        """The user-facing name: depends on its versioned package and carries the
        declared Provides / Conflicts / Replaces (Obsoletes)."""
        return self._package(
            spec,
            ref,
            Kind.NON_VERSIONED,
            ref.arch,
            False,
            None,
            [(target, Reason.ALIAS)],
            declared=True,
        )

    def _package(
        self,
        spec: PackageSpec,
        ref: Ref,
        kind: Kind,
        arch: str | None,
        has_files: bool,
        rule: RuleName | None,
        implicit: Sequence[tuple[Ref, Reason]] = (),
        declared: bool = False,
    ) -> PlannedPackage:
        relations: dict[str, PackageRelations] = {}
        for fmt in FORMATS:
            name = self.name(ref, fmt)
            lists: dict[str, tuple[Dep, ...]] = {}
            source = spec.relations(fmt)
            implicit_deps = [
                (self._req(spec, kind, target, reason, fmt),) for target, reason in implicit
            ]
            for list_name, declared_relations in source.dependency_lists():
                resolved = self._resolve_list(spec, kind, rule, arch, name, declared_relations, fmt)
                if list_name == "depends":
                    resolved = implicit_deps + resolved
                lists[list_name] = _unique(resolved)
            if declared:
                lists.update(_declared(source, fmt))
            relations[fmt.name] = PackageRelations(name=name, **lists)
        return PlannedPackage(
            key=self.name(ref),
            base=spec.name,
            kind=kind,
            arch=arch,
            has_files=has_files,
            **relations,
        )

    def _req(
        self, spec: PackageSpec, kind: Kind, ref: Ref, reason: Reason, fmt: PackageFormat
    ) -> Req:
        op = rules.pin_op(self.options.pin_policy, kind, reason, spec.metapackage)
        # Thousands of packages share edges such as runtime8.2 >= V-R: share the values too.
        key = (ref, reason, op, fmt)
        req = self._reqs.get(key)
        if req is None:
            req = Req(
                name=self.name(ref, fmt),
                target=self.name(ref),
                op=op,
                version=self.version if op else None,
                reason=reason,
            )
            self._reqs[key] = req
        return req

    def _resolve_list(
        self,
        spec: PackageSpec,
        kind: Kind,
        rule: RuleName | None,
        arch: str | None,
        name: str,
        relations: tuple[Relation, ...],
        fmt: PackageFormat,
    ) -> list[Dep]:
        if rule is None:
            return []
        resolve, carries_system = rules.VARIANT_RULES[rule]
        if rule is RuleName.SINGLE_ARCH:
            # Every package of a single-arch release, arch-suffixed or not (-devel),
            # depends on the family's variant of a gfxarch dependency.
            arch = self.arches[0]
        resolved: list[Dep] = []
        for relation in relations:
            if relation.opaque is not None:
                if carries_system:
                    resolved.append((Req(relation.opaque, text=relation.opaque),))
                continue
            members = []
            for atom in relation.atoms:
                if not rules.is_package_dependency(atom.name):
                    if carries_system:
                        members.append(Req(atom.name, text=atom.text))
                    continue
                base = rules.dependency_base(atom.name, self.all_specs)
                if base not in self.buildable:
                    continue  # reported by checks.declared_dependencies
                if atom.op:
                    self.warn(
                        WarningRule.VERSION_CONSTRAINT,
                        f"{spec.name}: version constraint in {atom.text!r} is replaced "
                        f"by the {self.options.pin_policy} pin policy",
                        [spec.name],
                    )
                resolution = resolve(self, base, arch)
                if resolution.warning:
                    self.warn(
                        _choice_rule(resolution), f"{name}: {resolution.warning}", [name, base]
                    )
                if resolution.ref is not None:
                    members.append(self._req(spec, kind, resolution.ref, resolution.reason, fmt))
            if members:
                resolved.append(tuple(members))
        return resolved


def _declared(source: Relations, fmt: PackageFormat) -> dict[str, tuple[Dep, ...]]:
    """Provides / Conflicts / Replaces as written, names in the format's spelling."""
    spell = fmt.spell
    return {
        list_name: tuple(
            (Req(relation.opaque, text=relation.opaque, reason=Reason.DECLARED),)
            if relation.opaque is not None
            else tuple(
                Req(spell(atom.name), op=atom.op, version=atom.version, reason=Reason.DECLARED)
                for atom in relation.atoms
            )
            for relation in getattr(source, list_name)
        )
        for list_name in ("provides", "conflicts", "replaces")
    }


def _unique(deps: Iterable[Dep]) -> tuple[Dep, ...]:
    """Drop repeated relations (a devel meta listing its runtime meta, say)."""
    seen = set()
    kept = []
    for dep in deps:
        identity = tuple(req.target or req.text or req.name for req in dep)
        if identity not in seen:
            seen.add(identity)
            kept.append(dep)
    return tuple(kept)


def _choice_rule(choice: Choice) -> WarningRule:
    """A rule's warning: a dependency it left out, or one it pointed elsewhere."""
    return WarningRule.DEPENDENCY_OMITTED if choice.ref is None else WarningRule.DEPENDENCY_REPLACED
