"""gfxpack why on the published example: a pulled-in package, one nothing installed
requires, and another arch's package, in both formats; checked against the plan."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, PackageFormat
from gfxpack.why import chain_text, why


def required_by(release_plan, key: str, fmt: PackageFormat) -> list[str]:
    """The plan's packages with a Depends on ``key``: what the repository must report."""
    return sorted(
        p.name(fmt)
        for p in release_plan.packages
        if any(req.target == key for dep in p.relations(fmt).depends for req in dep)
    )


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_a_pulled_in_package_shows_its_shortest_chain(example_repo, example_release, fmt):
    (answer,) = why(example_repo, ["amdrocm-dnn8.2-gfx942"], "amdrocm-solver8.2-gfx942", fmt)
    assert answer.installed and answer.fmt == fmt
    pin = "{} ({} 8.2.0-1)" if fmt is DEB else "{} {} 8.2.0-1"
    assert chain_text(answer.chain) == (
        f"amdrocm-dnn8.2-gfx942 requires {pin.format('amdrocm-blas8.2-gfx942', '>=')}"
        f" → requires {pin.format('amdrocm-solver8.2-gfx942', '>=')}"
    )
    assert answer.reason == chain_text(answer.chain)
    # Each hop is a Depends the plan gave the package before it.
    plan = example_release.plan
    names = [hop.package.split(" (")[0] for hop in answer.chain]
    for before, hop in zip(names, answer.chain[1:], strict=False):
        depends = [d for dep in plan.get(before).relations(fmt).depends for d in dep]
        assert hop.via in {fmt.render((req,)) for req in depends}
    # No shorter chain exists: the arch meta is not installed, and the device's own
    # Depends do not name the solver.
    assert "amdrocm-solver8.2-gfx942" not in {
        req.name for dep in plan.get("amdrocm-dnn8.2-gfx942").relations(fmt).depends for req in dep
    }


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_a_package_nothing_installed_requires(example_repo, example_release, fmt):
    (answer,) = why(example_repo, ["amdrocm-core8.2-gfx942"], "amdrocm-profiler8.2", fmt)
    assert not answer.installed and answer.chain == ()
    expected = required_by(example_release.plan, "amdrocm-profiler8.2", fmt)
    assert answer.required_by == expected and len(expected) == 2
    assert answer.reason == (
        f"nothing installed requires it: it is required by {', '.join(expected)}, "
        "none of which is installed"
    )
    (leaf,) = why(example_repo, ["amdrocm-core8.2-gfx942"], "amdrocm-hipify", fmt)
    assert (leaf.installed, leaf.required_by) == (False, [])
    assert leaf.reason == "no package of the repository requires it"


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_another_arch_package_names_the_rule(example_repo, example_release, fmt):
    (answer,) = why(example_repo, ["amdrocm-core8.2-gfx942"], "amdrocm-blas8.2-gfx950", fmt)
    assert not answer.installed
    expected = required_by(example_release.plan, "amdrocm-blas8.2-gfx950", fmt)
    assert answer.required_by == expected == ["amdrocm-blas8.2", "amdrocm-core8.2-gfx950"]
    assert answer.reason.startswith(
        "it is a gfx950 package and the install is for gfx942: the cross-arch rule "
    )
    assert answer.reason.endswith(
        "it comes with amdrocm-blas8.2, amdrocm-core8.2-gfx950, none of which is installed"
    )


def test_command_line_both_formats_and_json(example_repo):
    args = ["why", "--repo", str(example_repo), "--install", "amdrocm-core8.2-gfx942"]
    result = CliRunner().invoke(cli, [*args, "amdrocm-sysdeps8.2"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "deb: amdrocm-sysdeps8.2 (8.2.0-1) is installed: amdrocm-core8.2-gfx942 requires "
        "amdrocm-sysdeps8.2 (= 8.2.0-1)",
        "rpm: amdrocm-sysdeps8.2 (8.2.0-1) is installed: amdrocm-core8.2-gfx942 requires "
        "amdrocm-sysdeps8.2 = 8.2.0-1",
    ]
    result = CliRunner().invoke(cli, [*args, "--format", "rpm", "--json", "amdrocm-core8.2-gfx942"])
    (answer,) = json.loads(result.output)
    assert answer["installed"] is True and answer["reason"] == "it is requested"
    assert answer["chain"] == [{"package": "amdrocm-core8.2-gfx942 (8.2.0-1)", "via": None}]
    result = CliRunner().invoke(cli, [*args, "amdrocm-blas8.2-gfx94"])
    assert result.exit_code == 1
    assert result.output.startswith("error: amdrocm-blas8.2-gfx94: no package of that name in ")
    assert "did you mean amdrocm-blas8.2-gfx942" in result.output
