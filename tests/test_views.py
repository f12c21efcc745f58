"""Renderings: the JSON contract, Graphviz checked by dot itself, trees and tables."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gfxpack import views
from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.plan import Kind, plan
from tests.conftest import EXAMPLE_CONFIG, SEED_TARGETS

CONTRACT_KINDS = {
    "versioned",
    "non-versioned",
    "host",
    "device",
    "meta",
    "generic-meta",
    "arch-meta",
    "versioned-meta",
}


@pytest.fixture(scope="module")
def example_plan(example_config):
    return plan(example_config.packages, SEED_TARGETS, "8.2.0")


def test_json_contract(seed_plan):
    data = json.loads(views.dumps(views.plan_as_dict(seed_plan)))
    assert {k: data[k] for k in ("rocm_version", "release", "mode", "targets")} == {
        "rocm_version": "8.2.0",
        "release": "1",
        "mode": "kpack",
        "targets": ["gfx942", "gfx1100"],  # processor order (Decision 16), not as given
    }
    by_name = {p["name"]: p for p in data["packages"]}
    device = by_name["amdrocm-blas8.2-gfx942"]
    assert device == {
        "name": "amdrocm-blas8.2-gfx942",
        "base": "amdrocm-blas",
        "kind": "device",
        "arch": "gfx942",
        "has_files": True,
        "deb": {
            "name": "amdrocm-blas8.2-gfx942",
            "depends": [
                "amdrocm-blas-host8.2 (= 8.2.0-1)",
                "amdrocm-solver8.2-gfx942 (>= 8.2.0-1)",
            ],
            "recommends": [],
            "suggests": [],
            "provides": [],
            "conflicts": [],
            "replaces": [],
        },
        "rpm": {
            "name": "amdrocm-blas8.2-gfx942",
            "requires": ["amdrocm-blas-host8.2 = 8.2.0-1", "amdrocm-solver8.2-gfx942 >= 8.2.0-1"],
            "recommends": [],
            "suggests": [],
            "provides": [],
            "conflicts": [],
            "obsoletes": [],
        },
    }
    assert by_name["amdrocm-blas-host8.2"]["deb"]["depends"][0] == "libc6"
    assert {p["kind"] for p in data["packages"]} == CONTRACT_KINDS
    assert by_name["amdrocm-core8.2"]["arch"] is None


def test_json_names_use_rpm_spelling(example_plan):
    data = views.plan_as_dict(example_plan)
    devel = next(p for p in data["packages"] if p["name"] == "amdrocm-blas-devel8.2")
    assert devel["base"] == "amdrocm-blas-devel"
    assert devel["deb"]["name"] == "amdrocm-blas-dev8.2"
    assert devel["kind"] in CONTRACT_KINDS
    runtime = next(p for p in data["packages"] if p["name"] == "amdrocm-runtime")
    assert runtime["rpm"]["obsoletes"] == ["hip-runtime-amd"]
    assert runtime["deb"]["replaces"] == ["hip-runtime-amd"]


def test_json_lists_notes(example_plan):
    notes = views.plan_as_dict(example_plan)["notes"]
    assert {
        "severity": "info",
        "message": "amdrocm-openmp is disabled (DisablePackaging): not built",
        "packages": ["amdrocm-openmp"],
    } in notes


def test_dot_of_one_package_is_its_closure(seed_plan):
    chosen = views.reachable(seed_plan, "amdrocm-blas8.2-gfx942")
    assert [p.key for p in chosen] == [
        "amdrocm-blas-host8.2",
        "amdrocm-blas8.2-gfx942",
        "amdrocm-runtime8.2",
        "amdrocm-solver-host8.2",
        "amdrocm-solver8.2-gfx942",
        "amdrocm-profiler-base8.2",
    ]
    source = views.dot(seed_plan, chosen)
    assert "amdrocm-blas8.2-gfx1100" not in source


def test_every_example_tree_draws(example_plan):
    """Every non-versioned root draws; each package of a family appears expanded once."""
    roots = [p for p in example_plan.packages if p.kind is Kind.NON_VERSIONED]
    assert len(roots) == len(example_plan.specs)
    for root in roots:
        drawn = views.tree(example_plan, root.key)
        for member in example_plan.family(root.base):
            pin = "" if member is root else " (= 8.2.0-1)"  # family edges pin exactly
            assert f"{member.name(DEB)}{pin} ({member.kind.label})" in drawn


def test_tree_shows_recommends_and_alternatives(example_plan):
    drawn = views.tree(example_plan, "amdrocm-llvm")
    assert "├─► libstdc++6 | libstdc++8 (alternatives)" in drawn
    assert "└─► gcc-multilib (system dependency) [recommended]" in drawn


def test_tree_of_rpm_names(example_plan):
    assert views.tree(example_plan, "amdrocm-blas-devel", RPM).startswith(
        "amdrocm-blas-devel (non-versioned)\n"
    )
    assert views.tree(example_plan, "amdrocm-blas-dev").startswith("amdrocm-blas-dev (")


def test_table_escapes_alternatives(example_plan):
    text = views.table(example_plan, "amdrocm-runtime")
    assert "libstdc++6 \\| libstdc++8" in text
    widths = {len(line) for line in text.splitlines()}
    assert len(widths) == 1  # every row padded to the same width


def test_summary_counts_each_kind_and_each_formats_relations(example_plan):
    counts = views.summary(example_plan)
    assert counts.packages == len(example_plan.packages)
    assert counts.bases == len(example_plan.specs)
    assert sum(row.packages for row in counts.kinds) == counts.packages
    hosts = next(row for row in counts.kinds if row.kind is Kind.HOST)
    of_kind = [p for p in example_plan.packages if p.kind is Kind.HOST]
    assert hosts.with_files == len(of_kind)
    assert hosts.depends == {
        fmt: sum(len(p.relations(fmt).depends) for p in of_kind) for fmt in FORMATS
    }
    devel = [p for p in example_plan.packages if p.base == "amdrocm-core-devel"]
    assert views.summary(example_plan, devel).bases == 1


# --- Decision 16: targets in processor order everywhere ------------------------------------

GIVEN = "gfx1201,gfx1100,gfx942,gfx90a"  # string order, and the reverse of processor order
ORDER = ["gfx90a", "gfx942", "gfx1100", "gfx1201"]


def positions(text: str, template: str) -> list[int]:
    return [text.index(template.format(arch)) for arch in ORDER]


def plan_cli(*args: str) -> str:
    base = ["plan", "--config", str(EXAMPLE_CONFIG), "--rocm-version", "8.2.0", "-q"]
    result = CliRunner().invoke(cli, [*base, "--target", GIVEN, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_plan_json_lists_targets_arches_and_packages_in_processor_order():
    data = json.loads(plan_cli("--format", "json"))
    assert data["targets"] == data["arches"] == ORDER
    devices = [p["arch"] for p in data["packages"] if p["base"] == "amdrocm-blas" and p["arch"]]
    assert devices == ORDER
    generic = next(p for p in data["packages"] if p["name"] == "amdrocm-core8.2")
    assert generic["deb"]["depends"] == [f"amdrocm-core8.2-{a} (= 8.2.0-1)" for a in ORDER]


def test_plan_text_lists_targets_in_processor_order():
    summary = plan_cli()
    assert f"targets {', '.join(ORDER)}\n" in summary
    tree = plan_cli("--format", "tree", "--package", "amdrocm-blas")
    devices = positions(tree, "amdrocm-blas8.2-{} (= 8.2.0-1) (device)")
    assert devices == sorted(devices)
    table = plan_cli("--format", "table", "--package", "amdrocm-core")
    rows = positions(table, "| `amdrocm-core8.2-{}`")
    assert rows == sorted(rows)


def test_dot_draws_packages_and_arch_boxes_in_processor_order():
    source = plan_cli("--format", "dot", "--package", "amdrocm-core")
    nodes = positions(source, '"amdrocm-core8.2-{}" [label=')
    assert nodes == sorted(nodes)
    boxes = positions(source, 'subgraph "cluster_leaves_{}"')
    assert boxes == sorted(boxes)
