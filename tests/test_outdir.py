"""An output directory whose index.json is a directory: build and merge refuse it with
one error line and write nothing; merge refuses a shard whose index.json is one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from tests.small_tree import build, make_tree


def tree_of(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its inode and link count."""
    return {
        str(p.relative_to(root)): (os.lstat(p).st_ino, os.lstat(p).st_nlink)
        for p in sorted(root.rglob("*"))
    }


def out_with_an_index_directory(out: Path) -> dict[str, tuple[int, int]]:
    (out / "index.json").mkdir(parents=True)
    (out / "index.json" / "kept").write_text("not gfxpack's")
    return tree_of(out)


@pytest.fixture
def built(tmp_path) -> Path:
    """A small whole build, which merge takes as its one input."""
    make_tree(tmp_path / "art")
    result = build(tmp_path, tmp_path / "art", out=tmp_path / "built")
    assert result.exit_code == 0, result.output
    return tmp_path / "built"


def test_build_into_an_out_whose_index_is_a_directory(tmp_path):
    make_tree(tmp_path / "art")
    out = tmp_path / "out"
    before = out_with_an_index_directory(out)
    result = build(tmp_path, tmp_path / "art", out=out)
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"error: {out / 'index.json'}: is a directory, where the build's index goes; "
        "remove it or choose another output directory\n"
    )
    assert tree_of(out) == before


def test_merge_into_an_out_whose_index_is_a_directory(built, tmp_path):
    out = tmp_path / "merged"
    before = out_with_an_index_directory(out)
    shard = tree_of(built)
    result = CliRunner().invoke(cli, ["merge", str(built), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"error: {out / 'index.json'}: is a directory, where the build's index goes; "
        "remove it or choose another output directory\n"
    )
    assert tree_of(out) == before and tree_of(built) == shard


def test_merge_of_a_shard_whose_index_is_a_directory(tmp_path):
    shard = tmp_path / "shard"
    before = out_with_an_index_directory(shard)
    out = tmp_path / "merged"
    result = CliRunner().invoke(cli, ["merge", str(shard), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"error: {shard / 'index.json'}: is a directory, expected a regular file\n"
    )
    assert tree_of(shard) == before and not out.exists()
