"""Hostile split inputs: symlinks out of the tree, odd names and files, a full or
read-only OUT. Each is one ``error:`` line from ``gfxpack split``, OUT is not created,
and a directory planted outside the input keeps its files (same inode, same link
count, same bytes): nothing was linked to, copied from or written through."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from gfxpack.fatbin import source as source_module
from tests.conftest import tmpfs
from tests.fatbin.conftest import HipBuild

PREFIX = "hip/demo/stage"
SYMLINKED_PREFIX = (
    "is a symlink; the directories an artifact_manifest.txt line names must be real "
    "directories (gfxpack never follows a directory symlink)"
)
NOT_UTF8 = (
    "name is not valid UTF-8; dpkg and rpm accept only UTF-8 names without control characters"
)


def plant(tmp_path: Path) -> dict[Path, tuple[int, int, bytes]]:
    """A directory outside every input, as /etc/ssl would be: its files, each with its
    inode, link count and bytes."""
    secret = tmp_path / "elsewhere"
    (secret / "private").mkdir(parents=True)
    (secret / "shadow").write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    (secret / "private" / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    return {path: _state(path) for path in secret.rglob("*") if path.is_file()}


def _state(path: Path) -> tuple[int, int, bytes]:
    info = path.stat()
    return info.st_ino, info.st_nlink, path.read_bytes()


def untouched(planted: dict[Path, tuple[int, int, bytes]]) -> bool:
    return len(planted) == 2 and all(_state(path) == was for path, was in planted.items())


def therock(root: Path) -> Path:
    """A TheRock artifacts directory: demo_lib_gfx942 naming PREFIX in its manifest, a
    library without device code and its symlink there; returns the prefix's directory."""
    artifact = root / "demo_lib_gfx942"
    stage = artifact / PREFIX
    (stage / "lib").mkdir(parents=True)
    (artifact / "artifact_manifest.txt").write_text(f"{PREFIX}\n")
    (stage / "lib" / "libdemo.so.1").write_bytes(b"\x7fELF host code only")
    (stage / "lib" / "libdemo.so").symlink_to("libdemo.so.1")
    return stage


def install_tree(root: Path) -> Path:
    """An unpacked package: usr/lib with a library and its symlink."""
    (root / "usr" / "lib").mkdir(parents=True)
    (root / "usr" / "lib" / "libdemo.so.1").write_bytes(b"\x7fELF host code only")
    (root / "usr" / "lib" / "libdemo.so").symlink_to("libdemo.so.1")
    return root


def split(source: Path, out: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["split", str(source), "--out", str(out), *args])


def assert_refused(result: Result, out: Path, *messages: str) -> None:
    """Exit 1 with exactly these ``error:`` lines; no OUT, no partial one beside it."""
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [f"error: {message}" for message in messages]
    assert not os.path.lexists(out)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


def _replace_with_symlink(directory: Path, target: Path) -> None:
    shutil.rmtree(directory)
    directory.symlink_to(target)


# --- symlinks on the way to the content (the rule of build's artifact reader) ----------------


@pytest.mark.parametrize("component", ["hip/demo/stage", "hip/demo", "hip"])
def test_a_symlinked_prefix_directory_is_refused(tmp_path, component):
    planted = plant(tmp_path)
    stage = therock(tmp_path / "art")
    link = tmp_path / "art" / "demo_lib_gfx942" / component
    assert link == stage or link in stage.parents
    # The planted directory holds what the prefix would: every file is found through it.
    below = tmp_path / "elsewhere" / PREFIX[len(component) + 1 :]
    (below / "lib").mkdir(parents=True, exist_ok=True)
    os.link(tmp_path / "elsewhere" / "shadow", below / "lib" / "libshadow.so")
    planted = {path: _state(path) for path in planted}
    _replace_with_symlink(link, tmp_path / "elsewhere")
    out = tmp_path / "out"
    assert_refused(split(tmp_path / "art", out), out, f"{link}: {SYMLINKED_PREFIX}")
    assert untouched(planted)


def test_a_symlinked_prefix_of_a_copied_artifact_is_refused(tmp_path):
    planted = plant(tmp_path)
    therock(tmp_path / "art")
    dev = tmp_path / "art" / "demo_dev_generic"
    (dev / "hip" / "demo").mkdir(parents=True)
    (dev / "artifact_manifest.txt").write_text(f"{PREFIX}\n")
    (dev / PREFIX).symlink_to(tmp_path / "elsewhere")
    out = tmp_path / "out"
    assert_refused(split(tmp_path / "art", out), out, f"{dev / PREFIX}: {SYMLINKED_PREFIX}")
    assert untouched(planted)


