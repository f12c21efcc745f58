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

from gfxpack.artifact_files import symlink_target_problem
from gfxpack.cli import cli
from gfxpack.fatbin.join import join_tree
from gfxpack.fatbin.reader import HIPF
from gfxpack.fatbin.split import LITERALS, SPLIT_INDEX, split_tree
from gfxpack.kpack import KpackWriter
from tests.conftest import tmpfs
from tests.fatbin.conftest import HipBuild
from tests.fatbin.fat_elf import fat_elf
from tests.fatbin.test_bounded import gfxpack, one_error
from tests.fatbin.test_bundle import DEVICES, uncompressed

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
    record = split / SPLIT_INDEX
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
        f"{split / SPLIT_INDEX}: /jobs/0/files/",
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
    refused(
        join(split, out), f"{split / GENERIC / 'etc'}: is a symlink; gfxpack does not follow it"
    )
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
        f"{link}: the symlink to {str(planted.dir)!r} is absolute; only a relative target is "
        "known to stay inside OUT; join recreates only symlinks that stay inside OUT",
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
    refused(
        join(split, out),
        "/jobs/0/files/1:",
        f"{out / 'a'}: is a symlink; gfxpack does not follow it",
    )
    assert planted.unchanged()
    nothing_left(out)


def test_an_entry_written_twice_is_refused(split, tmp_path, planted):
    (split / GENERIC / "other").write_bytes(b"other\n")

    def change(index: dict[str, Any]) -> None:
        library = entry(index, "libdemo.so.1")
        files(index).append([f"{GENERIC}/other", library[1], "file", None])

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
        f"{split / SPLIT_INDEX}: /copied/1: {split / 'evil_dev_generic'}: is a symlink",
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
    line = refused(join(split, out), f"/copied/0: {link}: the symlink to ")
    assert ("is absolute" in line) == (how == "absolute")
    assert ("leaves OUT" in line) == (how == "relative")
    assert planted.unchanged()
    nothing_left(out)


@pytest.mark.parametrize("what", ["name", "target"])
def test_a_name_split_never_writes_is_not_copied(split, tmp_path, what):
    """A planted file named with a newline, or a symlink whose target holds one, in a
    copied tree: split's walk refuses both, so join does too."""
    include = split / DEV / PREFIX / "include"
    if what == "name":
        (include / "a\nb.h").write_text("x\n")
    else:
        (include / "link.h").symlink_to("demo\n.h")
    out = tmp_path / "joined"
    refused(join(split, out), "/copied/0: ", "name contains a control character")
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
    record = split / SPLIT_INDEX
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
        (lambda index: files(index)[0].__setitem__(1, "a\nb"), "a control character; split"),
        (lambda index: files(index)[0].__setitem__(0, "a\u0085b"), "a control character"),
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
    assert (split / SPLIT_INDEX).is_file()


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
    depth = len(where.split("/")) - 1
    assert (symlink_target_problem(target, depth, "OUT") is None) == allowed


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


# --- the work a record asks for is bounded by the split's size -----------------------------

HOST = "demo_lib_generic/stage/lib/libfat.so"  # the host file of ELF_SPLIT's binary


@pytest.fixture
def elf_split(tmp_path: Path) -> Path:
    """A split of one small fat library built byte by byte (no hipcc needed): two code
    objects, zero padding between them; its record's binary entry is HOST."""
    library = tmp_path / "tree" / "lib" / "libfat.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(fat_elf(uncompressed(DEVICES), [(HIPF, 0, 0)])[0])
    split_tree(tmp_path / "tree", tmp_path / "split", name="demo_lib")
    assert binary(msgpack.unpackb((tmp_path / "split" / SPLIT_INDEX).read_bytes()))[0] == HOST
    return tmp_path / "split"


def binary(index: dict[str, Any]) -> list[Any]:
    return next(e for e in files(index) if e[2] == "binary")


def claim_zeros(index: dict[str, Any]) -> None:
    """The binary's original claims 1 TiB more zero bytes: the old join wrote them all
    before it found the digest wrong."""
    recipe = binary(index)[3]
    recipe["pieces"].append([0, 1 << 40])
    recipe["removed"][1] += 1 << 40
    recipe["original_size"] += 1 << 40


def read_twice(index: dict[str, Any]) -> None:
    files(index).append([HOST, "lib/again.so", "binary", binary(index)[3]])


