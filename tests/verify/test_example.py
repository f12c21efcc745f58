"""libsolv on the published example release: the transactions seed 000 promises."""

from __future__ import annotations

import gzip

import pytest

from gfxpack.formats import FORMATS
from gfxpack.verify import verify
from gfxpack.verify.rules import arch_of
from gfxpack.views import reachable
from tests.conftest import EXAMPLE_TARGETS


def names(release, root: str, fmt: str) -> set[str]:
    return {p.relations(fmt).name for p in reachable(release.plan, root, fmt)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_gfx942_set_is_what_the_plan_reaches(example_repo, example_release, fmt):
    (report,) = verify(example_repo, ["amdrocm-core8.2-gfx942"], fmt)
    assert report.ok, report.violations
    installed = {s.name for s in report.resolution.steps}
    assert installed == names(example_release, "amdrocm-core8.2-gfx942", fmt)
    assert {arch_of(n) for n in installed} == {None, "gfx942"}
    assert {s.action for s in report.resolution.steps} == {"install"}
    assert report.packages == len(example_release.files(fmt))


@pytest.mark.parametrize("fmt", FORMATS)
def test_amdrocm_core_pulls_every_arch(example_repo, example_release, fmt):
    (report,) = verify(example_repo, ["amdrocm-core"], fmt)
    assert report.ok, report.violations
    installed = {s.name for s in report.resolution.steps}
    assert installed == names(example_release, "amdrocm-core", fmt)
    assert {f"amdrocm-core8.2-{t}" for t in EXAMPLE_TARGETS} <= installed
    assert {arch_of(n) for n in installed} == {None, *EXAMPLE_TARGETS}
    # Every rule was held to many resolutions, not vacuously passed.
    assert report.checked["installable"] == report.packages + 1
    assert report.checked["cross-arch"] >= 3 * len(EXAMPLE_TARGETS)
    assert report.checked["arch-set"] >= 7


def test_both_formats_resolve_to_the_same_packages(example_repo):
    deb, rpm = verify(example_repo, ["amdrocm-blas", "amdrocm-fft8.2-gfx950"])
    spelled = {s.name.replace("-dev", "-devel") for s in deb.resolution.steps}
    assert spelled == {s.name for s in rpm.resolution.steps}


def test_contents_index_lists_what_the_packages_install(example_repo, example_release):
    """The file-conflict rule reads Contents-amd64.gz; it must list every routed path."""
    contents = gzip.decompress(
        (example_repo / "apt/dists/stable/main/Contents-amd64.gz").read_bytes()
    ).decode()
    listed = {line.rsplit(None, 1)[0].strip() for line in contents.splitlines()}
    routed = {
        e.path.lstrip("/")
        for entries in example_release.routed.values()
        for e in entries
        if e.kind != "dir"
    }
    assert routed <= listed


def test_verify_in_a_pipeline_imports_no_progress_bar(example_repo):
    """Without a terminal there is no bar to draw, so rich is never imported."""
    from tests.test_cli_startup import imported

    names = imported("verify", "--repo", str(example_repo), "--install", "amdrocm-core8.2-gfx942")
    assert "solv" in names  # it did resolve
    assert "rich" not in names