def test_a_symlinked_artifact_directory_is_refused(tmp_path):
    planted = plant(tmp_path)
    therock(tmp_path / "elsewhere" / "art")
    planted = {path: _state(path) for path in planted}
    (tmp_path / "art").mkdir()
    artifact = tmp_path / "art" / "demo_lib_gfx942"
    artifact.symlink_to(tmp_path / "elsewhere" / "art" / "demo_lib_gfx942")
    out = tmp_path / "out"
    assert_refused(
        split(tmp_path / "art", out),
        out,
        f"{artifact}: is a symlink; artifact directories must be real directories "
        "(gfxpack never follows a directory symlink)",
    )
    assert untouched(planted)


@pytest.mark.parametrize("name", ["artifact_manifest.txt", "therock_manifest.json"])
def test_a_symlinked_manifest_is_not_read(tmp_path, name):
    planted = plant(tmp_path)
    therock(tmp_path / "art")
    manifest = tmp_path / "art" / ("demo_lib_gfx942" if name.startswith("artifact") else "")
    manifest = manifest / name
    manifest.unlink(missing_ok=True)
    manifest.symlink_to(tmp_path / "elsewhere" / "shadow")
    out = tmp_path / "out"
    assert_refused(
        split(tmp_path / "art", out), out, f"{manifest}: is a symlink; gfxpack does not follow it"
    )
    assert untouched(planted)


def test_an_install_tree_that_is_a_symlink_is_refused(tmp_path):
    planted = plant(tmp_path)
    (tmp_path / "tree").symlink_to(tmp_path / "elsewhere")
    out = tmp_path / "out"
    assert_refused(
        split(tmp_path / "tree", out, "--name", "demo_lib"),
        out,
        f"{tmp_path / 'tree'}: is a symlink; give the directory it points to "
        "(gfxpack never follows a directory symlink)",
    )
    assert untouched(planted)


# --- symlinks inside the content: kept as symlinks, and only when they stay inside --------


def test_symlinks_out_of_the_tree_are_refused(tmp_path):
    planted = plant(tmp_path)
    stage = therock(tmp_path / "art")
    (stage / "ssl").symlink_to(tmp_path / "elsewhere")
    (stage / "lib" / "up").symlink_to("../../../../../elsewhere")
    out = tmp_path / "out"
    leaves = f"leaves {stage} (a packaged symlink must point inside it)"
    absolute = (
        f"is absolute; only a relative target is known to stay inside {stage} "
        "(a packaged symlink must point inside it)"
    )
    assert_refused(
        split(tmp_path / "art", out),
        out,
        f"{stage}/ssl: symlink to '{tmp_path / 'elsewhere'}' {absolute}",
        f"{stage}/lib/up: symlink to '../../../../../elsewhere' {leaves}",
    )
    assert untouched(planted)


def test_symlinked_subdirectories_of_an_install_tree_are_not_followed_out(tmp_path):
    planted = plant(tmp_path)
    tree = install_tree(tmp_path / "tree")
    (tree / "usr" / "lib" / "ssl").symlink_to(tmp_path / "elsewhere")
    (tree / "etc").symlink_to("../elsewhere")
    out = tmp_path / "out"
    leaves = f"leaves {tree} (a packaged symlink must point inside it)"
    absolute = (
        f"is absolute; only a relative target is known to stay inside {tree} "
        "(a packaged symlink must point inside it)"
    )
    assert_refused(
        split(tree, out, "--name", "demo_lib"),
        out,
        f"{tree}/etc: symlink to '../elsewhere' {leaves}",
        f"{tree}/usr/lib/ssl: symlink to '{tmp_path / 'elsewhere'}' {absolute}",
    )
    assert untouched(planted)


def test_a_symlink_inside_the_tree_is_kept_as_a_symlink(tmp_path):
    """A directory symlink that stays inside is recreated, never walked: the split
    holds the link and nothing below it."""
    planted = plant(tmp_path)
    tree = install_tree(tmp_path / "tree")
    (tree / "lib64").symlink_to("usr/lib")
    out = tmp_path / "out"
    result = split(tree, out, "--name", "demo_lib", "--json")
    assert result.exit_code == 0, result.output
    stage = out / "demo_lib_generic" / "stage"
    assert os.readlink(stage / "lib64") == "usr/lib"
    assert os.readlink(stage / "usr" / "lib" / "libdemo.so") == "libdemo.so.1"
    assert (stage / "usr" / "lib" / "libdemo.so.1").stat().st_ino == (
        tree / "usr" / "lib" / "libdemo.so.1"
    ).stat().st_ino  # hard-linked, as split does
    assert sorted(p.name for p in stage.iterdir()) == ["lib64", "usr"]
    assert untouched(planted)


