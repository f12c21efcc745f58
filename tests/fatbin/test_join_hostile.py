"""join against a forged split record, a tampered split and a full or read-only disk.

Each test splits a small TheRock artifacts directory for real, then forges its
``gfxpack-split.msgpack`` (or plants links in the split) and runs ``gfxpack join``:
one ``error:`` line, no OUT, and the files planted outside OUT keep their inode,
link count and bytes.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from gfxpack.fatbin.join import join_tree, link_target_problem
from gfxpack.fatbin.split import INDEX, LITERALS, split_tree
from tests.fatbin.conftest import HipBuild
from tests.test_build_faults import tmpfs

PREFIX = "hip/demo/stage"
FAT = "demo_lib_gfx9X-all"
GENERIC = "demo_lib_generic"  # where split puts the host files of FAT
DEV = "demo_dev_generic"  # a directory split copies as it is


def make_artifacts(root: Path) -> Path:
    """A TheRock artifacts directory without device code: one fat artifact (a library,
    a symlink, a subdirectory) and one generic artifact that split copies."""
    stage = root / FAT / PREFIX
    (stage / "lib" / "sub").mkdir(parents=True)
    (root / FAT / "artifact_manifest.txt").write_text(f"{PREFIX}\n")
    (stage / "lib" / "libdemo.so.1").write_bytes(b"\x7fELF host library" * 50)
    (stage / "lib" / "libdemo.so").symlink_to("libdemo.so.1")
    (stage / "lib" / "sub" / "data.txt").write_text("data\n")
    dev = root / DEV / PREFIX / "include"
    dev.mkdir(parents=True)
    (root / DEV / "artifact_manifest.txt").write_text(f"{PREFIX}\n")
    (dev / "demo.h").write_text("int demo(void);\n")
    (dev / "demo_link.h").symlink_to("demo.h")
    return root


class Planted:
    """Files outside OUT that an attack aims at: their inode, link count and bytes
    must not change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "outside"
        (self.dir / "ssl").mkdir(parents=True)
        self.victim = self.dir / "victim"
        self.victim.write_bytes(b"precious\n")
        self.shadow = self.dir / "shadow"
        self.shadow.write_bytes(b"root:secret-hash:19000::::::\n")
        os.chmod(self.shadow, 0o600)
        (self.dir / "ssl" / "cert.pem").write_bytes(b"-----BEGIN CERTIFICATE-----\n")
        self.before = self.state()

    def state(self) -> dict[str, tuple[int, int, bytes]]:
        return {
            str(path.relative_to(self.dir)): (
                path.lstat().st_ino,
                path.lstat().st_nlink,
                path.read_bytes() if path.is_file() else b"",
            )
            for path in sorted(self.dir.rglob("*"))
        }

    def unchanged(self) -> bool:
        return self.state() == self.before


@pytest.fixture
def split(tmp_path: Path) -> Path:
    out = tmp_path / "split"
    split_tree(make_artifacts(tmp_path / "artifacts"), out)
    return out


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    return Planted(tmp_path)


def forge(split: Path, change: Callable[[dict[str, Any]], None]) -> None:
    record = split / INDEX
    index = msgpack.unpackb(record.read_bytes(), raw=False)
    change(index)
    record.write_bytes(msgpack.packb(index, use_bin_type=True))


def files(index: dict[str, Any]) -> list[list[Any]]:
    entries: list[list[Any]] = index["jobs"][0]["files"]
    return entries


def entry(index: dict[str, Any], original_end: str) -> list[Any]:
    return next(e for e in files(index) if e[1].endswith(original_end))


def join(split: Path, out: Path, *options: str) -> Result:
    return CliRunner().invoke(cli, ["join", str(split), "--out", str(out), *options])


def refused(result: Result, *expected: str) -> str:
    """The one error line of a refused join, checked to hold ``expected``."""
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def nothing_left(out: Path) -> None:
    """Neither OUT nor its temporary directory is left beside it."""
    assert not os.path.lexists(out)
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


