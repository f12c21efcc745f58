"""The example release planned end to end: package.json -> ``gfxpack plan`` in each
text format, compared with golden files (``pytest --update-golden`` rewrites them)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from tests.conftest import EXAMPLE_CONFIG
from tests.golden import Golden

PLAN = ["plan", "--config", str(EXAMPLE_CONFIG), "--target", "gfx942,gfx1100"]
PLAN += ["--rocm-version", "8.2.0", "-q"]
# format -> golden file
OUTPUTS = {
    "summary": "example-plan.txt",
    "tree": "example-plan.tree",
    "table": "example-plan.table.md",
    "json": "example-plan.json",
}


def plan_output(fmt: str) -> str:
    result = CliRunner().invoke(cli, [*PLAN, "--format", fmt])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("fmt", sorted(OUTPUTS))
def test_example_plan_is_the_golden_one(golden, fmt):
    golden.check(OUTPUTS[fmt], plan_output(fmt))


def test_golden_json_is_the_plan_of_every_example_package(golden):
    """The golden JSON holds a real plan, not an empty or error output."""
    data = json.loads(golden.read(OUTPUTS["json"]))
    assert data["targets"] == ["gfx942", "gfx1100"]
    assert {"amdrocm-blas8.2-gfx942", "amdrocm-blas8.2-gfx1100"} <= {
        p["name"] for p in data["packages"]
    }


def test_a_changed_output_fails_and_update_rewrites_it(tmp_path):
    """The helper's two modes: a difference fails naming the file; updating writes it."""
    Golden(tmp_path, update=True).check("plan.txt", "one\n")
    assert (tmp_path / "plan.txt").read_text(encoding="utf-8") == "one\n"
    Golden(tmp_path).check("plan.txt", "one\n")
    with pytest.raises(AssertionError, match=r"plan\.txt differs \(--update-golden"):
        Golden(tmp_path).check("plan.txt", "two\n")
    with pytest.raises(pytest.fail.Exception, match=r"missing\.txt is missing"):
        Golden(tmp_path).check("missing.txt", "one\n")
