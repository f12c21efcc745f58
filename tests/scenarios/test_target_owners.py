"""Target owners (TheRock#8280, #8327): gfx1250 and gfx1250-strict are built as two
targets and shipped in one gfx1250 device package, each target's files under its own
names, identical files once, two different files at one path an error. The packages
built are installed by dpkg and rpm into throwaway roots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from tests.conftest import EXAMPLE_CONFIG, dpkg_root, run
from tests.small_tree import PREFIX, STAGE, write_config

OWNED = "gfx1250,gfx1250-strict"
DEVICE_DEB = "amdrocm-blas8.2-gfx1250_8.2.0-1_amd64.deb"
DEVICE_RPM = "amdrocm-blas8.2-gfx1250-8.2.0-1.x86_64.rpm"
KPACKS = [f"{PREFIX}/lib/.kpack/blas_lib_{t}.kpack" for t in ("gfx1250", "gfx1250-strict")]
SHARED = f"{PREFIX}/lib/rocblas/library/TensileManifest.txt"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def plan_of(targets: str, *args: str) -> Result:
    return invoke(
        "plan", "--config", str(EXAMPLE_CONFIG), "--target", targets, "--rocm-version", "8.2.0",
        *args,
    )  # fmt: skip


# --- plan ------------------------------------------------------------------------------------


def test_plan_gives_one_gfx1250_device_per_family_and_shows_its_targets():
    result = plan_of(f"gfx942,{OWNED}", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["targets"] == ["gfx942", "gfx1250", "gfx1250-strict"]
    assert data["arches"] == ["gfx942", "gfx1250"]
    assert data["owners"] == {"gfx942": ["gfx942"], "gfx1250": ["gfx1250", "gfx1250-strict"]}
    keys = [p["name"] for p in data["packages"]]
    assert not [key for key in keys if "strict" in key]
    devices = [p for p in data["packages"] if p["kind"] == "device"]
    # One gfx1250 device beside each gfx942 one: per family, not per target.
    by_arch = {
        arch: sorted(p["base"] for p in devices if p["arch"] == arch) for arch in data["arches"]
    }
    assert by_arch["gfx1250"] == by_arch["gfx942"] and by_arch["gfx942"]
    assert len(devices) == 2 * len(by_arch["gfx942"])
    # The same packages as a gfx1250 release: the owner's names, nothing more.
    alone = json.loads(plan_of("gfx942,gfx1250", "--format", "json").stdout)
    assert keys == [p["name"] for p in alone["packages"]]

    text = plan_of(f"gfx942,{OWNED}")
    assert text.exit_code == 0, text.output
    assert "targets gfx942, gfx1250 (gfx1250, gfx1250-strict)" in text.stdout


def test_a_strict_target_alone_builds_into_its_owners_packages():
    result = plan_of("gfx1250-strict", "--format", "json", "-v")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["owners"] == {"gfx1250": ["gfx1250-strict"]}
    assert "amdrocm-blas8.2-gfx1250" in [p["name"] for p in data["packages"]]
    assert "target gfx1250-strict is built into the gfx1250 packages" in result.stderr


# --- build: routing, sharing, conflicts, installs ------------------------------------------------


def _artifact(root: Path, target: str, files: dict[str, bytes]) -> None:
    directory = root / f"blas_lib_{target}"
    (directory / STAGE).mkdir(parents=True)
    (directory / "artifact_manifest.txt").write_text(STAGE + "\n")
    for relative, data in files.items():
        path = directory / STAGE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def owned_tree(root: Path, strict_manifest: bytes = b"kernels: 2\n") -> Path:
    """blas with host code and a gfx1250 and a gfx1250-strict artifact: each its own
    archive, and one database file at one path in both."""
    _artifact(root, "generic", {"lib/librocblas.so.5": b"\x7fELF host"})
    _artifact(
        root,
        "gfx1250",
        {
            "lib/.kpack/blas_lib_gfx1250.kpack": b"gfx1250 archive",
            "lib/rocblas/library/TensileManifest.txt": b"kernels: 2\n",
        },
    )
    _artifact(
        root,
        "gfx1250-strict",
        {
            "lib/.kpack/blas_lib_gfx1250-strict.kpack": b"strict archive",
            "lib/rocblas/library/TensileManifest.txt": strict_manifest,
        },
    )
    return root


def build(tmp_path: Path, artifacts: Path, targets: str = OWNED) -> Result:
    return invoke(
        "build", "--config", str(write_config(tmp_path / "package.json", Gfxarch="True")),
        "--artifacts", str(artifacts), "--out", str(tmp_path / "out"),
        "--rocm-version", "8.2.0", "--target", targets, "--mode", "kpack", "-j", "1", "-q",
    )  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("owned")
    result = build(tmp_path, owned_tree(tmp_path / "artifacts"))
    assert result.exit_code == 0, result.output
    return tmp_path / "out"


def _deb_files(deb: Path) -> list[str]:
    listing = run("dpkg-deb", "--contents", str(deb)).stdout.splitlines()
    return sorted(line.split()[-1].removeprefix(".") for line in listing if line[0] == "-")


def test_build_puts_both_targets_files_into_one_device_package_shared_files_once(built):
    written = sorted(path.name for path in built.rglob("*.deb"))
    assert DEVICE_DEB in written and not [name for name in written if "strict" in name]
    assert [name for name in written if name.startswith("amdrocm-blas8.2-")] == [DEVICE_DEB]
    deb = next(built.rglob(DEVICE_DEB))
    assert _deb_files(deb) == sorted([*KPACKS, SHARED])
    rpm = next(built.rglob(DEVICE_RPM))
    listed = run("rpm", "-qlp", str(rpm)).stdout.split()
    assert sorted(p for p in listed if "/.kpack/" in p or p == SHARED) == sorted([*KPACKS, SHARED])


def test_the_device_package_installs_with_dpkg_and_rpm(built, tmp_path):
    deb_root = dpkg_root(tmp_path / "deb")
    debs = [
        str(next(built.rglob(n))) for n in (DEVICE_DEB, "amdrocm-blas-host8.2_8.2.0-1_amd64.deb")
    ]
    run("dpkg", "--root", str(deb_root), "--force-depends", "--force-script-chrootless",
        "--log=/dev/null", "-i", *debs)  # fmt: skip
    rpm_root = tmp_path / "rpm"
    run("rpm", "--root", str(rpm_root), "--initdb")
    rpms = [
        str(next(built.rglob(n))) for n in (DEVICE_RPM, "amdrocm-blas-host8.2-8.2.0-1.x86_64.rpm")
    ]
    run("rpm", "--root", str(rpm_root), "-i", "--nodeps", "--noscripts", *rpms)
    for root in (deb_root, rpm_root):
        assert (root / KPACKS[0].lstrip("/")).read_bytes() == b"gfx1250 archive"
        assert (root / KPACKS[1].lstrip("/")).read_bytes() == b"strict archive"
        assert (root / SHARED.lstrip("/")).read_bytes() == b"kernels: 2\n"
    owner = run("rpm", "--root", str(rpm_root), "-qf", KPACKS[1]).stdout.split()
    assert owner == ["amdrocm-blas8.2-gfx1250-8.2.0-1.x86_64"]
    owner = run("dpkg", "--root", str(deb_root), "-S", KPACKS[1]).stdout
    assert owner.startswith("amdrocm-blas8.2-gfx1250:")


def test_two_different_files_at_one_path_are_one_error_naming_both_directories(tmp_path):
    artifacts = owned_tree(tmp_path / "artifacts", strict_manifest=b"kernels: 3\n")
    result = build(tmp_path, artifacts)
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if SHARED in line]
    assert len(lines) == 1, result.output
    assert f"blas_lib_gfx1250/{STAGE}" in lines[0]
    assert f"blas_lib_gfx1250-strict/{STAGE}" in lines[0]
    assert "amdrocm-blas8.2-gfx1250" in lines[0]
    # Nothing half-written: no package of the release.
    assert not list(tmp_path.rglob("*.deb")) and not list(tmp_path.rglob("*.rpm"))


def test_a_target_the_release_does_not_name_stays_out(tmp_path):
    result = build(tmp_path, owned_tree(tmp_path / "artifacts"), targets="gfx1250")
    assert result.exit_code == 0, result.output
    deb = next((tmp_path / "out").rglob(DEVICE_DEB))
    assert _deb_files(deb) == sorted([KPACKS[0], SHARED])


def test_an_owner_is_not_built_from_its_variants_artifacts_alone(tmp_path):
    artifacts = owned_tree(tmp_path / "artifacts")
    shutil.rmtree(artifacts / "blas_lib_gfx1250")
    result = build(tmp_path, artifacts, targets="gfx1250")
    assert result.exit_code != 0
    assert result.output.splitlines() == [
        "error: target gfx1250: the artifacts tree has no per-arch artifacts for it "
        "(its targets: gfx1250-strict)"
    ]
