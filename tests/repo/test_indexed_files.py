"""repo/run.py: every pool file a run indexes is checked against the record, not only
those it publishes again. A file changed in place after publishing (signed again, say)
is one error naming it, and nothing changes; the file restored, the run goes through."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from tests.repo.nightlies import nightly


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> dict[int, Path]:
    where = tmp_path_factory.mktemp("nights")
    return {night: nightly(where, night) for night in (1, 2)}


# A file of the same build as the one changed, removed by the "remove" case.
OTHER_RPM = "rocm-tool-8.2.1-1.x86_64.rpm"


def gfxpack(*args: str):
    return CliRunner().invoke(cli, list(args), env={"SOURCE_DATE_EPOCH": "1700000000"})


def _tops(repo: Path) -> dict[str, bytes]:
    return {
        name: (repo / name).read_bytes()
        for name in ("apt/dists/stable/Release", "rpm/repodata/repomd.xml")
    }


@pytest.mark.parametrize(
    ("changed", "command"),
    [
        ("rpm/Packages/rocm-lib-8.2.1-1.x86_64.rpm", "repo"),
        ("apt/pool/main/rocm-tool_8.2.1-1_amd64.deb", "repo"),
        ("apt/pool/main/rocm-tool_8.2.1-1_amd64.deb", "refresh"),
        ("rpm/Packages/rocm-lib-8.2.1-1.x86_64.rpm", "remove"),
    ],
    ids=["rpm-add", "deb-add", "deb-refresh", "rpm-remove-another"],
)
def test_a_pool_file_changed_in_place_stops_the_next_run(nights, tmp_path, changed, command):
    repo = tmp_path / "repo"
    assert gfxpack("repo", "--in", str(nights[1]), "--out", str(repo)).exit_code == 0
    path = repo / changed
    original = path.read_bytes()
    # The same size, one byte other: only its digest tells.
    path.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    before = _tops(repo)
    args = {
        "repo": ["repo", "--in", str(nights[2]), "--out", str(repo)],
        "refresh": ["stream", "refresh", "--repo", str(repo)],
        "remove": ["stream", "remove", "--repo", str(repo), "--package", OTHER_RPM],
    }[command]
    result = gfxpack(*args)
    assert result.exit_code == 1
    (line,) = result.output.splitlines()
    assert line.startswith(f"error: {path}: its bytes differ from those published")
    assert "a published file never changes" in line
    assert _tops(repo) == before
    assert not list(repo.rglob("*8.2.2*"))
    # Restored, the same run goes through.
    path.write_bytes(original)
    result = gfxpack(*args)
    assert result.exit_code == 0, result.output
