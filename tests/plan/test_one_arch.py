"""Developers install one arch (spec Decision 15): what a per-arch SDK metapackage pulls
in, followed through the plan's dependencies, holds no package of another arch.

On TheRock's own package.json (skipped without ../shared) the SDK is
amdrocm-core-sdk, over the devel meta amdrocm-core-devel; the example's per-arch
devel meta is amdrocm-core-devel itself.
"""

from __future__ import annotations

import pytest

from gfxpack import views
from gfxpack.config import load_config
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.plan import Kind, ReleasePlan, plan
from tests.conftest import EXAMPLE_CONFIG, EXAMPLE_TARGETS, shared_path

THEROCK_TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201")


@pytest.fixture(scope="module")
def therock_plan() -> ReleasePlan:
    config = load_config(shared_path("fixtures", "therock", "package.json"))
    return plan(config.packages, THEROCK_TARGETS, "8.2.0")


@pytest.fixture(scope="module")
def example_plan() -> ReleasePlan:
    return plan(load_config(EXAMPLE_CONFIG).packages, EXAMPLE_TARGETS, "8.2.0")


def arches_pulled(release_plan: ReleasePlan, name: str, fmt=DEB) -> set[str]:
    """The GPU arches of every package ``name`` reaches (Depends, Recommends, Suggests)."""
    return {p.arch for p in views.reachable(release_plan, name, fmt) if p.arch is not None}


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_therock_core_sdk_of_one_arch_pulls_only_that_arch(therock_plan, fmt):
    for arch in THEROCK_TARGETS:
        sdk = f"amdrocm-core-sdk8.2-{arch}"
        assert arches_pulled(therock_plan, sdk, fmt) == {arch}, sdk
    reached = {p.key for p in views.reachable(therock_plan, "amdrocm-core-sdk8.2-gfx942", fmt)}
    # The developer still gets the headers, the host libraries and gfx942's device code.
    assert {
        "amdrocm-core-devel8.2-gfx942",
        "amdrocm-core8.2-gfx942",
        "amdrocm-blas-devel8.2",
        "amdrocm-blas-host8.2",
        "amdrocm-blas8.2-gfx942",
    } <= reached
    assert "amdrocm-blas8.2" not in reached  # the full meta: every arch


def test_therock_devel_packages_depend_on_host_packages(therock_plan):
    assert [DEB.render(dep) for dep in therock_plan.get("amdrocm-fft-devel8.2").deb.depends] == [
        "libc6",
        "amdrocm-fft-host8.2 (>= 8.2.0-1)",
    ]
    devels = [
        p for p in therock_plan.packages if p.base.endswith("-devel") and p.kind is Kind.VERSIONED
    ]
    assert len(devels) == 19  # every non-meta -devel base but amdrocm-ck-devel (disabled)
    for package in devels:
        for req in package.rpm.edges():
            kind = therock_plan.by_key[req.target].kind
            assert kind in (Kind.HOST, Kind.VERSIONED, Kind.VERSIONED_META), (package.key, req)


def test_every_arch_specific_package_of_therock_pulls_only_its_arch(therock_plan):
    specific = [p for p in therock_plan.packages if p.arch is not None]
    assert len(specific) > 100
    for package in specific:
        assert arches_pulled(therock_plan, package.key, RPM) == {package.arch}, package.key


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_example_devel_meta_of_one_arch_pulls_only_that_arch(example_plan, fmt):
    for arch in EXAMPLE_TARGETS:
        devel = example_plan.get(f"amdrocm-core-devel8.2-{arch}")
        assert devel is not None and devel.kind is Kind.ARCH_META
        assert arches_pulled(example_plan, devel.key, fmt) == {arch}
    assert example_plan.get("amdrocm-core-dev8.2-gfx942").name(DEB) == "amdrocm-core-dev8.2-gfx942"
    # The generic devel meta is every arch's, as the generic amdrocm-core8.2 is.
    assert arches_pulled(example_plan, "amdrocm-core-devel8.2") == set(EXAMPLE_TARGETS)
