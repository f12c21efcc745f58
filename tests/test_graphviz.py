"""Dependency pictures: the drawing conventions read back from Graphviz's own layout
(``dot -Tjson``), and plan --format dot/svg/png on the command line."""

from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from click.testing import CliRunner, Result

from gfxpack import graphviz, views
from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.plan import plan
from tests.conftest import EXAMPLE_CONFIG, EXAMPLE_TARGETS, shared_path

pytestmark = pytest.mark.slow  # make check skips it: pictures laid out by Graphviz's dot


@pytest.fixture(scope="module")
def example_plan(example_config):
    return plan(example_config.packages, EXAMPLE_TARGETS, "8.2.0")


def laid_out(source: str) -> tuple[dict[str, dict], list[dict]]:
    """Nodes by name and edges (with ``tail``/``head`` names) as dot itself read them."""
    graph = json.loads(graphviz.render(source, "json"))
    objects = graph["objects"]
    nodes = {o["name"]: o for o in objects if "nodes" not in o and "subgraphs" not in o}
    edges = [
        {**e, "tail": objects[e["tail"]]["name"], "head": objects[e["head"]]["name"]}
        for e in graph.get("edges", [])
    ]
    return nodes, edges


def edge(edges: list[dict], tail: str, head: str) -> dict:
    (found,) = [e for e in edges if e["tail"] == tail and e["head"] == head]
    return found


def test_llvm_family_pins_alternatives_and_recommends(example_plan):
    focus, members = views.family(example_plan, "amdrocm-llvm")
    nodes, edges = laid_out(views.dot(example_plan, members, DEB, focus))
    # Pins: the alias pins its versioned package exactly, the versioned package its
    # dependency as a minimum.
    alias = edge(edges, "amdrocm-llvm", "amdrocm-llvm8.2")
    assert (alias["style"], alias["class"], alias["label"]) == ("solid", "depends", "=")
    assert edge(edges, "amdrocm-llvm8.2", "amdrocm-sysdeps8.2")["label"] == "≥"
    assert edge(edges, "amdrocm-llvm8.2", "system:libc6")["label"] == ""  # no pin
    # libstdc++6 | libstdc++8: one relation, drawn as one choice with an arrow to each.
    (choice,) = [
        e["head"]
        for e in edges
        if e["head"].startswith("choice:") and e["tail"] == "amdrocm-llvm8.2"
        if {x["head"] for x in edges if x["tail"] == e["head"]}
        == {"system:libstdc++6", "system:libstdc++8"}
    ]
    into = edge(edges, "amdrocm-llvm8.2", choice)
    assert (into["class"], into["arrowhead"], into["style"]) == ("depends", "none", "solid")
    assert nodes[choice]["shape"] == "diamond" and nodes[choice]["label"] == "one of"
    assert {e["class"] for e in edges if e["tail"] == choice} == {"choice"}
    # Recommends are dashed; the four libgcc alternatives make a second choice.
    recommended = {e["head"]: e["style"] for e in edges if e.get("class") == "recommends"}
    assert recommended == {
        "system:gcc": "dashed",
        "system:g++": "dashed",
        "system:gcc-multilib": "dashed",
    }
    assert sum(e["class"] == "choice" for e in edges) == 2 + 4
    # The legend explains each style that is drawn.
    legend = {e["head"]: e["style"] for e in edges if e["class"] == "legend"}
    assert legend["legend:recommends:b"] == "dashed" and "legend:choice:text" in legend
    assert nodes["amdrocm-llvm"]["penwidth"] == "2.5"