def test_the_unforged_split_joins_into_copies_sharing_no_inode(split: Path, tmp_path: Path):
    out = tmp_path / "joined"
    result = join(split, out)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"wrote {out}: 0 binaries joined, each checked identical to its original (sha256); "
        "the other files are copies of the split's\n"
    )
    original = tmp_path / "artifacts"
    joined = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert joined == sorted(str(p.relative_to(original)) for p in original.rglob("*"))
    library = f"{FAT}/{PREFIX}/lib/libdemo.so.1"
    assert (out / library).read_bytes() == (original / library).read_bytes()
    assert os.readlink(out / FAT / PREFIX / "lib" / "libdemo.so") == "libdemo.so.1"
    assert os.readlink(out / DEV / PREFIX / "include" / "demo_link.h") == "demo.h"
    split_inodes = {p.lstat().st_ino for p in split.rglob("*")}
    assert not split_inodes & {p.lstat().st_ino for p in out.rglob("*") if p.is_file()}


def test_a_destination_climbing_out_of_out_is_refused(split, tmp_path, planted):
    forge(split, lambda index: entry(index, "lib/sub/data.txt").__setitem__(1, "../outside/victim"))
    out = tmp_path / "joined"
    refused(
        join(split, out),
        f"{split / INDEX}: /jobs/0/files/",
        "path in OUT '../outside/victim': expected a relative path inside it",
    )
    assert planted.unchanged()
    nothing_left(out)


@pytest.mark.parametrize("kind", ["file", "dir", "symlink"])
def test_an_absolute_destination_is_refused(split, tmp_path, planted, kind):
    target = planted.dir / "planted"

    def change(index: dict[str, Any]) -> None:
        item = entry(index, {"file": "data.txt", "dir": "lib/sub", "symlink": "libdemo.so"}[kind])
        item[1] = str(target)

    forge(split, change)
    out = tmp_path / "joined"
    refused(join(split, out), f"path in OUT {str(target)!r}", "no leading '/'")
    assert not os.path.lexists(target)
    assert planted.unchanged()
    nothing_left(out)


def test_a_source_outside_the_split_is_never_linked_or_copied(split, tmp_path, planted):
    # The old join hard-linked this "file" into OUT.
    forge(split, lambda index: entry(index, "data.txt").__setitem__(0, "../outside/shadow"))
    out = tmp_path / "joined"
    refused(join(split, out), "path in the split '../outside/shadow'")
    assert planted.unchanged()
    nothing_left(out)


def test_a_source_that_is_a_symlink_out_of_the_split_is_refused(split, tmp_path, planted):
    forge(
        split,
        lambda index: files(index).append([f"{GENERIC}/shadow", "innocent.txt", "file", None]),
    )
    (split / GENERIC / "shadow").symlink_to(planted.shadow)
    out = tmp_path / "joined"
    refused(join(split, out), f"{split / GENERIC / 'shadow'}: not a regular file (a symlink)")
    assert planted.unchanged()
    nothing_left(out)


def test_a_source_below_a_symlinked_directory_is_refused(split, tmp_path, planted):
    forge(
        split,
        lambda index: files(index).append([f"{GENERIC}/etc/shadow", "innocent.txt", "file", None]),
    )
    (split / GENERIC / "etc").symlink_to(planted.dir)
    out = tmp_path / "joined"
    refused(join(split, out), f"{split / GENERIC / 'etc'}: is a symlink; join never follows one")
    assert planted.unchanged()
    nothing_left(out)


def test_a_symlink_entry_pointing_out_is_refused(split, tmp_path, planted):
    # The split's own symlink, retargeted: a record entry recreates it in OUT.
    link = split / GENERIC / PREFIX / "lib" / "libdemo.so"
    link.unlink()
    link.symlink_to(planted.dir)
    out = tmp_path / "joined"
    refused(
        join(split, out),
        f"{link}: the symlink points to the absolute path {str(planted.dir)!r}",
        "join recreates only symlinks that stay inside OUT",
    )
    assert planted.unchanged()
    nothing_left(out)


def test_nothing_is_written_through_a_symlink_made_earlier_in_the_run(split, tmp_path, planted):
    """A symlink entry first makes ``a -> .`` (inside OUT, so recreated), then a file
    entry writes ``a/x``: the link is never followed, whatever it points to."""
    (split / GENERIC / "a").symlink_to(".")

    def change(index: dict[str, Any]) -> None:
        files(index)[:0] = [
            [f"{GENERIC}/a", "a", "symlink", None],
            [f"{GENERIC}/{PREFIX}/lib/sub/data.txt", "a/x", "file", None],
        ]

    forge(split, change)
    out = tmp_path / "joined"
    refused(join(split, out), "/jobs/0/files/1:", f"{out / 'a'}: is a symlink; join never follows")
    assert planted.unchanged()
    nothing_left(out)