# --- names and file types --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"latin1-\xe9.so", "latin1-\\xe9.so"),
        (b"surrogate-\xed\xa0\x80.so", "surrogate-\\xed\\xa0\\x80.so"),
    ],
    ids=["not-utf8", "lone-surrogate"],
)
@pytest.mark.parametrize("layout", ["therock", "tree"])
def test_a_name_that_is_not_utf8_is_one_error(tmp_path, name, shown, layout):
    """Undecodable bytes, and the UTF-8 form of a lone surrogate (which no UTF-8
    decoder accepts), both arrive in Python as lone surrogates."""
    if layout == "therock":
        lib, args = therock(tmp_path / "art") / "lib", ()
        source = tmp_path / "art"
    else:
        source = install_tree(tmp_path / "tree")
        lib, args = source / "usr" / "lib", ("--name", "demo_lib")
    with open(os.path.join(os.fsencode(lib), name), "wb") as file:
        file.write(b"x")
    out = tmp_path / "out"
    assert_refused(split(source, out, *args), out, f"{lib}/{shown}: {NOT_UTF8}")


def test_an_artifact_directory_name_that_is_not_utf8_is_one_error(tmp_path):
    therock(tmp_path / "art")
    os.mkdir(os.path.join(os.fsencode(tmp_path / "art"), b"demo_lib_gfx\xed\xa0\x80"))
    out = tmp_path / "out"
    assert_refused(
        split(tmp_path / "art", out),
        out,
        f"{tmp_path / 'art'}/demo_lib_gfx\\xed\\xa0\\x80: name is not valid UTF-8",
    )


def test_a_fifo_in_the_input_is_one_error_and_no_hang(tmp_path):
    stage = therock(tmp_path / "art")
    os.mkfifo(stage / "lib" / "pipe")
    out = tmp_path / "out"
    assert_refused(
        split(tmp_path / "art", out),
        out,
        f"{stage}/lib/pipe: is a FIFO; only regular files, directories and symlinks can be "
        "packaged",
    )


def test_prefixes_inside_one_another_are_refused(tmp_path):
    stage = therock(tmp_path / "art")
    manifest = tmp_path / "art" / "demo_lib_gfx942" / "artifact_manifest.txt"
    manifest.write_text(f"{PREFIX}\n{PREFIX}/lib\n")
    assert (stage / "lib").is_dir()
    out = tmp_path / "out"
    assert_refused(
        split(tmp_path / "art", out),
        out,
        f"{manifest}: '{PREFIX}/lib' lies inside '{PREFIX}'; split writes each file once, "
        "so prefixes must not overlap",
    )


@pytest.mark.slow
def test_an_input_file_where_split_writes_an_archive_is_neither_truncated_nor_replaced(
    hip_build: HipBuild, tmp_path: Path
):
    """The tree holds, where the gfx90a archive goes, a hard link of a planted file:
    split refuses instead of writing the archive into it."""
    planted = plant(tmp_path)
    tree = install_tree(tmp_path / "tree")
    shutil.copy2(hip_build.two_files, tree / "usr" / "lib" / "libtwo.so.1")
    (tree / ".kpack").mkdir()
    os.link(tmp_path / "elsewhere" / "shadow", tree / ".kpack" / "demo_lib_gfx90a.kpack")
    planted = {path: _state(path) for path in planted}
    out = tmp_path / "out"
    assert_refused(
        split(tree, out, "--name", "demo_lib", "-j", "1"),
        out,
        f"{out}: demo_lib_gfx90a/stage/.kpack/demo_lib_gfx90a.kpack: written twice; the "
        "input holds a file where split puts one of its own",
    )
    assert untouched(planted)


# --- a full or read-only OUT -----------------------------------------------------------------


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path):
    stage = therock(tmp_path / "art")
    (stage / "lib" / "big.dat").write_bytes(os.urandom(256 << 10))
    with tmpfs(tmp_path / "full", "size=64k") as full:
        out = full / "split"
        assert_refused(
            split(tmp_path / "art", out),
            out,
            f"{out}: cannot write demo_lib_generic/{PREFIX}/lib/big.dat: No space left on device",
        )
        assert list(full.iterdir()) == []


