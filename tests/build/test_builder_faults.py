"""A build against a crashing machine: kills, a full or read-only disk, an OUT holding
an earlier build; and the one-line report of anything unexpected."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import gfxpack.cli
from gfxpack.artifacts import route, scan
from gfxpack.build import BuildOptions, build
from gfxpack.cli import cli
from gfxpack.config import load_config
from gfxpack.formats import DEB
from gfxpack.formats.compress import Compression
from gfxpack.plan import plan
from tests.conftest import EXAMPLE_CONFIG, build_example_args, generate_example, tmpfs
from tests.small_tree import build as cli_build
from tests.small_tree import make_tree, write_config

pytestmark = pytest.mark.slow  # make check skips it: builds killed, or starved of disk

SMALL_FILES = {
    "amdrocm-blas-8.2.0-1.x86_64.rpm",
    "amdrocm-blas8.2-8.2.0-1.x86_64.rpm",
    "amdrocm-blas8.2_8.2.0-1_amd64.deb",
    "amdrocm-blas_8.2.0-1_amd64.deb",
}


def listing(out: Path) -> set[str]:
    return {p.name for p in out.iterdir()}


def indexed(out: Path) -> set[str]:
    return {item["file"] for item in json.loads((out / "index.json").read_text())["files"]}


# --- OUT holds exactly this build ----------------------------------------------------------


def test_out_holds_exactly_this_build(example_artifacts, tmp_path):
    out = tmp_path / "out"

    def build_targets(targets: str):
        return CliRunner().invoke(
            cli,
            build_example_args(
                example_artifacts,
                out,
                *("--target", targets, "--format", "deb", "--compression", "gzip:1"),
            ),
        )

    assert build_targets("gfx942,gfx1100").exit_code == 0
    first = indexed(out)
    (out / "README.txt").write_text("written by hand")
    result = build_targets("gfx942")
    assert result.exit_code == 0, result.output
    second = indexed(out)
    gone = first - second
    assert gone and all("gfx1100" in name for name in gone)
    assert listing(out) == second | {"index.json", "README.txt"}
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert notes == [
        *(
            f"note: removed {out / name}: an earlier build wrote it; this build does not"
            for name in sorted(gone)
        ),
        f"note: left alone {out / 'README.txt'}: not written by gfxpack",
    ]


def small_release(artifacts: Path, config: Path):
    tree = scan(artifacts)
    release = plan(load_config(config).packages, ["gfx942"], "8.2.0", artifacts=tree.index)
    return release, route(release, tree, 0)


def test_an_interrupted_rebuild_leaves_no_stale_index(tmp_path):
    """A rebuild of other bytes, interrupted after its first package: no index.json
    describes the replaced files, and the next build still knows which files are
    gfxpack's."""
    make_tree(tmp_path / "art")
    release, routed = small_release(tmp_path / "art", write_config(tmp_path / "package.json"))
    out = tmp_path / "out"
    build(release, routed, out, BuildOptions(jobs=1))
    assert indexed(out) == SMALL_FILES

    def interrupt(*_):
        raise KeyboardInterrupt

    gzip = BuildOptions(jobs=1, compression=Compression.parse("gzip:1"))
    with pytest.raises(KeyboardInterrupt):
        build(release, routed, out, gzip, on_built=interrupt)
    assert listing(out) == SMALL_FILES | {".gfxpack-building.json"}

    notes: list[str] = []
    build(release, routed, out, BuildOptions(jobs=1, formats=(DEB,)), on_note=notes.append)
    debs = {name for name in SMALL_FILES if name.endswith(".deb")}
    assert indexed(out) == debs
    assert listing(out) == debs | {"index.json"}
    assert notes == [
        f"removed {out / name}: an earlier build wrote it; this build does not"
        for name in sorted(SMALL_FILES - debs)
    ]


def test_an_index_naming_paths_elsewhere_removes_nothing_there(tmp_path):
    make_tree(tmp_path / "art")
    release, routed = small_release(tmp_path / "art", write_config(tmp_path / "package.json"))
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.deb"
    victim.write_text("keep me")
    (out / "index.json").write_text(
        json.dumps({"files": [{"file": "../victim.deb"}, {"file": str(victim)}]})
    )
    build(release, routed, out, BuildOptions(jobs=1))
    assert victim.read_text() == "keep me"
    assert listing(out) == SMALL_FILES | {"index.json"}


