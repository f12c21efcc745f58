"""The plan as text: dependency trees and "Package Generation" tables.

``tree`` and ``table`` follow the layout of the upstream dependency-tree
document (TheRock's ``nativepackage_dependency_tree.md``): a package's own
family expanded under it, other packages as annotated leaves, every edge with
its version pin; the "Package Generation" tables with that document's type and
file wording.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gfxpack.formats.debug_symbols import DEBUG_COMPONENT, DEBUG_ROOT
from gfxpack.formats.package_format import DEB, PackageFormat
from gfxpack.formats.payload import install_path
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
    """The dependency tree under one package, each edge with its pin."""
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
            lines.append(f"{prefix}{connector}{fmt.render((req,))} ({child.kind.label})")
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
    """A dependency as the package states it, pin included (``amdrocm-runtime8.2 (>= 8.2.0-1)``),
    and the rule that made it."""
    if len(dep) > 1:
        return " | ".join(fmt.render((req,)) for req in dep) + " (alternatives)"
    req = dep[0]
    return f"{fmt.render((req,))} ({req.reason})"


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
        Kind.DEBUG: "debug symbols",
    }.get(package.kind, "actual package content")
    return [f"[Files: {described}]", *_sources(plan, package)]


def _sources(plan: ReleasePlan, package: PlannedPackage) -> list[str]:
    """Where the files come from: the artifact directories routed into the package."""
    spec = plan.specs.get(package.base)
    if spec is None:
        return []
    suffix = package.arch or "generic"
    debug = package.kind is Kind.DEBUG
    found = []
    for source in spec.artifactory:
        if package.kind is Kind.DEVICE and not source.gfxarch:
            continue  # host-only content (Artifact_Gfxarch False)
        # The dbg component goes to the debug package alone (plan/debug.py).
        components = sorted(
            {
                c
                for subdir in source.subdirs
                for c in subdir.components
                if (c == DEBUG_COMPONENT) == debug
            }
        )
        target = suffix if source.gfxarch else "generic"
        if components:
            listed = components[0] if len(components) == 1 else "{" + ",".join(components) + "}"
            found.append(f"{source.artifact}_{listed}_{target}")
    # install_path: the prefix / gives "into /", not "into //".
    into = install_path(DEBUG_ROOT if debug else plan.prefix, "")
    return [f"from {', '.join(found)} into {into}"] if found else []


# --- table ---------------------------------------------------------------------

_FILES = {
    Kind.VERSIONED: "All content",
    Kind.HOST: "Libraries (.so), docs",
    Kind.DEVICE: ".kpack files (GPU kernels)",
}


def table(plan: ReleasePlan, base: str, fmt: PackageFormat = DEB) -> str:
    """One base's "Package Generation" table (Markdown): name, type, files and the direct
    dependencies with their pins; Recommends and Suggests columns when the family has any."""
    family = plan.family(base)
    header = ["Package Name", "Type", "Files", "Direct Dependencies"]
    extra = [
        (title, list_name)
        for title, list_name in (("Recommends", "recommends"), ("Suggests", "suggests"))
        if any(getattr(package.relations(fmt), list_name) for package in family)
    ]
    rows: list[tuple[str, ...]] = []
    for package in family:
        relations = package.relations(fmt)
        row = [
            f"`{package.name(fmt)}`",
            package.kind.title,
            _FILES.get(package.kind, "None") if package.has_files else "None",
            ", ".join(fmt.render(dep) for dep in relations.depends),
        ]
        row += [", ".join(fmt.render(dep) for dep in getattr(relations, n)) for _, n in extra]
        rows.append(tuple(row))
    return markdown_table((*header, *(title for title, _ in extra)), rows)


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