def test_a_read_only_out_is_one_line(tmp_path):
    therock(tmp_path / "art")
    with tmpfs(tmp_path / "ro", "ro,size=64k") as read_only:
        out = read_only / "split"
        assert_refused(
            split(tmp_path / "art", out),
            out,
            f"{out}: cannot write in {read_only}: Read-only file system",
        )


# --- the input read after its walk: nothing swapped in meanwhile is followed -----------------


def swap_after_the_walk(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run ``swap`` once split's walk has checked the whole input, before it writes:
    the race of someone else changing the input while split runs."""
    walked = source_module._content

    def then_swap(root: Path, relative: str, problems: list[str]) -> Any:
        content = walked(root, relative, problems)
        swap()
        return content

    monkeypatch.setattr(source_module, "_content", then_swap)


def test_a_directory_swapped_for_a_symlink_after_the_walk_is_not_followed(tmp_path, monkeypatch):
    """``lib`` walked as a directory, then made a symlink to a planted directory with a
    file of the same name: split neither links nor copies the planted file."""
    planted = plant(tmp_path)
    stage = therock(tmp_path / "art")
    (tmp_path / "elsewhere" / "libdemo.so.1").write_text("root:secret\n")
    planted = {path: _state(path) for path in planted} | {
        tmp_path / "elsewhere" / "libdemo.so.1": _state(tmp_path / "elsewhere" / "libdemo.so.1")
    }

    def swap() -> None:
        (stage / "lib").rename(tmp_path / "lib.walked")
        (stage / "lib").symlink_to(tmp_path / "elsewhere")

    swap_after_the_walk(monkeypatch, swap)
    out = tmp_path / "out"
    assert_refused(
        split(tmp_path / "art", out),
        out,
        f"{stage}/lib: changed while it was split (now a symlink)",
    )
    assert all(_state(path) == was for path, was in planted.items())


def test_a_file_swapped_for_a_fifo_after_the_walk_is_refused_without_blocking(
    tmp_path, monkeypatch
):
    stage = therock(tmp_path / "art")
    library = stage / "lib" / "libdemo.so.1"

    def swap() -> None:
        library.unlink()
        os.mkfifo(library)

    swap_after_the_walk(monkeypatch, swap)
    out = tmp_path / "out"
    assert_refused(split(tmp_path / "art", out), out, f"{library}: not a regular file (a FIFO)")


def test_a_symlink_climbing_after_a_name_is_refused_as_join_and_build_refuse_it(tmp_path):
    """``x/../y`` was kept by split and then refused by join: one rule for all three."""
    tree = install_tree(tmp_path / "tree")
    (tree / "usr" / "lib" / "up").symlink_to("libdemo.so/../libdemo.so.1")
    out = tmp_path / "out"
    assert_refused(
        split(tree, out, "--name", "demo_lib"),
        out,
        f"{tree}/usr/lib/up: symlink to 'libdemo.so/../libdemo.so.1' has '..' after a name "
        f"(which may climb out of {tree} through another symlink) (a packaged symlink must "
        "point inside it)",
    )


def test_force_does_not_replace_a_directory_whose_record_is_a_symlink(tmp_path):
    """--force replaces only an earlier split: a directory holding a symlink named like
    the record (to a real record elsewhere) is not one."""
    install_tree(tmp_path / "tree")
    assert split(tmp_path / "tree", tmp_path / "first", "--name", "demo_lib").exit_code == 0
    out = tmp_path / "precious"
    out.mkdir()
    (out / "data").write_text("keep me\n")
    (out / "gfxpack-split.msgpack").symlink_to(tmp_path / "first" / "gfxpack-split.msgpack")
    result = split(tmp_path / "tree", out, "--name", "demo_lib", "--force")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {out}: not the output of an earlier split; --force will not replace it\n"
    )
    assert (out / "data").read_text() == "keep me\n"


def test_a_file_swapped_for_a_symlink_after_the_walk_is_neither_linked_nor_copied(
    tmp_path, monkeypatch
):
    planted = plant(tmp_path)
    stage = therock(tmp_path / "art")
    library = stage / "lib" / "libdemo.so.1"

    def swap() -> None:
        library.unlink()
        library.symlink_to(tmp_path / "elsewhere" / "shadow")

    swap_after_the_walk(monkeypatch, swap)
    out = tmp_path / "out"
    assert_refused(split(tmp_path / "art", out), out, f"{library}: not a regular file (a symlink)")
    assert untouched(planted)
