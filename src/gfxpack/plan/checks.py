"""Invariants every plan must hold, each violation a Cause naming the packages.

- every ``amdrocm`` dependency names a package of the set that is built
  (Decision 3);
- no two variants share a name, in either format;
- every in-set edge points at a planned package;
- no device or arch meta depends on a package of another arch;
- no aggregator (meta) is empty.

Dependency cycles are not violations: Debian policy and rpm both install the
members of a cycle together, and TheRock's own package.json has them. They are
returned by :func:`cycles` for the planner to report as warnings. So are the
longer ways an arch-specific package reaches another arch (:func:`cross_arch_paths`),
each edge of which is allowed on its own: an arch meta depending on a Gfxarch=False
metapackage, which depends on a library's full metapackage, installs every arch.
(A ``-devel`` package is no such way: it depends on host packages, Decision 15.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gfxpack.config import PackageSpec
from gfxpack.formats.package_format import FORMATS, PackageFormat
from gfxpack.plan.model import Cause, Kind, PlannedPackage, ReleasePlan
from gfxpack.plan.rules import dependency_base, is_package_dependency


def declared_dependencies(
    specs: Mapping[str, PackageSpec], buildable: Mapping[str, PackageSpec]
) -> list[Cause]:
    """Dependencies on amdrocm packages that package.json does not define, that
    are disabled, or that have no artifacts: one Cause per (package, dependency)."""
    causes = []
    for spec in buildable.values():
        reported: set[str] = set()
        for fmt, list_name, index, name in _declared_package_names(spec):
            base = dependency_base(name, specs)
            if base in buildable or name in reported:
                continue
            reported.add(name)
            where = f"{spec.pointer}/{fmt.key_of(list_name)}/{index}"
            if base is None:
                why = "which package.json does not define"
            elif specs[base].disabled:
                why = "which is disabled (DisablePackaging)"
            else:
                why = "which has no artifacts and is not built"
            causes.append(
                Cause(f"{spec.name} ({where}) depends on {name}, {why}", (spec.name, name))
            )
    return causes


def _declared_package_names(
    spec: PackageSpec,
) -> Iterator[tuple[PackageFormat, str, int, str]]:
    for fmt in FORMATS:
        for list_name, relations in spec.relations(fmt).dependency_lists():
            for index, relation in enumerate(relations):
                for atom in relation.atoms:
                    if is_package_dependency(atom.name):
                        yield fmt, list_name, index, atom.name


def check_plan(plan: ReleasePlan) -> list[Cause]:
    """Every graph invariant, all violations at once."""
    return [
        *unique_names(plan),
        *dangling_edges(plan),
        *cross_arch_edges(plan),
        *empty_aggregators(plan),
    ]


def unique_names(plan: ReleasePlan) -> Iterator[Cause]:
    for fmt in FORMATS:
        owner: dict[str, str] = {}
        for package in plan.packages:
            name = package.name(fmt)
            first = owner.setdefault(name, package.base)
            if first != package.base:
                yield Cause(
                    f"{first} and {package.base} both produce the {fmt.title} package {name}",
                    (first, package.base),
                )


def dangling_edges(plan: ReleasePlan) -> Iterator[Cause]:
    for package in plan.packages:
        for fmt in FORMATS:
            for req in package.relations(fmt).edges():
                if req.target not in plan.by_key:
                    yield Cause(
                        f"{package.name(fmt)} depends on {req.name}, which is not in the plan",
                        (package.key, req.name),
                    )


def cross_arch_edges(plan: ReleasePlan) -> Iterator[Cause]:
    """A device or arch meta of arch A may depend only on arch-neutral packages and
    packages of A: a gfx1100 device never pulls in gfx942 code."""
    seen = set()
    for package in plan.packages:
        if package.arch is None or package.kind not in (Kind.DEVICE, Kind.ARCH_META):
            continue
        for fmt in FORMATS:
            for req in package.relations(fmt).edges():
                target = plan.by_key.get(req.target or "")
                if target and target.arch is not None and target.arch != package.arch:
                    if (package.key, target.key) in seen:
                        continue
                    seen.add((package.key, target.key))
                    yield Cause(
                        f"{package.name(fmt)} ({package.kind.label}, {package.arch}) depends on "
                        f"{target.name(fmt)}, a package of another arch ({target.arch})",
                        (package.key, target.key),
                    )


def cross_arch_paths(plan: ReleasePlan) -> Iterator[Cause]:
    """Arch-specific packages whose dependencies, followed further, reach a package of
    another arch: one Cause per base, with the shortest such path of its first arch."""
    fmt = FORMATS[0]  # the formats spell one graph
    graph = {
        package.key: [req.target for dep in package.relations(fmt).depends for req in dep]
        for package in plan.packages
    }
    found: dict[str, list[tuple[PlannedPackage, list[str]]]] = {}
    for package in plan.packages:
        if package.arch is None or package.kind not in (Kind.DEVICE, Kind.ARCH_META):
            continue
        path = _first_of_another_arch(plan, graph, package)
        if path is not None:
            found.setdefault(package.base, []).append((package, path))
    for reached in found.values():
        package, path = reached[0]
        names = [plan.by_key[key].name(fmt) for key in path]
        others = [p.arch for p, _ in reached[1:] if p.arch]
        yield Cause(
            f"{names[0]} ({package.arch}) pulls in {names[-1]} of "
            f"{plan.by_key[path[-1]].arch}: {' → '.join(names)}"
            + (f" (likewise for {', '.join(others)})" if others else ""),
            tuple(dict.fromkeys(path)),
        )


def _first_of_another_arch(
    plan: ReleasePlan, graph: Mapping[str, list[str | None]], start: PlannedPackage
) -> list[str] | None:
    """The shortest path over Depends from ``start`` to a package of another arch (the
    direct edges cross_arch_edges checks are one hop long), or None."""
    parent: dict[str, str] = {start.key: start.key}
    frontier = [start.key]
    while frontier:
        following = []
        for key in frontier:
            for target in graph.get(key, ()):
                if target is None or target in parent or target not in plan.by_key:
                    continue
                parent[target] = key
                arch = plan.by_key[target].arch
                if arch is not None and arch != start.arch:
                    path = [target]
                    while path[-1] != start.key:
                        path.append(parent[path[-1]])
                    return path[::-1]
                following.append(target)
        frontier = following
    return None


def empty_aggregators(plan: ReleasePlan) -> Iterator[Cause]:
    for package in plan.packages:
        if not package.kind.is_aggregator:
            continue
        for fmt in FORMATS:
            if not package.relations(fmt).depends:
                key = fmt.key_of("depends")
                yield Cause(
                    f"{package.name(fmt)} ({package.kind.label}) aggregates nothing in "
                    f"{fmt.title}: a metapackage needs at least one dependency "
                    f"(check {key} of {package.base})",
                    (package.key,),
                )


def cycles(plan: ReleasePlan) -> Iterator[Cause]:
    """Dependency cycles over Depends, one per strongly connected component, each
    shown as the shortest cycle through its first member (Tarjan's algorithm, iterative)."""
    reported: set[frozenset[str]] = set()
    for fmt in FORMATS:
        graph = {
            package.key: sorted(
                {req.target for dep in package.relations(fmt).depends for req in dep if req.target}
            )
            for package in plan.packages
        }
        for component in strongly_connected(graph):
            members = frozenset(component)
            if members in reported:
                continue
            if len(component) == 1 and component[0] not in graph.get(component[0], ()):
                continue
            reported.add(members)
            path = _cycle_path(graph, component)
            names = [plan.by_key[key].name(fmt) for key in path]
            yield Cause(f"dependency cycle: {' → '.join(names)}", tuple(sorted(members)))


def strongly_connected(graph: Mapping[str, list[str]]) -> Iterator[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan, iterative: a deep graph
    cannot exhaust the stack), single nodes included; edges to nodes that are not keys
    are ignored."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(graph[succ])))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                yield component


def _cycle_path(graph: Mapping[str, list[str]], component: list[str]) -> list[str]:
    """The shortest cycle through the component's smallest key (breadth-first)."""
    members = set(component)
    start = min(component)
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in graph[node]:
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if succ in members and succ not in parent:
                    parent[succ] = node
                    following.append(succ)
        frontier = following
    return [start, start]  # unreachable for a real cycle
