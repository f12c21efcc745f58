"""gfxpack why on a repository that holds two releases (8.2.0, then 8.2.1 published into
the same OUT, as the README's incremental workflow does), in both formats: the answer
is about the newest version, the one an install gets."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.repo import publish
from tests.conftest import build_example

INSTALL = "amdrocm-core8.2-gfx942"


@pytest.fixture(scope="module")
def two_releases(example_release, example_artifacts, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("two-releases")
    update = build_example(example_artifacts, base / "8.2.1", version="8.2.1")
    repo = base / "repo"
    for build in (example_release.out, update.out):
        publish(build, repo, "stable", 1_700_000_000)
    packages = (repo / "apt/dists/stable/main/binary-amd64/Packages").read_text()
    for version in ("8.2.0-1", "8.2.1-1"):  # both releases are there
        assert f"Package: amdrocm-profiler8.2\nVersion: {version}\n" in packages
    return repo


def why(repo: Path, package: str) -> list[str]:
    result = CliRunner().invoke(cli, ["why", "--repo", str(repo), "--install", INSTALL, package])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_a_package_not_installed_is_named_at_its_newest_version(two_releases):
    # Two versions of the name and neither installed: the answer names the newest.
    lines = why(two_releases, "amdrocm-profiler8.2")
    assert len(lines) == 2
    for fmt, line in zip(("deb", "rpm"), lines, strict=True):
        assert line.startswith(
            f"{fmt}: amdrocm-profiler8.2 (8.2.1-1) is not installed: nothing installed "
            "requires it: it is required by "
        ), line


def test_an_installed_package_shows_the_chain_of_the_newest_release(two_releases):
    assert why(two_releases, "amdrocm-sysdeps8.2") == [
        "deb: amdrocm-sysdeps8.2 (8.2.1-1) is installed: amdrocm-core8.2-gfx942 requires "
        "amdrocm-sysdeps8.2 (= 8.2.1-1)",
        "rpm: amdrocm-sysdeps8.2 (8.2.1-1) is installed: amdrocm-core8.2-gfx942 requires "
        "amdrocm-sysdeps8.2 = 8.2.1-1",
    ]