def test_scratch_of_a_dead_run_is_removed_and_a_live_one_kept(tmp_path):
    make_tree(tmp_path / "art")
    out = tmp_path / "out"
    (out / ".gfxpack-partial-dead").mkdir(parents=True)
    (out / ".gfxpack-partial-dead" / "half.deb").write_bytes(b"!<arch>\n")
    (out / ".gfxpack-partial-x.json").write_text("{")
    live = out / ".gfxpack-partial-live"
    live.mkdir()
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running build holds its own
        result = cli_build(tmp_path, tmp_path / "art")
        assert result.exit_code == 0, result.output
        assert listing(out) == SMALL_FILES | {"index.json", ".gfxpack-partial-live"}
    finally:
        os.close(fd)


# --- kills ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def large_artifacts(tmp_path_factory) -> Path:
    return generate_example(tmp_path_factory.mktemp("large") / "artifacts", scale=1.0)


def start_build(artifacts: Path, out: Path) -> subprocess.Popen[str]:
    """A build slow enough to be caught in the middle (zstd:19), in its own session,
    once it has finished its first package."""
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "gfxpack", "build", "--compression", "zstd:19"),
            *("--config", str(EXAMPLE_CONFIG), "--artifacts", str(artifacts), "--out", str(out)),
            *("--rocm-version", "8.2.0", "-j", "2"),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    while line and not line.startswith("[1/"):
        line = process.stderr.readline()
    assert line.startswith("[1/"), "the build finished no package"
    return process


def descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        parent = pending.pop()
        for task in Path(f"/proc/{parent}/task").iterdir():
            children = (task / "children").read_text().split()
            found.extend(int(child) for child in children)
            pending.extend(int(child) for child in children)
    return found


def alive(pid: int) -> bool:
    """Whether any thread of the process still runs (a killed process's first thread
    can be a zombie while compression threads still exit, holding its files open)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return False
    for task in tasks:
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state not in ("Z", "X"):
            return True
    return False


def wait_gone(pids: list[int], seconds: float = 10) -> list[int]:
    """Wait until the processes have exited; the ones still running after ``seconds``."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.slow
def test_workers_die_with_a_killed_build(large_artifacts, tmp_path):
    """kill -9 of the build process alone: its workers exit at once and rename nothing
    into OUT afterwards."""
    out = tmp_path / "out"
    process = start_build(large_artifacts, out)
    workers = descendants(process.pid)
    assert len(workers) == 2
    process.kill()
    process.wait(timeout=30)
    survivors = wait_gone(workers)
    for pid in survivors:  # leave no orphan behind when this fails
        os.kill(pid, signal.SIGKILL)
    assert not survivors
    before = listing(out)
    time.sleep(1.0)
    assert listing(out) == before
    assert "index.json" not in before


@pytest.mark.slow
def test_the_next_run_removes_what_a_killed_run_left(large_artifacts, tmp_path):
    out = tmp_path / "out"
    process = start_build(large_artifacts, out)
    workers = descendants(process.pid)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    wait_gone(workers)
    assert [name for name in listing(out) if name.startswith(".gfxpack-partial-")]
    make_tree(tmp_path / "art")
    result = cli_build(tmp_path, tmp_path / "art", out=out)
    assert result.exit_code == 0, result.output
    # The killed run's packages were gfxpack's: the small build does not produce them.
    assert listing(out) == SMALL_FILES | {"index.json"}


# --- a full, read-only or impossible OUT ---------------------------------------------------


def test_a_full_disk_while_writing_packages_is_one_line(tmp_path):
    make_tree(tmp_path / "art")
    with tmpfs(tmp_path / "out", "size=8k") as out:
        result = cli_build(tmp_path, tmp_path / "art")
        assert result.exit_code == 1
        assert result.stderr == (
            f"error: {out}: cannot write amdrocm-blas8.2 (rpm): No space left on device\n"
        )
        left = listing(out)
    assert not [name for name in left if name.startswith(".gfxpack-partial-")]
    assert "index.json" not in left


