"""OUT's own tree is trusted no more than an input (repo/own_tree.py, the lock and the
pool checks of repo/transaction.py, verify --deep): a symlinked directory inside a
repository is refused before anything is written through it, and a pool file that is
now a FIFO, a link to /dev/zero or a huge sparse file is a change after publishing,
told from lstat and its size without a read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gfxpack.repo.state import DATABASE
from gfxpack.repo.transaction import LOCK
from tests.repo.small_stream import EPOCH, copy_of, gfxpack, make_template, one_error, snapshot

POOL_FILE = "apt/pool/main/tool_8.2.0-1_amd64.deb"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return make_template(tmp_path_factory.mktemp("own-tree"))


def _moved_behind_a_link(repo: Path, inside: str, elsewhere: Path) -> Path:
    """The directory ``inside`` of ``repo`` moved to ``elsewhere``, a symlink to it in
    its place."""
    shutil.move(repo / inside, elsewhere)
    (repo / inside).symlink_to(elsewhere, target_is_directory=True)
    return elsewhere


SYMLINKED = (
    "apt",
    "apt/pool",
    "apt/pool/main",
    "apt/dists",
    "apt/dists/stable",
    "apt/dists/stable/main/binary-amd64",
    "apt/dists/stable/main/binary-amd64/by-hash",
    "rpm/Packages",
    "rpm/repodata",
)


@pytest.mark.parametrize("inside", SYMLINKED)
@pytest.mark.parametrize("command", ["repo", "prune"])
def test_a_symlinked_directory_inside_out_is_refused(template, tmp_path, inside, command):
    repo = copy_of(template[0], tmp_path)
    elsewhere = _moved_behind_a_link(repo, inside, tmp_path / "elsewhere")
    before = snapshot(elsewhere)
    args = {
        "repo": ["repo", "--in", str(template[1]["8.2.2"]), "--out", str(repo)],
        "prune": ["stream", "prune", "--repo", str(repo), "--retain", "1builds"],
    }[command]
    line = one_error(gfxpack(*args))
    assert f"{repo / inside}: is a symlink; gfxpack does not follow it" in line, line
    assert snapshot(elsewhere) == before  # nothing written into it, nor pruned from it


def test_a_symlink_an_interrupted_run_seems_to_have_left_is_never_put_back(template, tmp_path):
    """An older gfxpack's interrupted run left rpm/.repodata-old; one that is a symlink
    is refused before recovery would rename it to repodata and write through it."""
    repo = copy_of(template[0], tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_bytes(b"keep")
    shutil.rmtree(repo / "rpm/repodata")
    (repo / "rpm/.repodata-old").symlink_to(elsewhere, target_is_directory=True)
    line = one_error(gfxpack("repo", "--in", str(template[1]["8.2.2"]), "--out", str(repo)))
    assert f"{repo / 'rpm/.repodata-old'}: is a symlink" in line
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep"]
    assert (repo / "rpm/.repodata-old").is_symlink()


def test_a_symlinked_source_pool_is_never_promoted_from(template, tmp_path):
    repo = copy_of(template[0], tmp_path)
    _moved_behind_a_link(repo, "rpm/Packages", tmp_path / "elsewhere")
    target = tmp_path / "to"
    line = one_error(
        gfxpack(
            "stream", "promote", "--from", str(repo), "--to", str(target), "--version", "8.2.1-1"
        )
    )
    assert "rpm/Packages: is a symlink" in line and not target.exists()


def test_a_lock_file_that_is_a_dangling_symlink_is_refused(template, tmp_path):
    repo = copy_of(template[0], tmp_path)
    planted = tmp_path / "planted-lock"
    (repo / LOCK).unlink()
    (repo / LOCK).symlink_to(planted)
    line = one_error(gfxpack("repo", "--in", str(template[1]["8.2.2"]), "--out", str(repo)))
    assert f"{repo / LOCK}: a symlink" in line
    assert not planted.exists() and not planted.is_symlink()


def test_verify_deep_reports_a_symlinked_directory(template, tmp_path):
    repo = copy_of(template[0], tmp_path)
    assert gfxpack("verify", "--repo", str(repo), "--deep").exit_code == 0
    # The same bytes behind the link: only the link is wrong.
    shutil.copytree(repo / "apt/pool/main", tmp_path / "copy")
    shutil.rmtree(repo / "apt/pool/main")
    (repo / "apt/pool/main").symlink_to(tmp_path / "copy", target_is_directory=True)
    result = gfxpack("verify", "--repo", str(repo), "--deep")
    assert result.exit_code == 1
    assert f"{repo / 'apt/pool/main'}: a symlinked directory" in result.output + result.stderr


# --- pool files that are no longer what was published -----------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _sparse(path: Path) -> None:
    with open(path, "wb") as file:
        file.truncate(20 << 30)


REPLACEMENTS = {"fifo": _fifo, "dev-zero": _dev_zero, "sparse-20G": _sparse}
SAID = {
    "fifo": "now a FIFO",
    "dev-zero": "now a symlink",
    "sparse-20G": f"{20 << 30} bytes",
}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """gfxpack in a process of its own: the timeout guards against a hang (the old
    behaviour: reading a FIFO); it is no timing assertion."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH}
    return subprocess.run(
        [sys.executable, "-m", "gfxpack", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize("replacement", list(REPLACEMENTS))
def test_a_pool_file_swapped_for_a_fifo_a_device_or_a_sparse_file_is_changed(
    template, tmp_path, replacement
):
    repo = copy_of(template[0], tmp_path)
    pool_file = repo / POOL_FILE
    pool_file.unlink()
    try:
        REPLACEMENTS[replacement](pool_file)
    except OSError as e:
        pytest.skip(f"cannot make a {replacement} here: {e}")
    # Publishing the build again checks its published files; promote copies them.
    published = _run("repo", "--in", str(template[1]["8.2.0"]), "--out", str(repo))
    assert published.returncode == 1, published.stderr
    errors = [line for line in published.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{pool_file}: changed after publishing" in errors[0], errors
    assert SAID[replacement] in errors[0]
    promoted = _run("stream", "promote", "--from", str(repo), "--to", str(tmp_path / "to"),
                    "--version", "8.2.0-1")  # fmt: skip
    assert promoted.returncode == 1 and "changed after publishing" in promoted.stderr
    deep = _run("verify", "--repo", str(repo), "--deep", "--format", "deb")
    assert deep.returncode == 1, deep.stdout + deep.stderr
    assert f"{pool_file}: " in deep.stderr and "changed after publishing" in deep.stderr
    assert (repo / DATABASE).stat().st_size > 0
