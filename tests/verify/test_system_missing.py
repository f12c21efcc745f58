"""verify --system with system packages missing: the root cause once, in the repository's
own spelling, instead of one "cannot install" per package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.verify.system import bundled


def system_without(fmt: str, *names: str) -> str:
    """The bundled system list of ``fmt`` with the stanzas of ``names`` taken out."""
    stanzas = bundled(fmt).strip().split("\n\n")
    kept = [s for s in stanzas if s.splitlines()[0].removeprefix("Package: ") not in names]
    assert len(stanzas) - len(kept) == len(names)
    return "\n\n".join(kept) + "\n"


def verify(repo: Path, fmt: str, system: Path, *more: str):
    args = ["verify", "--repo", str(repo), "--format", fmt, "--system", str(system), "--json"]
    return CliRunner().invoke(cli, [*args, *more])


@pytest.mark.parametrize(
    ("fmt", "opencl", "required", "python"),
    [
        ("deb", "ocl-icd-libopencl1", "ocl-icd-libopencl1", "python3 (>= 3.6.8)"),
        ("rpm", "ocl-icd", "(ocl-icd or ocl-icd-devel)", "python3 >= 3.6.8"),
    ],
)
def test_missing_system_packages_are_one_root_cause(
    example_repo, tmp_path, fmt, opencl, required, python
):
    system = tmp_path / "system.txt"
    system.write_text(system_without(fmt, opencl, "python3"))
    result = verify(example_repo, fmt, system)
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)
    # One finding per missing package (each can be waived on its own), in the
    # repository's sort order.
    messages = [v["message"] for v in report["findings"]]
    assert len(messages) == 2, messages
    for message, name in zip(sorted(messages), sorted([required, python]), strict=True):
        assert message.startswith(f"system packages not available: {name} (needed by ")
        assert message.endswith(f"; not on the system ({system}) nor in the repository")
        needed = int(message.split("(needed by ")[1].split(" ")[0])
        assert needed > 1  # every package that pulls it in, counted, not listed
    # A waiver names it by its package name, whatever the version it asks for.
    assert [v["packages"] for v in report["findings"] if python in v["message"]] == [
        [python, "python3"]
    ]


def test_the_install_names_what_it_lacks_and_text_output_says_it_once(example_repo, tmp_path):
    system = tmp_path / "system.txt"
    system.write_text(system_without("deb", "ocl-icd-libopencl1"))
    args = ["verify", "--repo", str(example_repo), "--format", "deb", "--system", str(system)]
    result = CliRunner().invoke(cli, [*args, "--install", "amdrocm-core8.2-gfx942"])
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("  installable: ")]
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith(
        "  installable: system packages not available: ocl-icd-libopencl1 (needed by "
    )
    assert lines[1] == (
        "  installable: cannot install amdrocm-core8.2-gfx942: it needs ocl-icd-libopencl1, "
        "which nothing provides"
    )
    assert result.stderr == "error: 2 violation(s) of the package graph's rules\n"
    # Both are judged: the install fails for the very package that is missing.
    quiet = CliRunner().invoke(cli, [*args, "--install", "amdrocm-core8.2-gfx942", "-q"])
    assert quiet.exit_code == 1
    assert quiet.stdout == (
        "FAIL: install amdrocm-core8.2-gfx942 cannot be resolved (deb); "
        "2 finding(s) (installable), 0 waived, 0 note(s) elsewhere\n"
    )
