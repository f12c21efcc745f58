"""Decision 16, targets in processor order everywhere: ``gfxpack plan`` run with targets
given in the reverse of processor order, and where each target shows up in its output."""

from __future__ import annotations

from click.testing import CliRunner

from gfxpack.cli import cli
from tests.conftest import EXAMPLE_CONFIG

GIVEN = "gfx1201,gfx1100,gfx942,gfx90a"  # string order, and the reverse of processor order
ORDER = ["gfx90a", "gfx942", "gfx1100", "gfx1201"]


def positions(text: str, template: str) -> list[int]:
    return [text.index(template.format(arch)) for arch in ORDER]


def plan_cli(*args: str) -> str:
    base = ["plan", "--config", str(EXAMPLE_CONFIG), "--rocm-version", "8.2.0", "-q"]
    result = CliRunner().invoke(cli, [*base, "--target", GIVEN, *args])
    assert result.exit_code == 0, result.output
    return result.stdout
