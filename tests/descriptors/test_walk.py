"""The one descriptor walker and its two rules: an installed tree is read as the provider
reads it (hidden paths walked, file symlinks count), an authored tree by the packager's
rule (hidden entries skipped, every symlink refused), and pack and lint --authored agree."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.descriptors import Diagnostics, Level
from gfxpack.descriptors.walk import descriptor_files
from tests.descriptors.test_false_greens import AUTHORED, SYMBOLS, build_code_objects, pack_args


def run(*args: str):
    return CliRunner().invoke(cli, ["descriptors", *args])


def authored_copy(tmp_path: Path) -> Path:
    tree = tmp_path / "authored"
    shutil.copytree(AUTHORED, tree)
    return tree


def test_hidden_entries_are_walked_in_an_installed_tree_and_skipped_in_an_authored_one(tmp_path):
    tree = authored_copy(tmp_path)
    (tree / ".drafts").mkdir()
    (tree / ".drafts" / "draft.ued.json").write_text("{ not json")
    (tree / ".scratch.umd.json").write_text("{ not json either")
    installed = {p for p, _ in descriptor_files(tree, Diagnostics())}
    authored = {p for p, _ in descriptor_files(tree, Diagnostics(), authored=True)}
    assert installed - authored == {f"{tree}/.drafts/draft.ued.json", f"{tree}/.scratch.umd.json"}
    assert len(authored) == 15
    # pack and lint --authored read the same files: neither sees the drafts.
    linted = run("lint", "--authored", "--root", str(tree), "--symbols", str(SYMBOLS))
    assert linted.exit_code == 0, linted.output
    assert linted.stdout.splitlines()[-1] == "15 files (authored sources), 2 engine(s) loaded: OK"
    out = tmp_path / "out"
    packed = run(*pack_args(out, build_code_objects(tmp_path / "co"), authored=tree))
    assert packed.exit_code == 0, packed.output
    assert not list(out.rglob(".*"))


def test_a_directory_symlink_in_an_authored_tree_is_refused_by_pack_and_lint(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = outside / "elsewhere.umd.json"
    shutil.copy(AUTHORED / "pointwise" / "operation_is_add.umd.json", planted)
    before = (planted.stat().st_ino, planted.stat().st_nlink, planted.read_bytes())
    tree = authored_copy(tmp_path)
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    refusal = f'"{tree}/linked" is a symlink; an authored tree is read from regular files only'

    out = tmp_path / "out"
    packed = run(*pack_args(out, build_code_objects(tmp_path / "co"), authored=tree))
    assert packed.exit_code == 1
    assert packed.stderr == f"error: D102: {refusal}\n"
    assert not out.exists() and not list(tmp_path.glob(".out*"))

    linted = run("lint", "--authored", "--root", str(tree), "--symbols", str(SYMBOLS))
    assert linted.exit_code == 1
    assert refusal in linted.stdout
    # The installed rule: a directory symlink is not followed, and not an error.
    walked = Diagnostics()
    assert f"{tree}/linked/elsewhere.umd.json" not in dict(descriptor_files(tree, walked))
    assert not walked.at_least(Level.ERROR)
    assert (planted.stat().st_ino, planted.stat().st_nlink, planted.read_bytes()) == before


def test_a_file_symlink_counts_in_an_installed_tree_and_is_refused_in_an_authored_one(tmp_path):
    tree = authored_copy(tmp_path)
    source = tree / "pointwise" / "operation_is_add.umd.json"
    moved = tmp_path / "store.umd.json"
    source.rename(moved)
    source.symlink_to(moved)
    assert (str(source), ".umd.json") in descriptor_files(tree, Diagnostics())
    walked = Diagnostics()
    assert str(source) not in dict(descriptor_files(tree, walked, authored=True))
    assert [d.code for d in walked.at_least(Level.ERROR)] == ["D102"]