def code_twice(index: dict[str, Any]) -> None:
    # Another host file (a copy, planted in the split), the same code objects.
    files(index).append([f"{HOST}.copy", "lib/copy.so", "binary", binary(index)[3]])


def data_twice(index: dict[str, Any]) -> None:
    """Two zero runs made references to the same bytes of the data file (4000 bytes):
    together more than it holds."""
    pieces = binary(index)[3]["pieces"]
    zeros = [i for i, piece in enumerate(pieces) if piece[0] == 0][:2]
    for i in zeros:
        pieces[i] = [3, 0, pieces[i][1]]


def patch_twice(index: dict[str, Any]) -> None:
    patches = binary(index)[3]["patches"]
    patches.append(list(patches[0]))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (claim_zeros, "claims 1,099,511,639,258 zero bytes in an original of 1,099,511,644,584"),
        (read_twice, f"{HOST}: already read for an earlier entry"),
        (code_twice, "for gfx90a a second time; split refers to each code object once"),
        (data_twice, "refers to more bytes of the split's data file than it holds (4,000)"),
        (patch_twice, "the split record patches the bytes at"),
    ],
)
def test_a_record_asking_for_more_than_the_split_holds_is_refused(
    elf_split, tmp_path, planted, change, expected
):
    shutil.copy(elf_split / HOST, elf_split / f"{HOST}.copy")
    (elf_split / LITERALS).write_bytes(bytes(range(250)) * 16)
    forge(elf_split, change)
    out = tmp_path / "joined"
    result = gfxpack("join", elf_split, "--out", out)  # a child with bounded memory and time
    assert expected in one_error(result)
    assert planted.unchanged()
    nothing_left(out)


def test_an_archive_read_for_more_than_its_size_can_hold_is_refused(elf_split, tmp_path):
    """A planted archive of two 1 MiB objects of zeros, 400 bytes compressed: under
    --max-object-size 1M, the second read exceeds what its size can hold."""
    bomb = elf_split / "bomb.kpack"
    with open(bomb, "wb") as file, KpackWriter(file, "demo_lib", "gfx90a") as writer:
        for key in ("k0", "k1"):
            writer.add(key, bytes(1 << 20))
    assert bomb.stat().st_size < 4096

    def change(index: dict[str, Any]) -> None:
        index["jobs"][0]["archives"]["bomb"] = "bomb.kpack"
        recipe = binary(index)[3]
        recipe["pieces"] += [[2, "bomb", "gfx90a", key, 0, 1 << 20] for key in ("k0", "k1")]
        recipe["removed"][1] += 2 << 20
        recipe["original_size"] += 2 << 20

    forge(elf_split, change)
    out = tmp_path / "joined"
    refused(
        join(elf_split, out, "--max-object-size", "1M"),
        f"{bomb}: the record reads more code than the archive's size can hold",
    )
    nothing_left(out)


def test_split_keeps_whole_a_binary_join_would_refuse(tmp_path):
    """Device code almost all zeros (64 pages of padding after one bundle): a recipe for
    it would break the rule join checks, so split keeps the binary whole, and join
    gives it back."""
    library = tmp_path / "tree" / "lib" / "libfat.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(fat_elf(uncompressed(DEVICES) + bytes(64 * 4096), [(HIPF, 0, 0)])[0])
    report = split_tree(tmp_path / "tree", tmp_path / "split", name="demo_lib")
    assert report.binaries == 0
    assert [note.split(": ", 1)[1] for note in report.notes] == [
        "kept whole: its device code is almost all zero bytes: 273,626 zero bytes in an "
        "original of 278,952, more than 15 for each other byte"
    ]
    index = msgpack.unpackb((tmp_path / "split" / SPLIT_INDEX).read_bytes())
    assert "binary" not in [entry[2] for entry in files(index)]
    assert (tmp_path / "split" / LITERALS).stat().st_size == 0
    join_tree(tmp_path / "split", tmp_path / "joined")
    assert (tmp_path / "joined" / "lib" / "libfat.so").read_bytes() == library.read_bytes()


def test_a_record_that_is_a_fifo_is_refused_without_blocking(split, tmp_path):
    (split / SPLIT_INDEX).unlink()
    os.mkfifo(split / SPLIT_INDEX)
    out = tmp_path / "joined"
    refused(join(split, out), f"{split / SPLIT_INDEX}: not a regular file (a FIFO)")
    nothing_left(out)