def test_device_pins_own_host_and_same_arch_dependency(example_plan):
    focus, members = views.family(example_plan, "amdrocm-blas8.2-gfx942")
    assert focus == "amdrocm-blas8.2-gfx942"
    nodes, edges = laid_out(views.dot(example_plan, members, RPM, focus))
    assert edge(edges, "amdrocm-blas8.2-gfx942", "amdrocm-blas-host8.2")["label"] == "="
    solver = edge(edges, "amdrocm-blas8.2-gfx942", "amdrocm-solver8.2-gfx942")
    assert solver["label"] == "≥"
    # Another family's package is a leaf: dashed outline, not in a cluster of its own.
    assert nodes["amdrocm-solver8.2-gfx942"]["style"] == "rounded,dashed"
    assert not any(e["class"] == "choice" for e in edges)
    assert "legend:choice" not in nodes  # no alternatives, nothing to explain


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_whole_release_draws_every_relation_once(example_plan, fmt):
    nodes, edges = laid_out(views.dot(example_plan, fmt=fmt))
    assert {p.key for p in example_plan.packages} <= set(nodes)
    classes = Counter(e["class"] for e in edges)
    relations = [
        (field, dep)
        for p in example_plan.packages
        for field, deps in p.relations(fmt).dependency_lists()
        for dep in deps
    ]
    for field in ("depends", "recommends"):
        assert classes[field] == sum(f == field for f, _ in relations)
    assert classes["choice"] == sum(len(dep) for _, dep in relations if len(dep) > 1) > 0


# --- the command line ----------------------------------------------------------------------

PLAN = [
    "plan",
    "--config",
    str(EXAMPLE_CONFIG),
    "--target",
    ",".join(EXAMPLE_TARGETS),
    "--rocm-version",
    "8.2.0",
    "-q",
]


def test_pictures_are_of_one_package_unless_all():
    result = CliRunner().invoke(cli, [*PLAN, "--format", "dot"])
    assert result.exit_code == 1
    assert result.output == (
        "error: --format dot draws one package's family: give --package NAME "
        "(a base or a planned name), or --all for the whole release\n"
    )
    whole = CliRunner().invoke(cli, [*PLAN, "--format", "dot", "--all"])
    one = CliRunner().invoke(cli, [*PLAN, "--format", "dot", "--package", "amdrocm-blas"])
    assert whole.exit_code == one.exit_code == 0
    assert whole.output.count("subgraph") == 1 + len(example_bases()) and len(one.output) < len(
        whole.output
    )
    assert one.output.count('subgraph "cluster_amdrocm') == 1


def example_bases() -> set[str]:
    return {p["Package"] for p in json.loads(EXAMPLE_CONFIG.read_text())} - {"amdrocm-openmp"}


def test_svg_and_png_drawn_by_dot(tmp_path):
    svg = CliRunner().invoke(cli, [*PLAN, "--format", "svg", "--package", "amdrocm-llvm"])
    assert svg.exit_code == 0, svg.output
    root = ET.fromstring(svg.output.split("\n", 3)[3])  # after the XML prolog and DOCTYPE
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"amdrocm-llvm8.2", "one of", "Recommends"} <= texts
    png = tmp_path / "llvm.png"
    result = CliRunner().invoke(cli, [*PLAN, "--format", "png", "--package", "llvm", "-o", png])
    assert result.exit_code == 1 and "'llvm' is not in the plan" in result.output
    result = CliRunner().invoke(
        cli, [*PLAN, "--format", "png", "--package", "amdrocm-llvm", "-o", str(png)]
    )
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [png]  # nothing partial left


def test_missing_dot_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(cli, [*PLAN, "--format", "svg", "--package", "amdrocm-llvm"])
    assert result.exit_code == 1
    assert result.output.startswith(
        "error: drawing svg needs Graphviz's dot, which is not installed"
    )
    # The source needs no Graphviz.
    assert CliRunner().invoke(cli, [*PLAN, "--format", "dot", "--all"]).exit_code == 0


def test_all_is_only_for_pictures():
    result = CliRunner().invoke(cli, [*PLAN, "--format", "tree", "--all"])
    assert result.exit_code == 1
    assert (
        result.output == "error: --all is for the pictures (--format dot, svg or png), not tree\n"
    )


