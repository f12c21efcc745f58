"""The pool is not the build: gfxpack repo copies each package into its pool, so editing
a built package in place never changes what is published, and a build file that
changes (or is swapped) while it is published is refused, not published."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.repo.backends import backend
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.setup_package import write_index
from gfxpack.repo.state import State
from gfxpack.repo.transaction import Transaction, stamp
from tests.conftest import tmpfs
from tests.verify.helpers import write_package


def repo(*args: str):
    return CliRunner().invoke(cli, ["repo", *args])


def build_of(where: Path, name: str = "tool") -> list[Path]:
    """A gfxpack build: one package of each format and its index.json."""
    files = [write_package(where, fmt, name) for fmt in FORMATS]
    write_index(where, files)
    return files


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pool_file(out: Path, package: Path) -> Path:
    fmt = DEB if package.suffix == ".deb" else RPM
    return backend(fmt).pool(out / fmt.repo_dir) / package.name


def test_editing_a_built_package_in_place_leaves_the_pool_as_published(tmp_path):
    build = tmp_path / "build"
    packages = build_of(build)
    packages[1].chmod(0o600)  # a build's own mode is not the pool's
    out = tmp_path / "repo"
    result = repo("--in", str(build), "--out", str(out))
    assert result.exit_code == 0, result.output
    published = {}
    for package in packages:
        pooled = pool_file(out, package)
        info, built = pooled.stat(), package.stat()
        assert info.st_ino != built.st_ino and info.st_nlink == 1 and built.st_nlink == 1
        assert stat.S_IMODE(info.st_mode) == 0o644
        assert info.st_mtime_ns == built.st_mtime_ns  # served with the build's date
        # The record stamps the pool's own file, so the next run trusts it unhashed.
        with State.open(out, create=False) as state:
            found = state.file(package.name)
        assert found is not None
        assert found[0].stamp == stamp(pooled) and found[0].stamp.endswith(f":{info.st_ino}")
        published[pooled] = sha256(pooled)
    # One byte of each built package changed in place (same inode, same size).
    for package in packages:
        with open(package, "r+b") as file:
            file.seek(package.stat().st_size // 2)
            byte = file.read(1)
            file.seek(-1, os.SEEK_CUR)
            file.write(bytes([byte[0] ^ 0xFF]))
    assert {pool: sha256(pool) for pool in published} == published
    # The repository is intact: verified whole, and the next release is published into
    # it (a hard-linked pool would now be refused as tampered with).
    deep = CliRunner().invoke(cli, ["verify", "--repo", str(out), "--deep"])
    assert deep.exit_code == 0, deep.output
    later = tmp_path / "later"
    build_of(later, "other")
    result = repo("--in", str(later), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "1 new, 2 in" in result.output


def test_a_build_on_another_filesystem_is_copied_too(tmp_path):
    """copy_file_range cannot cross filesystems here: the read-write copy does it."""
    with tmpfs(tmp_path / "elsewhere", "size=16m") as elsewhere:
        packages = build_of(elsewhere / "build")
        out = tmp_path / "repo"
        result = repo("--in", str(elsewhere / "build"), "--out", str(out))
        assert result.exit_code == 0, result.output
        for package in packages:
            pooled = pool_file(out, package)
            assert pooled.read_bytes() == package.read_bytes()
            assert pooled.stat().st_nlink == 1
            assert stat.S_IMODE(pooled.stat().st_mode) == 0o644


def prepared(build: Path) -> tuple[InputFile, Path]:
    """A .deb as a run reads it (its digest taken), nothing written yet."""
    deb = write_package(build, DEB, "tool")
    return InputFile(deb, *digest(deb)), deb


def add_to_pool(out: Path, item: InputFile) -> None:
    with Transaction(out) as tx:
        tx.add_to_pool(item, backend(DEB).pool(out / "apt"))


def assert_nothing_published(out: Path) -> None:
    pool = backend(DEB).pool(out / "apt")
    assert not pool.exists() or sorted(p.name for p in pool.iterdir()) == []


def test_a_build_file_changed_after_it_was_read_is_refused(tmp_path):
    out = tmp_path / "repo"
    item, deb = prepared(tmp_path / "build")
    data = bytearray(deb.read_bytes())
    data[-1] ^= 0xFF
    deb.write_bytes(bytes(data))
    changed = "changed while it was being published"
    with pytest.raises(RepoError, match=changed):
        add_to_pool(out, item)
    assert_nothing_published(out)


@pytest.mark.parametrize("swap", ["symlink", "fifo"])
def test_a_build_file_swapped_after_it_was_read_is_refused(tmp_path, swap):
    """A symlink is not followed (the planted file it names is neither read into the
    pool nor changed) and a FIFO is not waited on."""
    out = tmp_path / "repo"
    item, deb = prepared(tmp_path / "build")
    planted = tmp_path / "planted"
    planted.write_bytes(deb.read_bytes())  # the same bytes: only the kind gives it away
    before = (planted.stat().st_ino, planted.stat().st_nlink, planted.read_bytes())
    deb.unlink()
    if swap == "symlink":
        deb.symlink_to(planted)
        expected = "a symlink; only regular files are published"
    else:
        os.mkfifo(deb)
        expected = "not a regular file; only regular files are published"
    with pytest.raises(RepoError, match=expected):
        add_to_pool(out, item)
    assert_nothing_published(out)
    assert (planted.stat().st_ino, planted.stat().st_nlink, planted.read_bytes()) == before


def test_a_touched_pool_file_is_hashed_once_and_its_new_stamp_kept(tmp_path):
    """A published file whose stamp changed over the same bytes (touched, copied back
    from a backup) is hashed when a run publishes it again, and its new stamp recorded:
    the run after trusts it unhashed."""
    build = tmp_path / "build"
    (deb, _) = build_of(build)
    out = tmp_path / "repo"
    assert repo("--in", str(build), "--out", str(out)).exit_code == 0
    pooled = pool_file(out, deb)
    os.utime(pooled, (1, 1))
    assert repo("--in", str(build), "--out", str(out)).exit_code == 0
    with State.open(out, create=False) as state:
        found = state.file(deb.name)
    assert found is not None and found[0].stamp == stamp(pooled)
