"""Plan invariants (plan/checks.py): each violation an error naming the packages."""

from __future__ import annotations

import dataclasses

import pytest

from gfxpack.plan import PlanError, Reason, Req, Severity, plan
from gfxpack.plan.checks import check_plan, cross_arch_edges, cycles, dangling_edges
from tests.plan.test_rules import TARGETS, depends, pkg, specs


def plan_error(*entries, targets=TARGETS) -> list[str]:
    with pytest.raises(PlanError) as caught:
        plan(specs(*entries), targets, "8.2.0")
    return str(caught.value).splitlines()


def test_a_valid_plan_passes_every_check(seed_plan):
    assert check_plan(seed_plan) == []


def test_undefined_dependency_in_rpm_and_recommends():
    assert plan_error(pkg("amdrocm-a", RPMRequires=["amdrocm-b"], DEBRecommends=["amdrocm-c"])) == [
        "amdrocm-a (/0/DEBRecommends/0) depends on amdrocm-c, which package.json does not define",
        "amdrocm-a (/0/RPMRequires/0) depends on amdrocm-b, which package.json does not define",
    ]


def cycle_warnings(*entries, targets=TARGETS) -> list[str]:
    """The plan succeeds (cycles are allowed); its cycle warnings, without the rationale."""
    release_plan = plan(specs(*entries), targets, "8.2.0")
    return [
        note.message.removesuffix(": dpkg and rpm install the packages of a cycle together")
        for note in release_plan.notes
        if note.severity is Severity.WARNING and note.message.startswith("dependency cycle")
    ]


def test_dependency_cycle_is_a_warning_naming_the_path():
    assert cycle_warnings(
        pkg("amdrocm-a", ["amdrocm-b"]),
        pkg("amdrocm-b", ["amdrocm-c"]),
        pkg("amdrocm-c", ["amdrocm-a"]),
    ) == ["dependency cycle: amdrocm-a8.2 → amdrocm-b8.2 → amdrocm-c8.2 → amdrocm-a8.2"]


def test_cycle_warning_shows_the_shortest_path():
    """a → b → c → a and a → c → a share a component: the two-package cycle is shown."""
    assert cycle_warnings(
        pkg("amdrocm-a", ["amdrocm-b", "amdrocm-c"]),
        pkg("amdrocm-b", ["amdrocm-c"]),
        pkg("amdrocm-c", ["amdrocm-a"]),
    ) == ["dependency cycle: amdrocm-a8.2 → amdrocm-c8.2 → amdrocm-a8.2"]


def test_self_dependency_is_a_cycle():
    assert cycle_warnings(pkg("amdrocm-a", ["amdrocm-a"])) == [
        "dependency cycle: amdrocm-a8.2 → amdrocm-a8.2"
    ]


def test_cycle_through_gfxarch_hosts():
    warnings = cycle_warnings(
        pkg("amdrocm-a", ["amdrocm-b"], gfx=True), pkg("amdrocm-b", ["amdrocm-a"], gfx=True)
    )
    assert "dependency cycle: amdrocm-a-host8.2 → amdrocm-b-host8.2 → amdrocm-a-host8.2" in warnings
    assert (
        "dependency cycle: amdrocm-a8.2-gfx1100 → amdrocm-b8.2-gfx1100 → amdrocm-a8.2-gfx1100"
        in warnings
    )
    assert len(warnings) == 1 + len(TARGETS)  # the hosts, then one per arch


def test_empty_aggregator():
    assert plan_error(pkg("amdrocm-empty", meta=True)) == [
        "amdrocm-empty8.2 (versioned meta) aggregates nothing in DEB: a metapackage needs at least "
        "one dependency (check DEBDepends of amdrocm-empty)",
        "amdrocm-empty8.2 (versioned meta) aggregates nothing in RPM: a metapackage needs at least "
        "one dependency (check RPMRequires of amdrocm-empty)",
    ]


def test_aggregator_empty_in_one_format_only():
    errors = plan_error(
        pkg("amdrocm-a"), pkg("amdrocm-m", ["amdrocm-a"], meta=True, RPMRequires=[])
    )
    assert errors == [
        "amdrocm-m8.2 (versioned meta) aggregates nothing in RPM: a metapackage needs at least one "
        "dependency (check RPMRequires of amdrocm-m)"
    ]


def test_two_bases_producing_one_name():
    errors = plan_error(pkg("amdrocm-x", gfx=True), pkg("amdrocm-x-host"))
    assert "amdrocm-x and amdrocm-x-host both produce the DEB package amdrocm-x-host8.2" in errors
    assert "amdrocm-x and amdrocm-x-host both produce the RPM package amdrocm-x-host8.2" in errors


def test_dev_and_devel_bases_collide_in_deb_only():
    assert plan_error(pkg("amdrocm-x-dev"), pkg("amdrocm-x-devel")) == [
        "amdrocm-x-dev and amdrocm-x-devel both produce the DEB package amdrocm-x-dev8.2",
        "amdrocm-x-dev and amdrocm-x-devel both produce the DEB package amdrocm-x-dev",
    ]


def _with_extra_edge(release_plan, source: str, target: str):
    """The plan with one more Depends edge: the rules never make a bad one, so the
    checks are fed one directly."""
    package = release_plan.get(source)
    extra = (Req(target, target=target, op=">=", version="8.2.0-1", reason=Reason.SAME_ARCH),)
    deb = dataclasses.replace(package.deb, depends=(*package.deb.depends, extra))
    changed = dataclasses.replace(package, deb=deb)
    packages = tuple(changed if p.key == source else p for p in release_plan.packages)
    return dataclasses.replace(release_plan, packages=packages)


