"""Renderings of a ReleasePlan: dependency trees and tables, JSON and Graphviz.

``tree`` and ``table`` follow the layout of the upstream dependency-tree
document (TheRock's ``nativepackage_dependency_tree.md``): a package's own
family expanded under it, other packages as annotated leaves, every edge with
its version pin; the "Package Generation" tables with that document's type and
file wording.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, TypeVar

from gfxpack.errors import GfxpackError
from gfxpack.formats.package_format import DEB, FORMATS, RPM, PackageFormat
from gfxpack.formats.payload import install_path
from gfxpack.plan.model import (
    Dep,
    Kind,
    Mode,
    Note,
    PackageRelations,
    PinPolicy,
    PlannedPackage,
    Reason,
    ReleasePlan,
    Req,
    Severity,
    Variant,
)
from gfxpack.plan.targets import sort_targets
from gfxpack.relations import InvalidRelation, Relation

StrEnumT = TypeVar("StrEnumT", Kind, Mode, PinPolicy, Severity, Variant)

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
    # install_path: the prefix / gives "into /", not "into //".
    return [f"from {', '.join(found)} into {install_path(plan.prefix, '')}"] if found else []


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


class InvalidPlanJson(GfxpackError, ValueError):
    """A file that is not the plan JSON contract."""


def from_json(data: object, source: str) -> ReleasePlan:
    """A plan back from its JSON contract (``plan --format json``, or the ``plan`` of a
    build's index.json), relations re-linked to the planned packages they name.
    ``source`` names the file in errors. Package specs are not part of the contract:
    the plan is for drawing and comparing, not for building."""
    try:
        return _from_json(_Json(data))
    except _Unexpected as e:
        raise InvalidPlanJson(f"{source}: not a gfxpack plan (plan --format json): {e}") from None


class _Unexpected(ValueError):
    pass


class _Json:
    """A JSON value and its JSON pointer; each accessor says what it expected."""

    def __init__(self, value: object, pointer: str = "") -> None:
        self.value, self.pointer = value, pointer

    def _fail(self, expected: str) -> _Unexpected:
        shown = json.dumps(self.value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return _Unexpected(f"{self.pointer or '/'}: expected {expected}, got {shown}")

    def __getitem__(self, key: str) -> _Json:
        if not isinstance(self.value, dict):
            raise self._fail("an object")
        if key not in self.value:
            raise _Unexpected(f"{self.pointer or '/'}: no {key!r}")
        return _Json(self.value[key], f"{self.pointer}/{key}")

    def get(self, key: str, default: object) -> _Json:
        if isinstance(self.value, dict) and key not in self.value:
            return _Json(default, f"{self.pointer}/{key}")
        return self[key]

    def items(self) -> list[_Json]:
        if not isinstance(self.value, list):
            raise self._fail("a list")
        return [_Json(v, f"{self.pointer}/{i}") for i, v in enumerate(self.value)]

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self._fail("a string")
        return self.value

    def optional_text(self) -> str | None:
        return None if self.value is None else self.text()

    def texts(self) -> tuple[str, ...]:
        return tuple(item.text() for item in self.items())

    def choice(self, kind: type[StrEnumT]) -> StrEnumT:
        try:
            return kind(self.text())
        except ValueError:
            raise self._fail(" or ".join(repr(str(k)) for k in kind)) from None


def _from_json(data: _Json) -> ReleasePlan:
    entries = data["packages"].items()
    keys = {
        fmt: {entry[fmt.name]["name"].text(): entry["name"].text() for entry in entries}
        for fmt in FORMATS
    }
    packages = tuple(
        PlannedPackage(
            key=entry["name"].text(),
            base=entry["base"].text(),
            kind=entry["kind"].choice(Kind),
            arch=entry["arch"].optional_text(),
            has_files=bool(entry["has_files"].value),
            deb=_relations_from_json(entry[DEB.name], DEB, keys[DEB]),
            rpm=_relations_from_json(entry[RPM.name], RPM, keys[RPM]),
        )
        for entry in entries
    )
    if len(keys[RPM]) != len(packages):
        raise _Unexpected("/packages: two packages have one name")
    targets = data["targets"].texts()
    return ReleasePlan(
        rocm_version=data["rocm_version"].text(),
        release=data["release"].text(),
        mode=data["mode"].choice(Mode),
        targets=targets,
        arches=data.get("arches", list(targets)).texts(),
        prefix=data.get("prefix", "").text(),
        variant=data.get("variant", "").choice(Variant),
        pin_policy=data.get("pin_policy", "family").choice(PinPolicy),
        packages=packages,
        notes=tuple(
            Note(
                note["severity"].choice(Severity), note["message"].text(), note["packages"].texts()
            )
            for note in data.get("notes", []).items()
        ),
    )


def _relations_from_json(
    fields: _Json, fmt: PackageFormat, keys: dict[str, str]
) -> PackageRelations:
    lists: dict[str, tuple[Dep, ...]] = {}
    for list_name in _LISTS:
        key = fmt.field_name(list_name)
        declared = list_name in ("provides", "conflicts", "replaces")
        deps = []
        for item in fields.get(key, []).items():
            try:
                relation = fmt.parse(item.text())
            except InvalidRelation as e:
                raise _Unexpected(f"{item.pointer}: {e}") from None
            deps.append(_dep_from_relation(relation, keys, declared))
        lists[list_name] = tuple(deps)
    return PackageRelations(name=fields["name"].text(), **lists)


def _dep_from_relation(relation: Relation, keys: dict[str, str], declared: bool) -> Dep:
    if relation.opaque is not None:
        return (Req(relation.opaque, text=relation.opaque),)
    reqs = []
    for atom in relation.atoms:
        target = keys.get(atom.name)
        if declared or target is not None:
            reason = Reason.DECLARED if declared else Reason.MEMBER
            reqs.append(Req(atom.name, target, atom.op, atom.version, reason))
        else:
            reqs.append(Req(atom.name, text=atom.text))
    return tuple(reqs)


def dumps(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# --- dot -------------------------------------------------------------------------------
#
# One drawing convention for plan --format dot/svg/png and the release report: a cluster
# per base, packages filled by kind; Depends solid, Recommends dashed, Suggests dotted;
# the pin of an edge ("=", "≥", with the version when it is not the release's own) as its
# label; a relation with alternatives drawn as one "one of" diamond with an edge to each
# choice; packages of other families and system packages as plain leaves; a legend.
# Every edge carries a ``class`` (the relation, or "choice", or "legend"), which the SVG
# keeps and scripts reading ``dot -Tjson`` can test.

_FILL = {
    Kind.HOST: "#cfe2ff",
    Kind.DEVICE: "#d1e7dd",
    Kind.VERSIONED: "#e2e3e5",
    Kind.NON_VERSIONED: "#ffffff",
}
_META_FILL = "#fff3cd"
_LEAF = 'shape=box, style="rounded,dashed", color="#6c757d", fontcolor="#495057"'
_SYSTEM = 'shape=ellipse, style=dashed, color="#6c757d", fontcolor="#495057"'
_CHOICE = 'shape=diamond, style=filled, fillcolor="#f8f9fa", label="one of", fontsize=9'
EDGE_STYLES = {"depends": "solid", "recommends": "dashed", "suggests": "dotted"}
_OPERATORS = {"=": "=", ">=": "≥", "<=": "≤", ">": ">", "<": "<"}


def dot(
    plan: ReleasePlan,
    packages: Iterable[PlannedPackage] | None = None,
    fmt: PackageFormat = DEB,
    focus: str | None = None,
    legend: bool = True,
) -> str:
    """Graphviz source: ``packages`` (default: the whole release) in a cluster per base,
    with their direct dependencies; ``focus`` (a package key) is drawn bold."""
    chosen = list(plan.packages if packages is None else packages)
    drawn = {p.key for p in chosen}
    out = [
        f"digraph {_quote('gfxpack ' + plan.full_version)} {{",
        # newrank: rank the whole graph at once, clusters and all. dot's older
        # cluster-by-cluster ranking fails on a release's cross-family cycles
        # ("trouble in init_rank", Graphviz 2.43 as Debian 12 ships it).
        "  newrank=true;",
        '  rankdir=LR; nodesep=0.15; ranksep=0.5; fontname="Helvetica"; fontsize=11;',
        '  node [shape=box, style="rounded,filled", fillcolor="#fff3cd", fontname="Helvetica",'
        " fontsize=10, height=0.3];",
        '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.6];',
    ]
    leaves: dict[str, str] = {}  # node id -> attributes, drawn once
    edges: list[str] = []
    kinds: set[Kind] = set()
    for base, members in groupby(chosen, key=lambda p: p.base):
        out.append(f"  subgraph {_quote('cluster_' + base)} {{")
        out.append(f'    label={_quote(base)}; style=rounded; color="#adb5bd";')
        for package in members:
            kinds.add(package.kind)
            fill = _FILL.get(package.kind, _META_FILL)
            bold = ", penwidth=2.5" if package.key == focus else ""
            label = _label(package.name(fmt), package.kind.label)
            out.append(f'    {_quote(package.key)} [label={label}, fillcolor="{fill}"{bold}];')
            for field, deps in package.relations(fmt).dependency_lists():
                for i, dep in enumerate(deps):
                    edges += _relation_edges(plan, package, field, i, dep, fmt, drawn, leaves)
        out.append("  }")
    out += _leaf_groups(plan, leaves)
    out += edges
    if legend:
        out += _legend(kinds, any('class="choice"' in e for e in edges))
    out.append("}")
    return "\n".join(out) + "\n"


def legend() -> str:
    """The legend alone, every kind and style in it: for a page of many pictures drawn
    with ``legend=False``."""
    header = ['digraph "legend" {', '  rankdir=LR; fontname="Helvetica";']
    return "\n".join([*header, *_legend(set(Kind), True), "}"]) + "\n"


def _leaf_groups(plan: ReleasePlan, leaves: dict[str, str]) -> list[str]:
    """The leaves, those of a GPU arch boxed together by arch when several arches
    have several: a family that reaches many packages per arch (an arch meta per
    target) then reads as one column per arch."""
    neutral: list[str] = []
    by_arch: dict[str, list[str]] = {}
    for node, attributes in leaves.items():
        package = plan.by_key.get(node[1:-1])
        line = f"{node} [{attributes}];"
        if package is None or package.arch is None:
            neutral.append(line)
        else:
            by_arch.setdefault(package.arch, []).append(line)
    arches = sort_targets(by_arch)
    out = [f"  {line}" for line in neutral]
    if len(by_arch) < 2 or max(len(lines) for lines in by_arch.values()) < 2:
        return out + [f"  {line}" for arch in arches for line in by_arch[arch]]
    for arch in arches:
        out.append(f'  subgraph "cluster_leaves_{arch}" {{')
        out.append(f'    label="{arch}"; style="rounded,dashed"; color="#ced4da"; fontsize=9;')
        out += [f"    {line}" for line in by_arch[arch]]
        out.append("  }")
    return out


def _relation_edges(
    plan: ReleasePlan,
    package: PlannedPackage,
    field: str,
    index: int,
    dep: Dep,
    fmt: PackageFormat,
    drawn: set[str],
    leaves: dict[str, str],
) -> list[str]:
    """The edges of one relation: straight to its package, or through a choice node."""
    style = f'style={EDGE_STYLES[field]}, class="{field}"'
    source = _quote(package.key)
    targets = [_node(plan, req, fmt, drawn, leaves) for req in dep]
    if len(dep) == 1:
        return [f"  {source} -> {targets[0]} [{style}{_pin(plan, dep[0])}];"]
    choice = _quote(f"choice:{package.key}:{field}:{index}")
    leaves[choice] = _CHOICE
    lines = [f"  {source} -> {choice} [{style}, arrowhead=none];"]
    lines += [
        f'  {choice} -> {target} [style={EDGE_STYLES[field]}, class="choice"{_pin(plan, req)}];'
        for req, target in zip(dep, targets, strict=True)
    ]
    return lines


def _node(
    plan: ReleasePlan, req: Req, fmt: PackageFormat, drawn: set[str], leaves: dict[str, str]
) -> str:
    """The node an alternative points at, added to ``leaves`` if it is not drawn."""
    if req.target is not None:
        node = _quote(req.target)
        if req.target not in drawn:
            leaves[node] = f"label={_quote(plan.by_key[req.target].name(fmt))}, {_LEAF}"
        return node
    node = _quote("system:" + req.name)
    leaves[node] = f"label={_quote(req.name)}, {_SYSTEM}"
    return node


def _pin(plan: ReleasePlan, req: Req) -> str:
    """The edge label of a version constraint: "=" or "≥", with the version if it is
    not the release's own."""
    op, version = req.op, req.version
    if op is None and req.text and req.text != req.name:
        # A system relation kept verbatim: "python3 (>= 3.6.8)" or "python3 >= 3.6.8".
        op, _, version = req.text[len(req.name) :].strip(" ()").partition(" ")
        op = _FROM_TEXT.get(op, op)
    if not op:
        return ""
    shown = _OPERATORS.get(op, op)
    if version and version != plan.full_version:
        shown += " " + version
    return f", label={_quote(shown)}"


_FROM_TEXT = {"<<": "<", ">>": ">"}


def _legend(kinds: set[Kind], choices: bool) -> list[str]:
    out = [
        '  subgraph "cluster_legend" {',
        '    label="legend"; style=rounded; color="#adb5bd"; fontsize=10;',
        '    node [shape=plaintext, style="", fontname="Helvetica", fontsize=9, height=0.2];',
        '    edge [fontname="Helvetica", fontsize=9, arrowsize=0.6];',
    ]
    cells = "".join(
        f'<td border="1" style="rounded" bgcolor="{_FILL.get(kind, _META_FILL)}">{kind.label}</td>'
        for kind in Kind
        if kind in kinds
    )
    out.append(
        f'    "legend:kinds" [label=<<table border="0" cellspacing="3"><tr>{cells}</tr></table>>];'
    )
    samples = [
        ("depends", "solid", "Depends (= pins the release)"),
        ("recommends", "dashed", "Recommends"),
        ("suggests", "dotted", "Suggests"),
    ]
    for name, style, text in samples:
        out.append(f'    "legend:{name}:a" [label=""]; "legend:{name}:b" [label={_quote(text)}];')
        out.append(
            f'    "legend:{name}:a" -> "legend:{name}:b" [style={style}, class="legend"'
            + (', label="="' if name == "depends" else "")
            + "];"
        )
    if choices:
        out.append(f'    "legend:choice" [{_CHOICE}];')
        out.append('    "legend:choice:text" [label="alternatives: any one of its arrows"];')
        out.append('    "legend:choice" -> "legend:choice:text" [style=invis, class="legend"];')
    # The kinds in the column of the texts, so the sample edges stay short.
    out.append('    {rank=same; "legend:kinds"; "legend:depends:b";}')
    out.append("  }")
    return out


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quote(text: str) -> str:
    return f'"{_escape(text)}"'


def _label(*lines: str) -> str:
    """A quoted label of several lines."""
    return '"' + "\\n".join(_escape(line) for line in lines) + '"'


def family(plan: ReleasePlan, name: str) -> tuple[str | None, list[PlannedPackage]]:
    """What a drawing of ``name`` shows: the package to highlight (None for a base) and
    every package of its base."""
    package = plan.get(name)
    members = plan.family(package.base if package is not None else name)
    if not members:
        raise KeyError(name)
    return (package.key if package is not None else None), members


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