def test_a_full_disk_while_writing_the_index_is_one_line(tmp_path):
    # Four one-page packages and the one-page record of them fit; the index does not.
    make_tree(tmp_path / "art")
    with tmpfs(tmp_path / "out", "size=20k") as out:
        result = cli_build(tmp_path, tmp_path / "art")
        assert result.exit_code == 1
        assert result.stderr == f"error: {out}/index.json: cannot write: No space left on device\n"
        left = listing(out)
    assert left == SMALL_FILES | {".gfxpack-building.json"}  # no partial index


def test_large_archives_wait_beside_out_not_in_the_temporary_directory(tmp_path, monkeypatch):
    """A package's compressed payload waits for its header in a file once past a few
    MiB; that file lives in OUT's scratch directory, not in /tmp, which is often a
    small tmpfs: a 1 MiB temporary directory does not stop a 12 MiB package."""
    stage = make_tree(tmp_path / "art")
    (stage / "lib" / "librocblas.co").write_bytes(os.urandom(12 << 20))  # incompressible
    with tmpfs(tmp_path / "tmp", "size=1m") as small:
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        result = cli_build(tmp_path, tmp_path / "art", "--compression", "zstd:1")
        assert result.exit_code == 0, result.output
        assert listing(small) == set()
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert max(item["size"] for item in index["files"]) > 12 << 20


def test_a_read_only_out_is_one_line(tmp_path):
    make_tree(tmp_path / "art")
    with tmpfs(tmp_path / "out", "ro,size=64k") as out:
        result = cli_build(tmp_path, tmp_path / "art")
    assert result.exit_code == 1
    assert (
        result.stderr == f"error: {out}: cannot write in the output directory: "
        "Read-only file system\n"
    )


def test_an_out_that_cannot_be_created_is_one_line(tmp_path):
    make_tree(tmp_path / "art")
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"
    result = cli_build(tmp_path, tmp_path / "art", out=out)
    assert result.exit_code == 1
    assert result.stderr == f"error: {out}: cannot create the output directory: Not a directory\n"


# --- configs nested too deeply -------------------------------------------------------------


def test_a_config_nested_100000_deep_is_one_line(tmp_path):
    config = tmp_path / "package.json"
    config.write_text("[" * 100_000 + "]" * 100_000)
    make_tree(tmp_path / "art")
    result = cli_build(tmp_path, tmp_path / "art", config=config)
    assert result.exit_code == 1
    assert result.stderr == f"error: {config}: /: not a package list: JSON nested too deeply\n"


# --- anything unexpected -------------------------------------------------------------------


def _explode(*_args, **_kwargs):
    raise KeyError("a key nobody expected")


def test_an_unexpected_error_is_one_line_asking_for_a_report(tmp_path, monkeypatch):
    monkeypatch.setattr("gfxpack.release.load_config", _explode)
    make_tree(tmp_path / "art")
    result = cli_build(tmp_path, tmp_path / "art")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: unexpected KeyError: 'a key nobody expected' (this is a bug in gfxpack; "
        "please report it with the command you ran and the output of the same command "
        "with --debug)\n"
    )


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr("gfxpack.release.load_config", _explode)
    make_tree(tmp_path / "art")
    result = CliRunner().invoke(
        cli,
        [
            *("--debug", "build", "--config", str(write_config(tmp_path / "p.json"))),
            *("--artifacts", str(tmp_path / "art"), "--out", str(tmp_path / "out")),
            *("--rocm-version", "8.2.0"),
        ],
    )
    assert isinstance(result.exception, KeyError)
    assert result.exc_info is not None and result.exc_info[2] is not None
    assert "unexpected" not in result.stderr


def test_debug_shows_the_traceback_of_user_errors_too(tmp_path):
    result = CliRunner().invoke(
        cli,
        [
            *("--debug", "build", "--config", str(tmp_path / "missing.json")),
            *("--artifacts", str(tmp_path), "--out", str(tmp_path / "out")),
            *("--rocm-version", "8"),
        ],
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert result.stderr.endswith(f"error: {tmp_path / 'missing.json'}: file not found\n")


def test_the_entry_point_catches_what_escapes_a_command(monkeypatch, capsys):
    monkeypatch.setattr(gfxpack.cli, "cli", _explode)
    monkeypatch.setattr(sys, "argv", ["gfxpack", "plan"])
    with pytest.raises(SystemExit) as exited:
        gfxpack.cli.main()
    assert exited.value.code == 1
    assert capsys.readouterr().err.startswith("error: unexpected KeyError: ")
