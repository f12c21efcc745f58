"""Trees reached through descriptors: no symlink on the way followed, no FIFO opened,
nothing written twice; the planted files outside keep their inode, links and bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gfxpack.safe_tree import MAX_DEPTH, Refused, Tree


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "shadow").write_text("root:secret\n")
    return secret


def state(path: Path) -> tuple[int, int, bytes]:
    info = path.lstat()
    return info.st_ino, info.st_nlink, path.read_bytes()


def test_a_symlinked_directory_on_the_way_is_refused(tmp_path, planted):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "lib").symlink_to(planted)
    with Tree(tmp_path / "tree") as tree, pytest.raises(Refused) as refused:
        tree.open_file(("lib", "shadow"))
    assert (
        str(refused.value)
        == f"{tmp_path / 'tree' / 'lib'}: is a symlink; gfxpack does not follow it"
    )


def test_linking_a_symlink_swapped_in_is_refused_and_undone(tmp_path, planted):
    """The entry itself is linked (a symlink, here), never its target; the link made is
    removed again."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "file").symlink_to(planted / "shadow")
    before = state(planted / "shadow")
    destination = tmp_path / "out"
    with Tree(tmp_path / "tree") as tree, pytest.raises(Refused) as refused:
        tree.link(("file",), destination)
    assert str(refused.value).endswith("file: is a symlink, expected a regular file")
    assert not os.path.lexists(destination)
    assert state(planted / "shadow") == before


def test_a_regular_file_is_linked(tmp_path):
    (tmp_path / "tree" / "lib").mkdir(parents=True)
    (tmp_path / "tree" / "lib" / "x").write_text("x\n")
    with Tree(tmp_path / "tree") as tree:
        assert tree.link(("lib", "x"), tmp_path / "out")
    assert (tmp_path / "out").stat().st_ino == (tmp_path / "tree" / "lib" / "x").stat().st_ino


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    (tmp_path / "tree").mkdir()
    os.mkfifo(tmp_path / "tree" / "pipe")
    with (
        Tree(tmp_path / "tree") as tree,
        pytest.raises(Refused, match=r"pipe: not a regular file \(a FIFO\)"),
    ):
        tree.open_file(("pipe",))


def test_a_written_tree_writes_nothing_twice_or_through_a_link(tmp_path, planted):
    (tmp_path / "out").mkdir()
    with Tree(tmp_path / "out", writing=True) as tree:
        os.close(tree.create_file(("a", "x")))
        with pytest.raises(Refused, match="already written by an earlier entry"):
            tree.create_file(("a", "x"))
        tree.make_symlink(str(planted), ("link",))
        with pytest.raises(Refused, match="is a symlink"):
            tree.create_file(("link", "shadow"))
    assert sorted(p.name for p in planted.iterdir()) == ["shadow"]


def test_a_path_deeper_than_the_limit_is_refused(tmp_path):
    (tmp_path / "tree").mkdir()
    with Tree(tmp_path / "tree") as tree, pytest.raises(Refused, match="directories deep"):
        tree.directory(("a",) * (MAX_DEPTH + 1))
