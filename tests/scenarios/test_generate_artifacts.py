"""examples/generate_artifacts.py: a tree generated for a config builds what plan says.

``gfxpack plan --config CONFIG --target T`` (no artifacts) lists packages; the tree the
generator makes for CONFIG and T is what ``gfxpack build`` then reads. The two lists
are the same but for the one difference the generator makes on purpose and its
docstring states: amdrocm-dnn has no gfx950 build (examples/package.json only, whose
targets include gfx950). Checked per format on the session's builds (tests/conftest.py),
for examples/package.json and for TheRock's package.json (skipped without ../shared).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import FORMATS
from tests.conftest import EXAMPLE_CONFIG, BuiltRelease, load_generator, shared_path

pytestmark = pytest.mark.slow  # make check skips it: a whole artifact tree generated and built

# What plan lists that the example tree does not build: the generator's NO_BUILD.
EXAMPLE_NOT_BUILT = {"amdrocm-dnn8.2-gfx950"}


def planned(config: Path, targets: tuple[str, ...]) -> dict[str, set[str]]:
    """Format -> the package names ``gfxpack plan --format json`` lists."""
    result = CliRunner().invoke(
        cli,
        ["plan", "--config", str(config), "--target", ",".join(targets),
         "--rocm-version", "8.2.0", "--format", "json", "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    packages = json.loads(result.stdout)["packages"]
    return {fmt.name: {p[fmt.name]["name"] for p in packages} for fmt in FORMATS}


def built(release: BuiltRelease) -> dict[str, set[str]]:
    """Format -> the package names of the files the build wrote (its index.json)."""
    index = json.loads((release.out / "index.json").read_text())
    by_key = {p.key: p for p in release.plan.packages}
    names: dict[str, set[str]] = {fmt.name: set() for fmt in FORMATS}
    for entry in index["files"]:
        fmt = next(f for f in FORMATS if f.name == entry["format"])
        names[fmt.name].add(by_key[entry["package"]].name(fmt))
    return names


def test_the_generator_states_the_example_difference():
    generator = load_generator()
    assert {("amdrocm-dnn", "gfx950")} == generator.NO_BUILD
    assert "amdrocm-dnn has no gfx950 build" in " ".join(generator.__doc__.split())


def test_the_example_tree_builds_what_plan_lists_but_the_stated_gap(example_release):
    targets = example_release.tree.index.targets()
    assert targets == ("gfx942", "gfx950", "gfx1100")
    plan_names, build_names = planned(EXAMPLE_CONFIG, targets), built(example_release)
    for fmt in FORMATS:  # a device package is spelled alike in both formats
        assert plan_names[fmt.name] - build_names[fmt.name] == EXAMPLE_NOT_BUILT, fmt
        assert build_names[fmt.name] - plan_names[fmt.name] == set(), fmt
    assert len(build_names["deb"]) == len(build_names["rpm"]) > 80


def test_therocks_tree_builds_exactly_what_plan_lists(therock_release):
    config = shared_path("fixtures", "therock", "package.json")
    targets = therock_release.tree.index.targets()
    assert targets == ("gfx90a", "gfx942", "gfx1100")
    plan_names, build_names = planned(config, targets), built(therock_release)
    assert plan_names == build_names
    # The test programs' device code has per-arch directories too (TheRock splits them):
    # without them the Gfxarch test packages would build as non-gfxarch ones.
    assert {"amdrocm-blas-test8.2-gfx942", "amdrocm-blas-test-host8.2"} <= build_names["deb"]
