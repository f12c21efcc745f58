"""cli/common.py: what every command shares. Here the size option's bounds."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from gfxpack.cli.common import ByteSize


@click.command()
@click.option("--size", type=ByteSize())
def sized(size: int) -> None:
    click.echo(size)


@pytest.mark.parametrize(
    ("given", "size"),
    [
        ("1073741824", 1 << 30),
        ("512M", 512 << 20),
        ("2GiB", 2 << 30),
        ("8388607T", (2**23 - 1) << 40),
    ],
)
def test_a_size(given: str, size: int) -> None:
    result = CliRunner().invoke(sized, ["--size", given])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{size}\n"


@pytest.mark.parametrize(
    "given",
    ["9" * 5000, "9" * 21, "\u0661G", "8388608T", str(2**63), "0", "lots"],
    ids=["5000-digits", "21-digits", "arabic-indic-digit", "8-EiB", "2**63", "zero", "word"],
)
def test_a_size_out_of_bounds_is_one_usage_error(given: str) -> None:
    """int() takes an Arabic-indic digit and refuses 5,000 digits with a ValueError: the
    option takes ASCII digits, up to what a file offset holds, and says so."""
    result = CliRunner().invoke(sized, ["--size", given])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    [error] = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert error.endswith("expected a size such as 1073741824, 512M or 2G (at most 8 EiB)")
    assert len(error) < 200  # a 5,000-digit value is cut, not echoed whole
