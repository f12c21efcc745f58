"""verify lists the arches a leak reaches in processor order (spec Decision 16)."""

from __future__ import annotations

from gfxpack.formats import DEB
from gfxpack.verify import verify
from tests.verify.helpers import gfxarch_set, make_repo


def test_a_leak_to_several_arches_names_them_in_processor_order(tmp_path):
    packages = gfxarch_set(("gfx942", "gfx1100", "gfx950"))
    packages["amdrocm-blas8.2-gfx942"]["depends"] += ("amdrocm-blas8.2 (>= 8.2.0-1)",)
    (report,) = verify(make_repo(tmp_path, DEB, packages), ["amdrocm-blas8.2-gfx942"])
    (leak,) = [
        v
        for v in report.violations
        if v.rule == "cross-arch" and v.install == "amdrocm-blas8.2-gfx942"
    ]
    # String order would be "gfx1100, gfx950".
    assert leak.message.startswith(
        "amdrocm-blas8.2-gfx942 is for gfx942 but pulls in 2 package(s) of gfx950, gfx1100: "
    )