def test_an_entry_written_twice_is_refused(split, tmp_path, planted):
    def change(index: dict[str, Any]) -> None:
        library = entry(index, "libdemo.so.1")
        files(index).append([library[0], library[1], "file", None])

    forge(split, change)
    out = tmp_path / "joined"
    refused(join(split, out), "libdemo.so.1: already written by an earlier entry")
    nothing_left(out)


def test_a_copied_directory_that_is_a_symlink_out_is_refused(split, tmp_path, planted):
    # The old join copied /etc/ssl into OUT this way.
    (split / "evil_dev_generic").symlink_to(planted.dir / "ssl")
    forge(split, lambda index: index["copied"].append("evil_dev_generic"))
    out = tmp_path / "joined"
    refused(
        join(split, out),
        f"{split / INDEX}: /copied/1: {split / 'evil_dev_generic'}: is a symlink",
    )
    assert planted.unchanged()
    nothing_left(out)


@pytest.mark.parametrize("how", ["absolute", "relative"])
def test_a_copied_tree_holding_a_symlink_out_is_refused(split, tmp_path, planted, how):
    include = split / DEV / PREFIX / "include"
    link = include / "ssl"
    # Five levels below OUT: six '..' leave it.
    link.symlink_to(planted.dir if how == "absolute" else "../" * 6 + "outside")
    out = tmp_path / "joined"
    line = refused(join(split, out), f"/copied/0: {link}: the symlink points to")
    assert ("absolute path" in line) == (how == "absolute")
    assert planted.unchanged()
    nothing_left(out)


def test_a_fifo_in_a_copied_tree_is_refused_without_opening_it(split, tmp_path):
    os.mkfifo(split / DEV / "fifo")
    out = tmp_path / "joined"
    refused(join(split, out), f"{split / DEV / 'fifo'}: is a FIFO; join copies only regular")
    nothing_left(out)


def test_a_record_or_data_file_that_is_a_symlink_is_refused(split, tmp_path, planted):
    (split / LITERALS).unlink()
    (split / LITERALS).symlink_to(planted.shadow)
    out = tmp_path / "joined"
    refused(join(split, out), f"{split / LITERALS}: not a regular file (a symlink)")
    (split / LITERALS).unlink()
    record = split / INDEX
    shutil.move(record, planted.dir / "record")
    record.symlink_to(planted.dir / "record")
    refused(join(split, out), f"{record}: not a regular file (a symlink)")
    assert planted.state() == {**planted.before, "record": planted.state()["record"]}
    nothing_left(out)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda index: index.__setitem__("jobs", {}), "/jobs: expected a list"),
        (lambda index: index.__setitem__("copied", ["a/../.."]), "/copied/0: directory 'a/../..'"),
        (lambda index: files(index).__setitem__(0, "x"), "/jobs/0/files/0: expected [path"),
        (lambda index: files(index)[0].__setitem__(2, "fifo"), "unknown kind 'fifo'"),
        (lambda index: files(index)[0].__setitem__(1, "a//b"), "empty, '.' or '..' part"),
        (lambda index: files(index)[0].__setitem__(1, "a\0b"), "no NUL"),
        (lambda index: files(index)[0].__setitem__(1, "../a\nb"), "'../a\\nb'"),
        (lambda index: files(index)[0].__setitem__(1, 7), "expected a relative path, found 7"),
        (lambda index: files(index)[0].__setitem__(1, "a/" * 300 + "x"), "256 directories deep"),
        (lambda index: index.__setitem__("therock_manifest", 3), "/therock_manifest: expected"),
    ],
)
def test_a_malformed_record_entry_is_one_line(split, tmp_path, change, expected):
    forge(split, change)
    out = tmp_path / "joined"
    refused(join(split, out), expected)
    nothing_left(out)


