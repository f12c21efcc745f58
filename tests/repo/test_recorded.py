"""Values read back from the repository's record (repo/recorded.py): each is checked as
its option or input is, so a planted record is refused with one line by every command,
and nothing outside OUT is written or removed."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from gfxpack.repo import recorded
from gfxpack.repo.state import DATABASE
from tests.repo.small_stream import copy_of, gfxpack, make_template, one_error, snapshot

# --- the checks, one value at a time --------------------------------------------------


@pytest.mark.parametrize("version", ["8.2.0-1", "7.0-rc1", "10.1.2~pre-3"])
def test_a_build_version_gfxpack_build_makes_is_taken(version: str) -> None:
    assert recorded.build_version_problem(version) is None


@pytest.mark.parametrize(
    "version", ["../../x", "8.2.0", "8.2.0-1-1", "8.2.0-1\nEvil: yes", "", "8" * 300, 7]
)
def test_a_value_no_build_has_is_no_build_version(version: object) -> None:
    assert recorded.build_version_problem(version)


@pytest.mark.parametrize("value", [-1, 2**32, 2**62, "1700000000", True, 1.5, None])
def test_a_time_is_seconds_since_1970_as_source_date_epoch_takes(value: object) -> None:
    assert recorded.time_problem(value, "published") and recorded.time_problem(0, "x") is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("suite", "../../tmp/x"),
        ("suite", "/tmp/x"),
        ("suite", "sta ble"),
        ("names", '{"codename": "../x"}'),
        ("names", '{"keep_generations": "3"}'),
        ("names", '{"unknown": 1}'),
        ("names", "[]"),
        ("signed_by", "key\nInjected: yes"),
        ("extra_keys", "attacker@example.invalid"),  # gpg would look the name up
        ("extra_keys", "A" * 40 + "  " + "B" * 40),
        ("extra_keys", "a" * 40),  # recorded upper-case only
        ("extra_keys", "A" * 39),
        ("extra_keys", ""),
        ("stale:deb", "2"),
    ],
)
def test_a_setting_its_option_refuses_is_refused(key: str, value: str) -> None:
    assert recorded.setting_problem(key, value)


def test_the_settings_a_run_records_are_taken() -> None:
    names = '{"origin": "AMD", "label": "ROCm", "repo_id": "rocm", "repo_name": null, '
    names += '"codename": null, "keep_generations": 3, "valid_for_days": null}'
    fingerprints = "0123456789ABCDEF" * 2 + "01234567 " + "F" * 40
    taken = [("suite", "stable"), ("names", names), ("stale:rpm", "1")]
    for key, value in [*taken, ("extra_keys", fingerprints)]:
        assert recorded.setting_problem(key, value) is None, key


def test_a_piece_name_never_becomes_a_path_out_of_the_indexes() -> None:
    assert recorded.part_problem("Packages/amd64") is None
    assert recorded.part_problem("primary") is None
    for planted in ("Packages/../../../x", "Packages/a/b", "../x", "Packages/"):
        assert recorded.part_problem(planted), planted


# --- whole commands on a planted record --------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return make_template(tmp_path_factory.mktemp("recorded"))


def _plant(repo: Path, sql: str, *parameters: object) -> None:
    with sqlite3.connect(repo / DATABASE) as db:
        for statement in sql.split("; "):
            assert db.execute(statement, parameters).rowcount >= 1, statement
    db.close()


# what is planted -> (SQL, what the one error line says). {outside} is a directory
# beside OUT that holds a sentinel and a by-hash file a prune would remove.
PLANTS = {
    "suite-relative": (
        "UPDATE settings SET value = '../../../outside' WHERE key = 'suite'",
        "apt suite '../../../outside'",
    ),
    "suite-absolute": ("UPDATE settings SET value = ? WHERE key = 'suite'", "apt suite '/"),
    "codename": (
        "UPDATE settings SET value = json_set(value, '$.codename', '../x') WHERE key = 'names'",
        "--codename '../x'",
    ),
    "version": (
        "UPDATE builds SET version = '8.2.0-1' || char(10) || 'Evil: yes' WHERE id = 1",
        "build version",
    ),
    "time-huge": ("UPDATE builds SET published = 4611686018427387904 WHERE id = 1", "0 to"),
    "time-negative": ("UPDATE builds SET published = -86400 WHERE id = 1", "0 to"),
    # A live file's name (what a run indexes) and a build's (what promote copies).
    "path": (
        "UPDATE files SET name = '../../../outside/sentinel.deb' "
        "WHERE name LIKE 'tool_8.2.0%.deb'; "
        "UPDATE build_files SET name = '../../../outside/sentinel.deb' "
        "WHERE build = 2 AND name LIKE '%.deb'",
        "is not a package file name",
    ),
    "piece": (
        "UPDATE pieces SET part = 'Packages/../../../../outside' WHERE part = 'Packages/amd64'",
        "index piece",
    ),
}
COMMANDS = ("repo", "prune", "remove", "promote")


def _command(name: str, repo: Path, builds: dict[str, Path]) -> list[str]:
    return {
        "repo": ["repo", "--in", str(builds["8.2.2"]), "--out", str(repo)],
        "prune": ["stream", "prune", "--repo", str(repo), "--retain", "1builds"],
        "remove": ["stream", "remove", "--repo", str(repo), "--version", "8.2.0-1"],
        "promote": [
            "stream",
            "promote",
            "--from",
            str(repo),
            "--to",
            str(repo.parent / "to"),
            "--version",
            "8.2.1-1",
        ],
    }[name]


# Promote composes the target's indexes from the target's own record: the source's
# pieces are never read.
CASES = [(p, c) for p in PLANTS for c in COMMANDS if (p, c) != ("piece", "promote")]


@pytest.mark.parametrize(("plant", "command"), CASES)
def test_a_planted_record_is_refused_and_nothing_outside_out_changes(
    template, tmp_path, plant, command
):
    repo = copy_of(template[0], tmp_path)
    outside = tmp_path / "outside"
    by_hash = outside / "main/binary-amd64/by-hash/SHA256"
    by_hash.mkdir(parents=True)
    (by_hash / ("0" * 64)).write_bytes(b"by-hash")
    (outside / "sentinel.deb").write_bytes(b"keep")
    sql, said = PLANTS[plant]
    _plant(repo, sql, *([str(outside)] if "?" in sql else []))
    before_outside, before_repo = snapshot(outside), snapshot(repo, skip=(DATABASE,))
    line = one_error(gfxpack(*_command(command, repo, template[1])))
    assert DATABASE in line and said in line, line
    assert "not a record of a published repository" in line
    assert snapshot(outside) == before_outside
    assert snapshot(repo, skip=(DATABASE, ".gfxpack-repo.lock")) == {
        k: v for k, v in before_repo.items() if not k.endswith(".gfxpack-repo.lock")
    }
    assert not (tmp_path / "to" / "apt").exists()


def test_a_planted_stream_name_is_refused(template, tmp_path):
    repo = copy_of(template[0], tmp_path)
    origin = json.dumps({"stream": "nightly\x1b[2J", "published": 1})
    _plant(repo, "UPDATE builds SET promoted_from = ? WHERE id = 1", origin)
    line = one_error(gfxpack("stream", "list", "--repo", str(repo)))
    assert "stream name" in line and "escape" in line and DATABASE in line


def test_a_from_stream_name_is_checked_as_the_record_reads_it(template, tmp_path):
    repo = copy_of(template[0], tmp_path)
    line = one_error(gfxpack(*_command("promote", repo, template[1]), "--from-stream", "a\nb"))
    assert "--from-stream" in line and "newline" in line
    assert not (tmp_path / "to").exists()


# --- an empty record, a full disk --------------------------------------------------------


def test_an_empty_record_beside_indexes_is_rebuilt_and_keeps_earlier_packages(template, tmp_path):
    repo = copy_of(template[0], tmp_path)
    (repo / DATABASE).write_bytes(b"")
    listing = one_error(gfxpack("stream", "list", "--repo", str(repo)))
    assert "empty" in listing and "rebuilds it" in listing
    result = gfxpack("repo", "--in", str(template[1]["8.2.2"]), "--out", str(repo))
    assert result.exit_code == 0, result.output
    assert "empty; rebuilt from the package files of the pools" in result.stderr
    packages = (repo / "apt/dists/stable/main/binary-amd64/Packages").read_text()
    assert [line for line in packages.splitlines() if line.startswith("Version:")] == [
        "Version: 8.2.0-1",
        "Version: 8.2.1-1",
        "Version: 8.2.2-1",
    ]
    repomd = (repo / "rpm/repodata/repomd.xml").read_text()
    (primary,) = re.findall(r'href="(repodata/[0-9a-f]+-primary\.xml\.gz)"', repomd)
    text = gzip.decompress((repo / "rpm" / primary).read_bytes()).decode()
    assert all(f'ver="{v}"' in text for v in ("8.2.0", "8.2.1", "8.2.2"))


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (root may mount one; skipped where it cannot)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk is made with a tmpfs mount, which needs root")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(directory: Path) -> None:
    """Write into ``directory`` until its file system is full."""
    with open(directory / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 4096)
        except OSError as e:
            assert e.errno == 28  # ENOSPC


def test_a_full_disk_while_writing_the_record_says_no_space(template, small_disk):
    repo = small_disk / "repo"
    shutil.copytree(template[0], repo, symlinks=True)
    _fill(small_disk)
    before = snapshot(repo)
    line = one_error(gfxpack("repo", "--in", str(template[1]["8.2.2"]), "--out", str(repo)))
    assert "no space left" in line.lower(), line
    assert "restore it from a backup" not in line and "not a record" not in line
    (small_disk / "filler").unlink()
    assert snapshot(repo, skip=(".gfxpack-repo.lock", f"{DATABASE}-journal")) == {
        k: v for k, v in before.items() if not k.endswith(".gfxpack-repo.lock")
    }
    # The record is as it was: the next run, with space, publishes the build.
    result = gfxpack("repo", "--in", str(template[1]["8.2.2"]), "--out", str(repo))
    assert result.exit_code == 0, result.output
