"""The rpm-md repository read by libsolv, and the resolved set installed by rpm."""

from __future__ import annotations

import subprocess

import pytest

from gfxpack.formats import RPM
from gfxpack.verify import verify
from gfxpack.views import reachable
from tests.conftest import run
from tests.verify.helpers import rpm_files

pytestmark = pytest.mark.slow


def resolved_files(repo, names):
    """The .rpm files of the libsolv transaction for ``names``."""
    (report,) = verify(repo, names, RPM)
    assert report.ok, report.violations
    return rpm_files(repo, report.resolution.steps)


def test_rpm_installs_what_libsolv_resolved(example_repo, example_release, tmp_path):
    files = resolved_files(example_repo, ["amdrocm-core8.2-gfx942"])
    expected = {p.rpm.name for p in reachable(example_release.plan, "amdrocm-core8.2-gfx942", RPM)}
    assert len(files) == len(expected)
    root = tmp_path / "root"
    run("rpm", "--root", str(root), "--initdb")
    # The empty root lacks the system packages (numactl-libs, python3): --nodeps.
    run("rpm", "--root", str(root), "-i", "--nodeps", "--noscripts", *map(str, files))
    installed = run("rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\\n").stdout.split()
    assert set(installed) == expected
    assert (root / "opt/rocm/core-8.2/.kpack/blas_lib_gfx942.kpack").is_file()
    assert not (root / "opt/rocm/core-8.2/.kpack/blas_lib_gfx950.kpack").exists()
    # rpm's own dependency check: the set is closed but for the system packages.
    check = subprocess.run(
        ["rpm", "--root", str(root), "-Va", "--nofiles", "--noscripts"],
        capture_output=True,
        text=True,
        check=False,
    )
    unmet = {
        line.split(" is needed by ")[0].strip()
        for line in check.stdout.splitlines()
        if " is needed by " in line
    }
    assert unmet, "the root has no system packages, so rpm must miss some"
    assert not [dep for dep in unmet if "amdrocm" in dep], unmet
