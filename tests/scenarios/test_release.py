"""The release pipeline as one library call: scan, plan, route (and build)."""

from __future__ import annotations

from gfxpack.plan import Mode, PlanOptions
from gfxpack.release import ReleaseOptions, prepare
from tests.conftest import EXAMPLE_CONFIG


def test_prepare_plans_for_the_targets_the_artifacts_hold(example_artifacts):
    heard = []
    release = prepare(
        EXAMPLE_CONFIG,
        example_artifacts,
        ReleaseOptions("8.2.0"),
        on_planned=lambda plan, warnings: heard.append((plan, warnings)),
    )
    assert release.plan.targets == ("gfx942", "gfx950", "gfx1100")  # processor order
    assert heard == [(release.plan, (*release.tree.warnings, *release.config.warnings))]
    with_files = {p.key for p in release.plan.packages if p.has_files}
    assert with_files and set(release.routed) <= with_files
    assert any(release.routed[key] for key in release.routed)


def test_prepare_detects_the_mode_from_the_artifacts_when_asked(example_artifacts):
    # The example's therock_manifest.json sets KPACK_SPLIT_ARTIFACTS: detection overrides
    # the single-arch mode asked for.
    options = ReleaseOptions(
        "8.2.0", targets=("gfx942",), plan=PlanOptions(mode=Mode.SINGLE_ARCH), detect_mode=True
    )
    detected = prepare(EXAMPLE_CONFIG, example_artifacts, options)
    assert detected.tree.kpack_split
    assert (detected.plan.mode, detected.plan.targets) == (Mode.KPACK, ("gfx942",))
