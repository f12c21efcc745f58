"""Renderings of a ReleasePlan, one module per kind of view:

- :mod:`~gfxpack.views.plan_json`: the plan's JSON contract, written and read back;
- :mod:`~gfxpack.views.text`: dependency trees and Markdown tables;
- :mod:`~gfxpack.views.graph`: Graphviz source, one drawing convention;
- :mod:`~gfxpack.views.summary`: the counts of ``gfxpack plan``;
- :mod:`~gfxpack.views.selection`: which packages a view shows;
- :mod:`~gfxpack.views.json_output`: how every ``--json`` output is printed.

The public names are re-exported here: ``views.tree(...)``, ``views.dot(...)``.
"""

from __future__ import annotations

from gfxpack.views.graph import EDGE_STYLES, dot, legend
from gfxpack.views.json_output import dumps
from gfxpack.views.plan_json import InvalidPlanJson, plan_as_dict, plan_from_dict
from gfxpack.views.selection import family, reachable
from gfxpack.views.summary import KindCount, PlanSummary, summary
from gfxpack.views.text import markdown_table, table, tables, tree

__all__ = [
    "EDGE_STYLES",
    "InvalidPlanJson",
    "KindCount",
    "PlanSummary",
    "dot",
    "dumps",
    "family",
    "legend",
    "markdown_table",
    "plan_as_dict",
    "plan_from_dict",
    "reachable",
    "summary",
    "table",
    "tables",
    "tree",
]
