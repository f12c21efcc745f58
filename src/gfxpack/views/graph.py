"""The plan as Graphviz source (``plan --format dot/svg/png`` and the release report).

One drawing convention for both: a cluster per base, packages filled by kind; Depends
solid, Recommends dashed, Suggests dotted; the pin of an edge ("=", "≥", with the version
when it is not the release's own) as its label; a relation with alternatives drawn as one
"one of" diamond with an edge to each choice; packages of other families and system
packages as plain leaves; a legend. Every edge carries a ``class`` (the relation, or
"choice", or "legend"), which the SVG keeps and scripts reading ``dot -Tjson`` can test.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby

from gfxpack.formats.package_format import DEB, PackageFormat
from gfxpack.plan.model import Dep, Kind, PlannedPackage, ReleasePlan, Req
from gfxpack.plan.targets import sort_targets

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
    for package in chosen:
        for field, deps in package.relations(fmt).dependency_lists():
            for i, dep in enumerate(deps):
                edges += _relation_edges(plan, package, field, i, dep, fmt, drawn, leaves)
    # A family's picture puts each arch's packages and the leaves of that arch they
    # depend on in one dot group, named after the arch: dot then draws the edges within
    # a group straight, so core-sdk8.2-gfx942 sits beside its own core-dev8.2-gfx942, and
    # the arches keep processor order. (Without groups dot orders them by edge crossings
    # and mixes them up; a cluster per arch keeps them together but still mixes the
    # arches.) The release's picture has no leaves: no groups either.
    groups: dict[str, str] = {}  # node key -> its arch
    for node in leaves:
        leaf = plan.by_key.get(node[1:-1])
        if leaf is not None and leaf.arch is not None:
            groups[leaf.key] = leaf.arch
    grouped = set(groups.values())
    groups.update({p.key: p.arch for p in chosen if p.arch is not None and p.arch in grouped})
    for node, attributes in leaves.items():
        if node[1:-1] in groups:
            leaves[node] = f'{attributes}, group="{groups[node[1:-1]]}"'
    for base, members in groupby(chosen, key=lambda p: p.base):
        out.append(f"  subgraph {_quote('cluster_' + base)} {{")
        out.append(f'    label={_quote(base)}; style=rounded; color="#adb5bd";')
        for package in members:
            fill = _FILL.get(package.kind, _META_FILL)
            bold = ", penwidth=2.5" if package.key == focus else ""
            group = f', group="{groups[package.key]}"' if package.key in groups else ""
            label = _label(package.name(fmt), package.kind.label)
            out.append(
                f'    {_quote(package.key)} [label={label}, fillcolor="{fill}"{bold}{group}];'
            )
        out.append("  }")
    out += _leaf_groups(plan, leaves)
    out += edges
    if legend:
        kinds = {package.kind for package in chosen}
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
