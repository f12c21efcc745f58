"""repo/kept_dependencies.py through gfxpack stream remove: a removal that takes what a
kept package depends on is refused, naming each loss, unless --force; then the report
names the packages left uninstallable, and apt agrees they are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from tests.repo.nightlies import nightly
from tests.verify.helpers import Apt

EPOCH = 1_700_000_000


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> dict[int, Path]:
    where = tmp_path_factory.mktemp("nights")
    return {night: nightly(where, night) for night in (1, 2)}


@pytest.fixture
def repo(nights, tmp_path) -> Path:
    out = tmp_path / "repo"
    for night in (1, 2):
        result = CliRunner().invoke(cli, ["repo", "--in", str(nights[night]), "--out", str(out)],
                                    env={"SOURCE_DATE_EPOCH": str(EPOCH + night)})  # fmt: skip
        assert result.exit_code == 0, result.output
    return out


def _state(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and p.name != ".gfxpack-repo.lock"}  # fmt: skip


def remove(repo: Path, *args: str):
    return CliRunner().invoke(cli, ["stream", "remove", "--repo", str(repo), *args])


def test_a_removal_that_leaves_a_kept_package_without_a_dependency_is_refused(repo):
    before = _state(repo)
    result = remove(repo, "--package", "rocm-lib_8.2.2-1_amd64.deb",
                    "--package", "rocm-lib-8.2.2-1.x86_64.rpm")  # fmt: skip
    assert result.exit_code == 1
    (line,) = result.output.splitlines()
    assert line.startswith(f"error: {repo}: removing rocm-lib-8.2.2-1.x86_64.rpm, ")
    assert "deb: rocm-tool (8.2.2-1) needs rocm-lib (= 8.2.2-1)" in line
    assert "rpm: rocm-tool (8.2.2-1) needs rocm-lib = 8.2.2-1" in line
    assert "nothing was removed" in line and "--force" in line
    assert _state(repo) == before
    # A dry run is refused alike: it says what the run would do.
    dry = remove(repo, "--package", "rocm-lib_8.2.2-1_amd64.deb", "--dry-run")
    assert dry.exit_code == 1 and "deb: rocm-tool (8.2.2-1) needs rocm-lib" in dry.output
    assert "rpm:" not in dry.output  # the rpm side loses nothing
    assert _state(repo) == before


def test_what_nothing_needs_goes_without_force(repo):
    result = remove(repo, "--package", "rocm-tool_8.2.2-1_amd64.deb", "--version", "8.2.1-1")
    assert result.exit_code == 0, result.output
    assert "removed build 8.2.1-1" in result.output and "uninstallable" not in result.output
    packages = (repo / "apt/dists/stable/main/binary-amd64/Packages").read_text()
    assert "rocm-tool" not in packages and "Version: 8.2.2-1" in packages


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get")
def test_force_removes_and_names_what_became_uninstallable(repo, tmp_path):
    result = remove(repo, "--package", "rocm-lib_8.2.2-1_amd64.deb", "--force")
    assert result.exit_code == 0, result.output
    assert "became uninstallable (--force): 1 package(s)\n  deb: rocm-tool (8.2.2-1)\n" in (
        result.output
    )
    # apt, the referee: the newest rocm-tool no longer installs.
    apt = Apt(
        tmp_path / "apt", f"deb [trusted=yes] {repo.resolve().as_uri()}/apt stable main\n", ""
    )
    apt.run("update")
    refused = apt.run("install", "--simulate", "-y", "rocm-tool=8.2.2-1", check=False)
    assert refused.returncode != 0 and "rocm-lib (= 8.2.2-1)" in refused.stdout + refused.stderr
