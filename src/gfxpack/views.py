"""Renderings of a ReleasePlan: seed-000 trees and tables, JSON and Graphviz.

``tree`` and ``table`` draw what seed 000 draws, in its layout: a package's
own family expanded under it, other packages as annotated leaves; the
"Package Generation" tables with the seed's type and file wording.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from gfxpack.formats.package_format import DEB, FORMATS, PackageFormat
from gfxpack.plan.model import Kind, PlannedPackage, ReleasePlan, Req

# --- tree --------------------------------------------------------------------

_NO_FILES = {
    Kind.META: ["[No files - aggregator only]"],
    Kind.GENERIC_META: [
        "[No files]",
        "This is the GENERIC variant that aggregates all arch-specific variants",
    ],
    Kind.VERSIONED_META: [
        "[No files]",
        "Depends on versioned packages (no arch-specific variants)",
    ],
}
# What a non-versioned package points at decides how the seed describes it.
_ALIAS_OF = {
    Kind.VERSIONED: "[No files - dependency pointer only]",
    Kind.META: "[No files - user-facing package]",
}


def tree(plan: ReleasePlan, root: str, fmt: PackageFormat = DEB) -> str:
    """The dependency tree under one package, drawn as seed 000 draws them."""
    package = plan.get(root)
    if package is None:
        raise KeyError(root)
    lines = [f"{package.name(fmt)} ({package.kind.label})"]
    _tree_body(plan, package, fmt, "", {package.key}, lines)
    return "\n".join(lines) + "\n"


def _tree_body(
    plan: ReleasePlan,
    package: PlannedPackage,
    fmt: PackageFormat,
    prefix: str,
    shown: set[str],
    lines: list[str],
) -> None:
    children = _tree_children(package, fmt)
    bar = "│" if children else " "
    lines.append(prefix + bar)
    lines.extend(f"{prefix}{bar}   {text}" for text in _annotations(plan, package))
    if not children:
        return
    lines.append(prefix + "│")
    for i, (req, dep, suffix) in enumerate(children):
        last = i == len(children) - 1
        connector = "└─► " if last else "├─► "
        child = plan.by_key.get(req.target) if req.target and len(dep) == 1 else None
        if child is not None and child.base == package.base and child.key not in shown:
            shown.add(child.key)
            lines.append(f"{prefix}{connector}{child.name(fmt)} ({child.kind.label})")
            _tree_body(plan, child, fmt, prefix + ("    " if last else "│   "), shown, lines)
            if not last:
                lines.append(prefix + "│")
        else:
            lines.append(f"{prefix}{connector}{_leaf(dep, fmt)}{suffix}")


def _tree_children(
    package: PlannedPackage, fmt: PackageFormat
) -> list[tuple[Req, tuple[Req, ...], str]]:
    relations = package.relations(fmt)
    children = [(dep[0], dep, "") for dep in relations.depends]
    children += [(dep[0], dep, " [recommended]") for dep in relations.recommends]
    children += [(dep[0], dep, " [suggested]") for dep in relations.suggests]
    return children


def _leaf(dep: tuple[Req, ...], fmt: PackageFormat) -> str:
    if len(dep) > 1:
        return " | ".join(req.text or req.name for req in dep) + " (alternatives)"
    req = dep[0]
    return f"{req.text or req.name} ({req.reason})"


def _annotations(plan: ReleasePlan, package: PlannedPackage) -> list[str]:
    if package.kind is Kind.NON_VERSIONED:
        alias = plan.by_key.get(package.rpm.depends[0][0].target or "")
        return [_ALIAS_OF.get(alias.kind if alias else Kind.VERSIONED_META, "[No files]")]
    if package.kind is Kind.ARCH_META:
        return ["[No files]", f"Depends on actual packages with {package.arch} architecture"]
    if not package.has_files:
        return _NO_FILES.get(package.kind, ["[No files]"])
    described = {
        Kind.HOST: "libraries, docs",
        Kind.DEVICE: f"{package.arch} kpack files",
    }.get(package.kind, "actual package content")
    return [f"[Files: {described}]", *_sources(plan, package)]


def _sources(plan: ReleasePlan, package: PlannedPackage) -> list[str]:
    """Where the files come from: the artifact directories routed into the package."""
    spec = plan.specs.get(package.base)
    if spec is None:
        return []
    suffix = package.arch or "generic"
    found = []
    for source in spec.artifactory:
        if package.kind is Kind.DEVICE and not source.gfxarch:
            continue  # host-only content (Artifact_Gfxarch False)
        components = sorted({c for subdir in source.subdirs for c in subdir.components})
        target = suffix if source.gfxarch else "generic"
        if components:
            listed = components[0] if len(components) == 1 else "{" + ",".join(components) + "}"
            found.append(f"{source.artifact}_{listed}_{target}")
    return [f"from {', '.join(found)} into {plan.prefix}/"] if found else []


# --- table ---------------------------------------------------------------------

_FILES = {
    Kind.VERSIONED: "All content",
    Kind.HOST: "Libraries (.so), docs",
    Kind.DEVICE: ".kpack files (GPU kernels)",
}


def table(plan: ReleasePlan, base: str, fmt: PackageFormat = DEB) -> str:
    """One base's "Package Generation" table, in seed 000's Markdown layout."""
    rows = [
        (
            f"`{package.name(fmt)}`",
            package.kind.title,
            _FILES.get(package.kind, "None") if package.has_files else "None",
            ", ".join(_names(dep) for dep in package.relations(fmt).depends),
        )
        for package in plan.family(base)
    ]
    return markdown_table(("Package Name", "Type", "Files", "Direct Dependencies"), rows)


def _names(dep: tuple[Req, ...]) -> str:
    return " | ".join(req.text or req.name for req in dep)


def markdown_table(header: Iterable[str], rows: Sequence[tuple[str, ...]]) -> str:
    header = tuple(header)
    cells = [header, *(tuple(cell.replace("|", "\\|") for cell in row) for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)) + " |"]
    lines.append("| " + " | ".join("-" * w for w in widths) + " |")
    lines += [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells[1:]
    ]
    return "\n".join(lines) + "\n"


def tables(plan: ReleasePlan, fmt: PackageFormat = DEB) -> str:
    return "\n".join(f"### {base}\n\n{table(plan, base, fmt)}" for base in plan.specs)


# --- json ----------------------------------------------------------------------

_LISTS = ("depends", "recommends", "suggests", "provides", "conflicts", "replaces")


def to_json(plan: ReleasePlan, packages: Iterable[PlannedPackage] | None = None) -> dict[str, Any]:
    """The plan as the documented JSON contract (other keys may be added)."""
    return {
        "rocm_version": plan.rocm_version,
        "release": plan.release,
        "version": plan.full_version,
        "mode": str(plan.mode),
        "targets": list(plan.targets),
        "arches": list(plan.arches),
        "prefix": plan.prefix,
        "variant": plan.variant,
        "pin_policy": str(plan.pin_policy),
        "packages": [_package_json(p) for p in (plan.packages if packages is None else packages)],
        "notes": [
            {
                "severity": str(note.severity),
                "message": note.message,
                "packages": list(note.packages),
            }
            for note in plan.notes
        ],
    }


def _package_json(package: PlannedPackage) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": package.key,
        "base": package.base,
        "kind": str(package.kind),
        "arch": package.arch,
        "has_files": package.has_files,
    }
    for fmt in FORMATS:
        relations = package.relations(fmt)
        fields: dict[str, Any] = {"name": relations.name}
        for list_name in _LISTS:
            key = fmt.field_name(list_name)
            fields[key] = [fmt.render(dep) for dep in getattr(relations, list_name)]
        entry[fmt.name] = fields
    return entry


def dumps(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# --- dot -------------------------------------------------------------------------

_DOT_STYLE = {
    Kind.HOST: 'fillcolor="#cfe2ff"',
    Kind.DEVICE: 'fillcolor="#d1e7dd"',
    Kind.VERSIONED: 'fillcolor="#e2e3e5"',
    Kind.NON_VERSIONED: 'fillcolor="#ffffff"',
}


def dot(
    plan: ReleasePlan, packages: Iterable[PlannedPackage] | None = None, fmt: PackageFormat = DEB
) -> str:
    """Graphviz: one cluster per base, pinned edges labelled with their operator."""
    chosen = list(plan.packages if packages is None else packages)
    keys = {p.key for p in chosen}
    out = [
        f"digraph {_quote('gfxpack ' + plan.full_version)} {{",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fillcolor="#fff3cd", fontname="Helvetica"];',
    ]
    systems: set[str] = set()
    edges: list[str] = []
    for base, members in groupby(chosen, key=lambda p: p.base):
        out.append(f"  subgraph {_quote('cluster_' + base)} {{")
        out.append(f"    label={_quote(base)};")
        for package in members:
            style = _DOT_STYLE.get(package.kind, "")
            label = f"{package.name(fmt)}\\n{package.kind.label}"
            out.append(
                f'    {_quote(package.key)} [label="{label}"{", " + style if style else ""}];'
            )
            for req in (r for dep in package.relations(fmt).depends for r in dep):
                if req.target is None:
                    systems.add(fmt.render((req,)))
                    edges.append(f"  {_quote(package.key)} -> {_quote(fmt.render((req,)))};")
                elif req.target in keys:
                    attrs = f' [label="{req.op}"]' if req.op else ""
                    edges.append(f"  {_quote(package.key)} -> {_quote(req.target)}{attrs};")
        out.append("  }")
    out += [f"  {_quote(s)} [shape=ellipse, style=dashed];" for s in sorted(systems)]
    out += edges
    out.append("}")
    return "\n".join(out) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def reachable(plan: ReleasePlan, root: str, fmt: PackageFormat = DEB) -> list[PlannedPackage]:
    """Packages reachable from ``root`` over Depends, in plan order."""
    start = plan.get(root)
    if start is None:
        raise KeyError(root)
    seen = {start.key}
    stack = [start]
    while stack:
        for req in stack.pop().relations(fmt).edges():
            if req.target not in seen and req.target in plan.by_key:
                seen.add(req.target)
                stack.append(plan.by_key[req.target])
    return [p for p in plan.packages if p.key in seen]


# --- summary ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KindCount:
    """How many packages of one kind, with files, and their relations per format."""

    kind: Kind
    packages: int
    with_files: int
    depends: dict[PackageFormat, int]


@dataclass(frozen=True, slots=True)
class PlanSummary:
    bases: int
    packages: int
    kinds: tuple[KindCount, ...]  # in Kind order, kinds with no package left out


def summary(plan: ReleasePlan, packages: Iterable[PlannedPackage] | None = None) -> PlanSummary:
    """The counts ``gfxpack plan`` prints, of the plan or of ``packages``."""
    chosen = list(plan.packages if packages is None else packages)
    kinds = []
    for kind in Kind:
        of_kind = [p for p in chosen if p.kind is kind]
        if of_kind:
            depends = {fmt: sum(len(p.relations(fmt).depends) for p in of_kind) for fmt in FORMATS}
            kinds.append(KindCount(kind, len(of_kind), sum(p.has_files for p in of_kind), depends))
    return PlanSummary(len({p.base for p in chosen}), len(chosen), tuple(kinds))
