"""The counts of ``gfxpack plan`` (views/summary.py)."""

from __future__ import annotations

from gfxpack import views
from gfxpack.formats import FORMATS
from gfxpack.plan import Kind


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