def test_a_failed_forced_join_leaves_the_old_out(split, tmp_path, planted):
    out = tmp_path / "joined"
    out.mkdir()
    (out / "kept").write_text("an earlier join\n")
    forge(split, lambda index: entry(index, "data.txt").__setitem__(1, "../outside/victim"))
    refused(join(split, out, "--force"), "path in OUT '../outside/victim'")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert [p.name for p in out.iterdir()] == ["kept"]
    assert planted.unchanged()


def test_out_inside_or_around_the_split_is_refused(split, tmp_path):
    refused(join(split, split / "joined"), "must not be inside the split")
    refused(join(split, tmp_path, "--force"), "must not contain the split")
    assert (split / INDEX).is_file()


def test_setuid_bits_are_not_copied(split, tmp_path):
    library = split / GENERIC / PREFIX / "lib" / "libdemo.so.1"
    os.chmod(library, 0o4755)
    join_tree(split, tmp_path / "joined")
    copied = tmp_path / "joined" / FAT / PREFIX / "lib" / "libdemo.so.1"
    assert stat.S_IMODE(copied.stat().st_mode) == 0o755


@pytest.mark.parametrize(
    ("target", "where", "allowed"),
    [
        ("libdemo.so.1", "lib/libdemo.so", True),
        ("../include/demo.h", "stage/lib/x", True),
        ("./a/./b", "x", True),
        ("..", "lib/x", True),
        ("../..", "lib/x", False),
        ("/etc", "lib/x", False),
        ("c/..", "x", False),  # c -> . would make it OUT's parent
        ("a/../b", "lib/x", False),
        ("", "x", False),
    ],
)
def test_which_symlinks_stay_inside_out(target, where, allowed):
    assert (link_target_problem(target, where.split("/")) is None) == allowed


# --- a full or read-only disk ------------------------------------------------------------


def test_a_full_disk_is_one_line_and_leaves_nothing(split, tmp_path):
    big = split / GENERIC / PREFIX / "lib" / "big.dat"
    big.write_bytes(os.urandom(256 << 10))
    forge(
        split,
        lambda index: files(index).append(
            [f"{GENERIC}/{PREFIX}/lib/big.dat", "big.dat", "file", None]
        ),
    )
    with tmpfs(tmp_path / "small", "size=64k") as small:
        out = small / "joined"
        result = join(split, out)
        assert result.stderr == f"error: {out}: cannot write big.dat: No space left on device\n"
        assert result.exit_code == 1
        assert list(small.iterdir()) == []


def test_a_read_only_out_is_one_line(split, tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=64k") as read_only:
        out = read_only / "joined"
        result = join(split, out)
        assert result.exit_code == 1
        assert result.stderr == (
            f"error: {out}: cannot write in {read_only}: Read-only file system\n"
        )
        assert list(read_only.iterdir()) == []


# --- a real fat binary --------------------------------------------------------------------


@pytest.fixture
def fat_split(hip_build: HipBuild, tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy2(hip_build.one_file, tree / "libone.so")
    split_tree(tree, tmp_path / "split", name="demo_lib")
    return tmp_path / "split"


@pytest.mark.slow
def test_an_archive_outside_the_split_is_refused(fat_split, tmp_path, planted):
    def change(index: dict[str, Any]) -> None:
        archives = index["jobs"][0]["archives"]
        archives[next(iter(archives))] = "../outside/shadow"

    forge(fat_split, change)
    out = tmp_path / "joined"
    refused(join(fat_split, out), "/jobs/0/files/", "archive for 'gfx", "'../outside/shadow'")
    assert planted.unchanged()
    nothing_left(out)


@pytest.mark.slow
def test_a_host_file_that_is_a_symlink_is_refused(fat_split, tmp_path, planted):
    host = fat_split / "demo_lib_generic" / "stage" / "libone.so"
    data = host.read_bytes()
    host.unlink()
    (planted.dir / "host").write_bytes(data)
    host.symlink_to(planted.dir / "host")
    out = tmp_path / "joined"
    refused(join(fat_split, out), f"{host}: not a regular file (a symlink)")
    nothing_left(out)
    host.unlink()
    host.write_bytes(data)
    result = join(fat_split, out)
    assert result.exit_code == 0, result.output
    assert "1 binaries joined, each checked identical" in result.stdout
    assert (out / "libone.so").read_bytes() == (tmp_path / "tree" / "libone.so").read_bytes()
