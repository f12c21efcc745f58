"""TheRock's own package.json (../shared/fixtures/therock): planned and built.

The fixture's README says what it must give: with six targets the plan
succeeds, warning about each dependency cycle (amdrocm-base <-> amdrocm-runtime,
amdrocm-blas <-> amdrocm-solver per variant); every amdrocm edge resolves
inside the plan, no edge crosses arches, and each live base yields 2, N+3 or
N+2 packages. The build runs on an artifacts tree generated for it by
examples/generate_artifacts.py.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner

from gfxpack.artifacts import route, scan
from gfxpack.build import BuildOptions, build
from gfxpack.cli import cli
from gfxpack.config import load_config
from gfxpack.formats import DEB, FORMATS
from gfxpack.plan import Kind, Severity, plan
from gfxpack.plan.checks import cross_arch_edges, cross_arch_paths, dangling_edges
from gfxpack.plan.rules import is_package_dependency
from gfxpack.verify.rules import arch_of
from tests.conftest import load_generator, shared_path

TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201")
N = len(TARGETS)


@pytest.fixture(scope="module")
def therock_config():
    return load_config(shared_path("fixtures", "therock", "package.json"))


@pytest.fixture(scope="module")
def therock_plan(therock_config):
    return plan(therock_config.packages, TARGETS, "8.2.0")


def test_the_fixture_is_the_81_base_release(therock_config):
    specs = therock_config.packages
    assert len(specs) == 81
    assert sum(spec.disabled for spec in specs) == 4
    # The only legacy-shaped entry is disabled, so loading it warns about nothing.
    assert therock_config.warnings == ()


def test_package_counts_per_base(therock_config, therock_plan):
    """2 for a non-gfxarch base (every -devel too), N+3 gfxarch, N+2 Gfxarch=True meta."""
    counts = Counter(package.base for package in therock_plan.packages)
    live = [spec for spec in therock_config.packages if not spec.disabled]
    assert set(counts) == {spec.name for spec in live}
    expected = {}
    for spec in live:
        if (spec.is_devel and not spec.metapackage) or not spec.gfxarch:
            expected[spec.name] = 2
        elif spec.metapackage:
            expected[spec.name] = N + 2
        else:
            expected[spec.name] = N + 3
    assert dict(counts) == expected
    # 7 Gfxarch=True metapackages, amdrocm-core-devel among them (Decision 15).
    assert Counter(expected.values()) == {2: 52, N + 3: 18, N + 2: 7}
    assert counts["amdrocm-blas"] == N + 3
    assert counts["amdrocm-core"] == N + 2
    assert counts["amdrocm-core-devel"] == N + 2


def test_every_amdrocm_edge_resolves_and_none_crosses_arches(therock_plan):
    assert list(dangling_edges(therock_plan)) == []
    assert list(cross_arch_edges(therock_plan)) == []
    edges = 0
    for package in therock_plan.packages:
        for fmt in FORMATS:
            for _, deps in package.relations(fmt).dependency_lists():
                for req in (req for dep in deps for req in dep):
                    if is_package_dependency(req.name):
                        edges += 1
                        target = therock_plan.by_key[req.target]  # resolves in the plan
                        if package.arch is not None and target.arch is not None:
                            assert target.arch == package.arch, (package.key, target.key)
    assert edges > 1000


def test_each_cycle_is_one_warning_with_its_shortest_path(therock_plan):
    cycles = sorted(
        note.message.split(": dpkg")[0]
        for note in therock_plan.notes
        if note.severity is Severity.WARNING and note.message.startswith("dependency cycle")
    )
    assert cycles == sorted(
        [
            "dependency cycle: amdrocm-base8.2 → amdrocm-runtime8.2 → amdrocm-base8.2",
            "dependency cycle: amdrocm-blas-host8.2 → amdrocm-solver-host8.2 → "
            "amdrocm-blas-host8.2",
            *(
                f"dependency cycle: amdrocm-blas8.2-{arch} → amdrocm-solver8.2-{arch} → "
                f"amdrocm-blas8.2-{arch}"
                for arch in TARGETS
            ),
        ]
    )


def test_no_arch_specific_package_reaches_another_arch(therock_plan):
    """Under Decision 2, per-arch SDK metas and test packages reached every arch through
    -devel packages (amdrocm-core-sdk8.2-gfx942 → amdrocm-core-dev8.2 → amdrocm-core8.2
    → every arch meta), one warning per base. Decision 15 leaves no such way: the only
    warnings left are the cycles package.json declares."""
    assert list(cross_arch_paths(therock_plan)) == []
    warnings = [n.message for n in therock_plan.notes if n.severity is Severity.WARNING]
    assert len(warnings) == 2 + N
    assert all(message.startswith("dependency cycle: ") for message in warnings)


def test_the_issue_command_succeeds_with_cycle_warnings_and_strict_refuses_them():
    config = str(shared_path("fixtures", "therock", "package.json"))
    args = ["plan", "--config", config, "--target", ",".join(TARGETS), "--rocm-version", "8.2.0"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("warning: dependency cycle: ") == 2 + N
    assert "77 base packages → 322 packages" in result.stdout
    strict = CliRunner().invoke(cli, [*args, "--strict"])
    assert strict.exit_code == 1
    assert strict.stdout == ""
    assert "error: dependency cycle: amdrocm-base8.2 → amdrocm-runtime8.2" in strict.stderr
    assert strict.stderr.splitlines()[-1].endswith("and --strict makes warnings errors")


@pytest.mark.slow
def test_builds_from_a_generated_artifacts_tree(tmp_path):
    config_path = shared_path("fixtures", "therock", "package.json")
    artifacts = tmp_path / "artifacts"
    load_generator().generate(artifacts, config_path, list(TARGETS), 0.002, seed=7)
    tree = scan(artifacts)
    assert tree.kpack_split
    assert set(tree.index.targets()) == set(TARGETS)
    release_plan = plan(load_config(config_path).packages, TARGETS, "8.2.0", artifacts=tree.index)
    options = BuildOptions(formats=(DEB,), jobs=2)
    built = build(release_plan, route(release_plan, tree, options.epoch), tmp_path / "out", options)
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert len(index["files"]) == len(built) == len(release_plan.packages)
    devices = {b.package for b in built if b.kind == Kind.DEVICE.value}
    assert {f"amdrocm-blas8.2-{arch}" for arch in TARGETS} <= devices
    # Published and resolved against the bundled Debian 12 system: every package
    # installs and no rule is broken, the per-arch SDK metas included (Decision 15).
    runner = CliRunner()
    repo = tmp_path / "repo"
    published = runner.invoke(cli, ["repo", "--in", str(tmp_path / "out"), "--out", str(repo)])
    assert published.exit_code == 0, published.output
    verified = runner.invoke(cli, ["verify", "--repo", str(repo), "--json"])
    assert verified.exit_code == 0, verified.stdout[:2000]
    (report,) = json.loads(verified.stdout)
    assert report["checked"]["installable"] == len(built)
    assert report["checked"]["cross-arch"] > 0
    assert report["violations"] == [] and report["ok"], verified.stdout[:2000]
    sdk = runner.invoke(
        cli, ["verify", "--repo", str(repo), "--install", "amdrocm-core-sdk8.2-gfx942", "--json"]
    )
    assert sdk.exit_code == 0, sdk.stdout[:2000]
    (installed,) = json.loads(sdk.stdout)
    names = {step["name"] for step in installed["transaction"] if step["action"] == "install"}
    assert {
        "amdrocm-core-sdk8.2-gfx942",
        "amdrocm-core-dev8.2-gfx942",
        "amdrocm-core8.2-gfx942",
        "amdrocm-blas-dev8.2",
        "amdrocm-blas-host8.2",
        "amdrocm-blas8.2-gfx942",
    } <= names
    assert {arch_of(name) for name in names} == {None, "gfx942"}
