"""Decision 15 with the real clients: a developer's per-arch SDK from TheRock's own
package.json, installed by apt-get and dnf into throwaway roots, holds only its arch
(skipped without ../shared)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from tests.conftest import THEROCK_TARGETS

SDK = "amdrocm-core-sdk8.2-gfx942"
OTHER_ARCHES = [t for t in THEROCK_TARGETS if t != "gfx942"]


def installed_files(root: Path) -> list[str]:
    """Every file and symlink the packages put under ``root``/opt, as '/path'."""
    found = []
    for directory, _, names in os.walk(root / "opt"):
        for name in names:
            found.append("/" + (Path(directory) / name).relative_to(root).as_posix())
    return found


@pytest.mark.slow
@pytest.mark.parametrize("client", ["apt", "dnf"])
def test_the_per_arch_sdk_installs_one_arch(client, therock_repo, tmp_path):
    root = tmp_path / "root"
    result = CliRunner().invoke(
        cli,
        [
            *("try-install", "--repo", str(therock_repo), "--client", client),
            *("--root", str(root), "--json", SDK),
        ],
    )
    assert result.exit_code == 0, result.output + result.stderr
    report = json.loads(result.stdout)
    names = {p["name"] for p in report["packages"]}
    assert report["archs"] == ["gfx942"] and report["ok"] is True
    assert report["other_arch"] == {"packages": [], "files": []}
    # The SDK brings headers and host libraries (the -devel packages) and gfx942's
    # device code, and no package named for another arch.
    dev = "-dev" if client == "apt" else "-devel"
    assert any(dev in name for name in names), names
    assert any(name.endswith("-gfx942") for name in names)
    assert not [n for n in names if any(n.endswith(f"-{arch}") for arch in OTHER_ARCHES)]
    # Looked at in the root itself, without the report.
    files = installed_files(root)
    assert any("gfx942" in f for f in files), files[:20]
    assert not [f for f in files if any(arch in f for arch in OTHER_ARCHES)]
