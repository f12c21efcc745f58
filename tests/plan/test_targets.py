"""Targets are checked: LLVM's AMDGPU processors, features, generic and family targets;
a typo gets a suggestion, and a target the artifacts tree lacks is refused."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.plan import ArtifactIndex
from gfxpack.plan.targets import (
    GENERIC_PROCESSORS,
    PROCESSORS,
    check_target,
    sort_targets,
    target_order,
)
from tests.conftest import SEED_CONFIG, build_example_args


@pytest.mark.parametrize(
    "target",
    [
        "gfx90a",
        "gfx942",
        "gfx950",
        "gfx1100",
        "gfx1151",
        "gfx1201",
        "gfx942:xnack+",
        "gfx90a:sramecc-:xnack+",
        "gfx11-generic",
        "gfx9-4-generic",
        "gfx94X-dcgpu",
        "gfx110X-all",
        "gfx1250-strict",
    ],
)
def test_known_targets_pass(target):
    assert check_target(target) is None


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("gfx94", "target 'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
        (
            "gfx1102x",
            "target 'gfx1102x' is not an AMDGPU processor LLVM knows (did you mean gfx1102?)",
        ),
        (
            "gfx942:xnack",
            "target 'gfx942:xnack': 'xnack' is not a target feature (expected "
            "xnack+, xnack-, sramecc+ or sramecc-, each at most once)",
        ),
        (
            "gfx942:tgsplit+",
            "target 'gfx942:tgsplit+': 'tgsplit+' is not a target feature (expected "
            "xnack+, xnack-, sramecc+ or sramecc-, each at most once)",
        ),
        ("GFX942", "target 'GFX942': processor names are lowercase (gfx942)"),
        (
            "gfx99X-dcgpu",
            "target 'gfx99X-dcgpu' is not an AMDGPU processor LLVM knows (did you mean gfx909?)",
        ),
    ],
)
def test_unknown_targets_are_refused_with_a_suggestion(target, message):
    assert check_target(target) == message


def test_table_holds_the_issue_targets_and_not_removed_ones():
    assert {"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201"} <= PROCESSORS
    assert "gfx940" not in PROCESSORS and "gfx941" not in PROCESSORS  # removed from LLVM
    assert all(name.endswith("-generic") for name in GENERIC_PROCESSORS)


def test_cli_plan_typo_is_one_line_even_quiet():
    result = CliRunner().invoke(
        cli,
        [
            "plan",
            "--config",
            str(SEED_CONFIG),
            "--target",
            "gfx94",
            "--rocm-version",
            "8.2.0",
            "-q",
        ],
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: target 'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)\n"
    )


def test_build_target_without_artifacts_is_an_error_listing_the_trees(example_artifacts, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        build_example_args(example_artifacts, out, "--target", "gfx942,gfx1201", "-q"),
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "error: target gfx1201: the artifacts tree has no per-arch artifacts for it "
        "(its targets: gfx942, gfx950, gfx1100)\n"
    )
    assert not out.exists()


# --- Decision 16: processor order ------------------------------------------------------


def test_targets_sort_by_processor_not_by_string():
    given = ["gfx1201", "gfx90a", "gfx1151", "gfx942", "gfx1100", "gfx950"]
    assert sorted(given) != sort_targets(given)  # string order puts gfx1100 first
    assert sort_targets(given) == ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201"]


def test_generic_family_and_feature_targets_follow_their_processors():
    given = [
        "gfx12-generic",
        "gfx9-generic",
        "gfx1100",
        "gfx11-generic",
        "gfx94X-dcgpu",
        "gfx9-4-generic",
        "gfx950",
        "gfx942:xnack+",
        "gfx942",
        "gfx908",
        "gfx1201",
        "gfx110X-all",
    ]
    assert sort_targets(given) == [
        "gfx908",
        "gfx942",
        "gfx942:xnack+",
        "gfx94X-dcgpu",  # every gfx94N
        "gfx9-4-generic",  # gfx9.4 processors, then gfx9.5
        "gfx950",
        "gfx9-generic",
        "gfx1100",
        "gfx110X-all",
        "gfx11-generic",
        "gfx1201",
        "gfx12-generic",
    ]


def test_every_processor_sorts_by_its_llvm_number_and_names_that_are_no_target_last():
    ordered = sort_targets(PROCESSORS | GENERIC_PROCESSORS | {"banana", "gfx"})
    assert ordered[-2:] == ["banana", "gfx"]
    # A variant target (gfx1250-strict) shares its owner's number and sorts after it.
    numbers = [target_order(t)[1:6] for t in ordered if t in PROCESSORS]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(PROCESSORS)
    assert target_order("gfx90a")[1:4] == (9, 0, 10) and target_order("gfx1151")[1:4] == (11, 5, 1)
    # Arch suffixes (lowercased) sort as their targets do.
    assert sort_targets(["gfx110x", "gfx94x"]) == ["gfx94x", "gfx110x"]


def test_the_artifacts_tree_lists_its_targets_in_processor_order():
    """The plan's own order is the case the_plan_puts_targets_in_processor_order_..."""
    index = ArtifactIndex(["a_lib_gfx1100", "a_lib_gfx90a:xnack+", "a_lib_gfx942"])
    assert index.targets() == ("gfx90a", "gfx942", "gfx1100")
