"""The CI gate "this install works on gfx942": try-install --probe and verify --install
--root-probe install the example release with the real client into a throwaway root
and probe it (gfxpack probe) for the install's arch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli

BLAS = "amdrocm-blas8.2-gfx942"  # rocBLAS, hipBLASLt, hipSPARSELt: Tensile libraries
CORE = "amdrocm-core8.2-gfx942"  # everything: every family of kernel data
PREFIX = "opt/rocm/core-8.2"
ROCBLAS = f"{PREFIX}/lib/rocblas/library (rocBLAS Tensile)"

pytestmark = pytest.mark.slow


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_try_install_probe_passes_for_the_installs_arch_and_the_root_fails_another(
    example_repo: Path, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    result = run("try-install", "--repo", str(example_repo), "--client", "apt", "--root",
                 str(root), "--probe", BLAS)  # fmt: skip
    assert result.exit_code == 0, result.output
    probed = [line for line in result.stdout.splitlines() if line.startswith("probe: ")]
    assert [line.split(":")[1].split()[0] for line in probed[:-1]] == ["found"] * 3
    assert f"probe: found    {ROCBLAS}: gfx942: " in "\n".join(probed)
    # The same root, probed for an arch it was not installed for: rocBLAS holds gfx942's
    # Tensile files where gfx1100's should be.
    other = run("probe", "--root", str(root), "--device", "gfx1100")
    assert other.exit_code == 1
    assert any(
        line.startswith(f"shadowed {ROCBLAS}: gfx1100: ") for line in other.stdout.splitlines()
    )


def test_try_install_probe_of_the_whole_release_finds_every_familys_data(
    example_repo: Path,
) -> None:
    # The example release carries each family's kernel data as upstream lays it out
    # (examples/generate_artifacts.py): installed for gfx942, every library finds it.
    result = run("try-install", "--repo", str(example_repo), "--client", "apt", "--probe",
                 "--json", CORE)  # fmt: skip
    assert result.exit_code == 0, result.output
    findings = json.loads(result.stdout)["probe"]["findings"]
    assert {f["status"] for f in findings} == {"found"}
    families = {f["family"] for f in findings}
    assert {"tensile", "miopen", "rocfft", "aotriton", "hipdnn"} <= families
    layouts = {f["library"]: f["file"] for f in findings if f["family"] == "tensile"}
    hipblaslt = f"{PREFIX}/lib/hipblaslt/library (hipBLASLt Tensile)"
    assert layouts[hipblaslt].startswith(f"{PREFIX}/lib/hipblaslt/library/gfx942/")


def test_try_install_probe_fails_on_a_library_whose_data_is_not_read(
    example_repo: Path,
) -> None:
    # ROCFFT_RTC_SYS_CACHE_PATH replaces the installed rocFFT cache: the one probe
    # checks is then not what the runtime reads.
    result = CliRunner().invoke(
        cli,
        ["try-install", "--repo", str(example_repo), "--client", "apt", "--probe", "--json",
         CORE],
        env={"ROCFFT_RTC_SYS_CACHE_PATH": "/nowhere"},
    )  # fmt: skip
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["ok"] is True and document["probe"]["ok"] is False
    failed = [
        (f["family"], f["status"]) for f in document["probe"]["findings"] if f["status"] != "found"
    ]
    assert failed == [("rocfft", "missing")]
    checks = len(document["probe"]["findings"])
    assert document["probe"]["error"].startswith(f"1 of {checks} check(s) of ")
    # The temporary root is gone, and the report says so.
    assert document["kept"] is False and not Path(document["root"]).exists()


def test_verify_root_probe_installs_and_probes(example_repo: Path) -> None:
    result = run("verify", "--repo", str(example_repo), "--install", BLAS, "--format", "rpm",
                 "--root-probe", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [r["format"] for r in document["reports"]] == ["rpm"]
    assert document["root_probe"]["ok"] is True
    assert any(
        f["library"] == ROCBLAS and f["status"] == "found"
        for f in document["root_probe"]["findings"]
    )


def test_root_probe_needs_an_install(example_repo: Path) -> None:
    result = run("verify", "--repo", str(example_repo), "--root-probe")
    assert result.exit_code == 1
    assert result.stderr == "error: --root-probe probes the root an install makes: give --install\n"
