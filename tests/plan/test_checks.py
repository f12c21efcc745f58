"""Plan invariants (plan/checks.py): each violation an error naming the packages.

The scenarios that break one through package.json are cases in tests/plan/cases/."""

from __future__ import annotations

import dataclasses

from gfxpack.plan import Reason, Req, Severity, plan
from gfxpack.plan.checks import check_plan, cross_arch_edges, cycles, dangling_edges
from tests.plan.test_rules import TARGETS, pkg, specs


def test_a_valid_plan_passes_every_check(seed_plan):
    assert check_plan(seed_plan) == []


def cycle_warnings(*entries, targets=TARGETS) -> list[str]:
    """The plan succeeds (cycles are allowed); its cycle warnings, without the rationale."""
    release_plan = plan(specs(*entries), targets, "8.2.0")
    return [
        note.message.removesuffix(": dpkg and rpm install the packages of a cycle together")
        for note in release_plan.notes
        if note.severity is Severity.WARNING and note.message.startswith("dependency cycle")
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


def test_cycles_function_finds_none_in_seed(seed_plan):
    assert list(cycles(seed_plan)) == []
