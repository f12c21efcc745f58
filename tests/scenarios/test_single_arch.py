"""Single-arch (legacy) mode on the bundled example: the release engineer guide's commands work."""

from __future__ import annotations

import shlex
import subprocess

from click.testing import CliRunner

from gfxpack.cli import cli
from tests.conftest import EXAMPLE_CONFIG, ROOT, load_generator, run

# The release engineer guide's single-arch commands, as written there (build/legacy is replaced by a
# temporary directory when they run here).
GENERATE = "python examples/generate_artifacts.py build/legacy/artifacts --single-arch gfx94X-dcgpu"
BUILD = (
    "gfxpack build --config examples/package.json --artifacts build/legacy/artifacts "
    "--out build/legacy/packages --rocm-version 8.2.0"
)

PLAN = (
    "gfxpack plan --config examples/package.json --mode single-arch --target gfx94X-dcgpu "
    "--rocm-version 8.2.0"
)


def readme_commands() -> list[str]:
    """Shell commands of the release engineer guide, continuation lines joined."""
    text = (
        (ROOT / "docs/guides/release-engineer.md").read_text(encoding="utf-8").replace("\\\n", " ")
    )
    return [" ".join(line.split()) for line in text.splitlines()]


def test_readme_shows_the_commands():
    lines = readme_commands()
    assert GENERATE in lines
    assert BUILD in lines
    assert PLAN in lines


def test_readme_single_arch_plan_works():
    args = shlex.split(PLAN)[1:]
    args[args.index("--config") + 1] = str(EXAMPLE_CONFIG)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # nothing to warn about
    assert "single-arch mode, targets gfx94X-dcgpu" in result.stdout


def test_readme_single_arch_build_works(tmp_path):
    root = tmp_path / "legacy"
    artifacts = root / "artifacts"
    family = shlex.split(GENERATE)[-1]
    load_generator().generate(artifacts, EXAMPLE_CONFIG, ["gfx942"], 0.05, 2026, family)
    args = shlex.split(BUILD.replace("build/legacy", str(root)))[1:]
    args[args.index("--config") + 1] = str(EXAMPLE_CONFIG)
    result = CliRunner().invoke(cli, [*args, "-q"])
    assert result.exit_code == 0, result.output
    packages = root / "packages"
    debs = {path.name.split("_")[0] for path in packages.glob("*.deb")}
    # Gfxarch packages carry the family suffix; -devel and others do not.
    assert {"amdrocm-blas8.2-gfx94x", "amdrocm-blas-gfx94x", "amdrocm-blas-dev8.2"} <= debs
    assert "amdrocm-blas-host8.2" not in debs
    contents = run("dpkg-deb", "-c", str(next(packages.glob("amdrocm-blas8.2-gfx94x_*.deb"))))
    assert "./opt/rocm/core-8.2/lib/librocblas.so.1.4.0" in contents.stdout
    control = run("dpkg-deb", "-f", str(next(packages.glob("amdrocm-blas-dev8.2_*.deb"))))
    assert "amdrocm-blas8.2-gfx94x (>= 8.2.0-1)" in control.stdout


def test_generator_cli_writes_a_legacy_tree(tmp_path):
    out = tmp_path / "artifacts"
    args = shlex.split(GENERATE.replace("build/legacy/artifacts", str(out)))[1:]
    subprocess.run(
        [__import__("sys").executable, str(ROOT / args[0]), *args[1:], "--scale", "0.01"],
        check=True,
        capture_output=True,
    )
    names = {path.name for path in out.iterdir()}
    assert "blas_lib_gfx94X-dcgpu" in names and "blas_lib_gfx942" not in names
    assert "blas_dev_generic" in names  # -devel content is never per-arch
