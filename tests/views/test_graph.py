"""Graphviz source (views/graph.py): packages and arch boxes in processor order
(Decision 16)."""

from __future__ import annotations

from tests.views.helpers import plan_cli, positions


def test_dot_draws_packages_and_arch_boxes_in_processor_order():
    source = plan_cli("--format", "dot", "--package", "amdrocm-core")
    nodes = positions(source, '"amdrocm-core8.2-{}" [label=')
    assert nodes == sorted(nodes)
    boxes = positions(source, 'subgraph "cluster_leaves_{}"')
    assert boxes == sorted(boxes)
