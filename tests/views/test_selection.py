"""Which packages a view shows (views/selection.py): what one package reaches."""

from __future__ import annotations

from gfxpack import views


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