def test_core_leaves_boxed_by_arch(example_plan):
    focus, members = views.family(example_plan, "amdrocm-core")
    graph = json.loads(graphviz.render(views.dot(example_plan, members, DEB, focus), "json"))
    objects = graph["objects"]
    boxes = {
        o["name"]: {objects[i]["name"] for i in o.get("nodes", [])}
        for o in objects
        if o["name"].startswith("cluster_leaves_")
    }
    assert set(boxes) == {f"cluster_leaves_{arch}" for arch in EXAMPLE_TARGETS}
    assert boxes["cluster_leaves_gfx942"] == {
        r.target
        for dep in example_plan.get("amdrocm-core8.2-gfx942").deb.depends
        for r in dep
        if r.target and example_plan.by_key[r.target].arch == "gfx942"
    }
    assert "amdrocm-llvm8.2" not in set().union(*boxes.values())


# --- TheRock's own package.json, drawn whole -------------------------------------------------

THEROCK_TARGETS = "gfx90a,gfx942,gfx950,gfx1100,gfx1151,gfx1201"


def therock_plan(targets: str, *extra: str) -> Result:
    config = shared_path("fixtures", "therock", "package.json")
    args = ["plan", "--config", str(config), "--target", targets, "--rocm-version", "8.2.0"]
    return CliRunner().invoke(cli, [*args, "-q", *extra])


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_therock_whole_release_draws_as_svg(fmt):
    """dot (Graphviz 2.43, as Debian 12 ships it) refused this release, "trouble in
    init_rank", ranking its clusters one by one; newrank ranks the graph at once."""
    result = therock_plan(THEROCK_TARGETS, "--format", "svg", "--all", "--pkg-type", fmt.name)
    assert result.exit_code == 0, result.output[:500]
    root = ET.fromstring(result.stdout.split("\n", 3)[3])  # after the XML prolog and DOCTYPE
    svg = "{http://www.w3.org/2000/svg}"
    drawn = {g.findtext(f"{svg}title") for g in root.iter(f"{svg}g") if g.get("class") == "node"}
    planned = json.loads(therock_plan(THEROCK_TARGETS, "--format", "json").stdout)
    keys = {p["name"] for p in planned["packages"]}
    assert len(keys) == 322 and keys <= drawn


def test_therock_whole_release_draws_as_png(tmp_path):
    png = tmp_path / "therock.png"
    result = therock_plan("gfx942", "--format", "png", "--all", "-o", str(png))
    assert result.exit_code == 0, result.output[:500]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width > 1000 and height > 1000
    assert list(tmp_path.iterdir()) == [png]


def test_each_arch_sdk_meta_is_drawn_beside_its_own_core_dev_meta():
    """TheRock's amdrocm-core-sdk, targets given in reverse: each arch's SDK meta and the
    core-dev meta it depends on share a dot group named after the arch, declared in
    processor order; dot (the referee) then draws each pair in one row and the rows top
    to bottom in processor order. Before, dot ordered them by edge crossings: gfx942,
    gfx950, gfx90a, gfx1201, ... with each core-dev meta rows away from its SDK meta."""
    arches = THEROCK_TARGETS.split(",")
    result = therock_plan(
        ",".join(reversed(arches)), "--format", "dot", "--package", "amdrocm-core-sdk"
    )
    assert result.exit_code == 0, result.output
    source = result.stdout
    sdk = [f"amdrocm-core-sdk8.2-{arch}" for arch in arches]
    dev = [f"amdrocm-core-devel8.2-{arch}" for arch in arches]
    for names in (sdk, dev):
        declared = [source.index(f'"{name}" [label=') for name in names]
        assert declared == sorted(declared)
        for name, arch in zip(names, arches, strict=True):
            (line,) = [ln for ln in source.splitlines() if f'"{name}" [label=' in ln]
            assert line.endswith(f', group="{arch}"];'), line
    nodes, _ = laid_out(source)

    def height(name: str) -> float:  # rankdir=LR: a row is a height; pos is "x,y" in points
        return float(nodes[name]["pos"].split(",")[1])

    for pair in zip(sdk, dev, strict=True):
        assert abs(height(pair[0]) - height(pair[1])) < 20, f"{pair}: not side by side"
    for column in (sdk, dev):
        heights = [height(name) for name in column]
        assert heights == sorted(heights, reverse=True), "not top to bottom in processor order"
