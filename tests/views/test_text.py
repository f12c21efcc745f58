"""Dependency trees and Markdown tables (views/text.py)."""

from __future__ import annotations

from gfxpack import views
from gfxpack.formats import DEB, RPM
from gfxpack.plan import Kind, plan
from tests.plan.test_debug import specs as debug_specs
from tests.views.helpers import ORDER, plan_cli, positions


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


# --- Decision 16: targets in processor order everywhere ------------------------------------


def test_plan_text_lists_targets_in_processor_order():
    summary = plan_cli()
    assert f"targets {', '.join(ORDER)}\n" in summary
    tree = plan_cli("--format", "tree", "--package", "amdrocm-blas")
    devices = positions(tree, "amdrocm-blas8.2-{} (= 8.2.0-1) (device)")
    assert devices == sorted(devices)
    table = plan_cli("--format", "table", "--package", "amdrocm-core")
    rows = positions(table, "| `amdrocm-core8.2-{}`")
    assert rows == sorted(rows)


def test_the_dbg_component_is_drawn_into_the_debug_package_alone():
    release = plan(debug_specs(), ["gfx942"], "8.2.0")
    host = views.tree(release, "amdrocm-blas-host8.2")
    assert "from blas_lib_generic into /opt/rocm/core-8.2/" in host
    debug = views.tree(release, "amdrocm-blas-host8.2-dbgsym")
    assert "[Files: debug symbols]" in debug
    assert "from blas_dbg_generic into /usr/lib/debug/" in debug