def test_cross_arch_edge_from_a_device(seed_plan):
    bad = _with_extra_edge(seed_plan, "amdrocm-blas8.2-gfx942", "amdrocm-solver8.2-gfx1100")
    assert [str(c) for c in cross_arch_edges(bad)] == [
        "amdrocm-blas8.2-gfx942 (device, gfx942) depends on amdrocm-solver8.2-gfx1100, "
        "a package of another arch (gfx1100)"
    ]


def test_cross_arch_edge_from_an_arch_meta(seed_plan):
    bad = _with_extra_edge(seed_plan, "amdrocm-core8.2-gfx1100", "amdrocm-fft8.2-gfx942")
    (cause,) = cross_arch_edges(bad)
    assert cause.packages == ("amdrocm-core8.2-gfx1100", "amdrocm-fft8.2-gfx942")


def test_edges_into_arch_neutral_packages_are_fine(seed_plan):
    ok = _with_extra_edge(seed_plan, "amdrocm-blas8.2-gfx942", "amdrocm-runtime8.2")
    assert list(cross_arch_edges(ok)) == []


def test_dangling_edge(seed_plan):
    bad = _with_extra_edge(seed_plan, "amdrocm-blas-host8.2", "amdrocm-nowhere8.2")
    assert [str(c) for c in dangling_edges(bad)] == [
        "amdrocm-blas-host8.2 depends on amdrocm-nowhere8.2, which is not in the plan"
    ]


def test_cycle_check_on_a_long_chain_is_iterative(seed_plan):
    """A 5,000-package chain with a back edge: no recursion limit, one cycle."""
    entries = [pkg(f"amdrocm-p{i}", [f"amdrocm-p{i + 1}"]) for i in range(4999)]
    entries.append(pkg("amdrocm-p4999", ["amdrocm-p0"]))
    (line,) = cycle_warnings(*entries)
    assert line.startswith("dependency cycle: amdrocm-p08.2 → amdrocm-p18.2 → ")
    assert line.count("→") == 5000


def test_cycles_are_reported_once_across_formats():
    assert (
        len(cycle_warnings(pkg("amdrocm-a", ["amdrocm-b"]), pkg("amdrocm-b", ["amdrocm-a"]))) == 1
    )


def test_cycles_function_finds_none_in_seed(seed_plan):
    assert list(cycles(seed_plan)) == []


def cross_arch_warnings(*entries) -> list[str]:
    release_plan = plan(specs(*entries), TARGETS, "8.2.0")
    return [
        note.message
        for note in release_plan.notes
        if note.severity is Severity.WARNING and " pulls in " in note.message
    ]


def test_a_longer_way_to_another_arch_is_a_warning_with_its_path():
    """Each edge is allowed (a per-arch SDK meta -> a Gfxarch=False metapackage -> the
    library's full meta -> every arch), yet the SDK of one arch installs every arch's code."""
    (warning,) = cross_arch_warnings(
        pkg("amdrocm-blas", gfx=True),
        pkg("amdrocm-bundle", ["amdrocm-blas"], meta=True),
        pkg("amdrocm-sdk", ["amdrocm-bundle"], gfx=True, meta=True),
    )
    assert warning.startswith(
        "amdrocm-sdk8.2-gfx942 (gfx942) pulls in amdrocm-blas8.2-gfx1100 of gfx1100: "
        "amdrocm-sdk8.2-gfx942 → amdrocm-bundle8.2 → amdrocm-blas8.2 → "
        "amdrocm-blas8.2-gfx1100 (likewise for gfx1100); "
    )


def test_a_per_arch_sdk_through_devel_packages_warns_of_nothing():
    """Decision 15: a -devel depends on the host package of a gfxarch library and a devel
    meta has arch metas, so a per-arch SDK reaches no other arch (it did under the full
    meta rule of Decision 2: sdk-gfx942 -> blas-devel -> blas8.2 -> blas8.2-gfx1100)."""
    entries = [
        pkg("amdrocm-blas", gfx=True),
        pkg("amdrocm-blas-devel", ["amdrocm-blas"]),
        pkg("amdrocm-test", ["amdrocm-blas-devel"], gfx=True),
        pkg("amdrocm-core", ["amdrocm-blas"], gfx=True, meta=True),
        pkg("amdrocm-core-devel", ["amdrocm-blas-devel"], gfx=True, meta=True),
        pkg("amdrocm-sdk", ["amdrocm-core-devel", "amdrocm-blas-devel"], gfx=True, meta=True),
    ]
    assert cross_arch_warnings(*entries) == []
    release_plan = plan(specs(*entries), TARGETS, "8.2.0")
    assert depends(release_plan, "amdrocm-sdk8.2-gfx942") == [
        "amdrocm-core-dev8.2-gfx942 (= 8.2.0-1)",
        "amdrocm-blas-dev8.2 (= 8.2.0-1)",
    ]
    assert depends(release_plan, "amdrocm-blas-dev8.2") == ["amdrocm-blas-host8.2 (>= 8.2.0-1)"]


def test_an_sdk_of_arch_neutral_parts_warns_of_nothing():
    assert not cross_arch_warnings(
        pkg("amdrocm-blas", gfx=True),
        pkg("amdrocm-tools"),
        pkg("amdrocm-sdk", ["amdrocm-blas", "amdrocm-tools"], gfx=True, meta=True),
    )
