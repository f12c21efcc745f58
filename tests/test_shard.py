"""Shards: a release built in parts (build --shard, --shard-by-target) and merged."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.build import BuildOptions
from gfxpack.cli import cli
from gfxpack.formats.payload import installed_size
from gfxpack.merge import MergeError, merge
from gfxpack.release import ReleaseOptions, build_release
from gfxpack.shard import PACKAGE_COST, by_targets, parse_shard
from tests.conftest import EXAMPLE_CONFIG

pytestmark = pytest.mark.slow  # make check skips it: the example release built in shards and merged


def digests(out: Path) -> dict[str, str]:
    """Every package file in ``out`` and its sha256."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.iterdir())
        if p.suffix in (".deb", ".rpm")
    }


def build_shard(artifacts: Path, out: Path, shard, **release) -> dict:
    options = ReleaseOptions("8.2.0", build=BuildOptions(jobs=2, shard=shard), **release)
    build_release(EXAMPLE_CONFIG, artifacts, out, options)
    return json.loads((out / "index.json").read_text())


def without_seconds(index: dict) -> dict:
    return {**index, "files": [{**f, "seconds": 0} for f in index["files"]]}


@pytest.mark.parametrize("count", [1, 2, 3])
def test_k_of_n_shards_merge_to_the_one_machine_build(
    count, example_artifacts, example_release, tmp_path
):
    indexes = [
        build_shard(example_artifacts, tmp_path / f"shard{k}", parse_shard(f"{k}/{count}"))
        for k in range(1, count + 1)
    ]
    owned = [set(index["shard"]["packages"]) for index in indexes]
    assert all(owned), "every shard builds something"
    assert (
        sum(len(o) for o in owned) == len(set().union(*owned)) == len(example_release.plan.packages)
    )
    # Balanced by payload: greedy largest-first keeps the heaviest shard within one
    # package of the lightest.
    cost = {
        key: PACKAGE_COST + installed_size(example_release.routed.get(key, ()))
        for key in set().union(*owned)
    }
    loads = [sum(cost[k] for k in o) for o in owned]
    assert max(loads) - min(loads) <= max(cost.values())

    merged = merge(
        [tmp_path / f"shard{k}" for k in range(1, count + 1)], tmp_path / "merged"
    ).as_json()
    assert digests(tmp_path / "merged") == digests(example_release.out)
    full = json.loads((example_release.out / "index.json").read_text())
    assert without_seconds(merged) == without_seconds(full)
    on_disk = json.loads((tmp_path / "merged" / "index.json").read_text())
    assert on_disk == merged and "shard" not in on_disk


def test_the_cut_is_the_same_on_every_run(example_release):
    shard = parse_shard("2/3")
    first = shard.select(example_release.plan, example_release.routed)
    again = parse_shard("2/3").select(example_release.plan, dict(example_release.routed))
    assert first == again and first


def partial_tree(artifacts: Path, to: Path, suffixes: tuple[str, ...]) -> Path:
    """The artifact directories of ``suffixes`` only (hard links: cheap)."""
    to.mkdir()
    for directory in sorted(artifacts.iterdir()):
        target = directory.name.rsplit("_", 1)[-1].split(":")[0]
        if target in suffixes:
            shutil.copytree(directory, to / directory.name, copy_function=os.link)
    return to


def test_by_target_shards_on_machines_holding_only_their_artifacts(
    example_artifacts, example_release, tmp_path
):
    listing = tuple(sorted(p.name for p in example_artifacts.iterdir()))
    shards = {
        "gfx942,gfx950": ("gfx942", "gfx950"),
        "gfx1100": ("gfx1100",),
        "generic": ("generic",),
    }
    outs = []
    for label, suffixes in shards.items():
        tree = partial_tree(example_artifacts, tmp_path / f"tree-{suffixes[0]}", suffixes)
        assert {p.name for p in tree.iterdir()} < set(listing)
        shard = parse_shard(label) if label == "generic" else by_targets(label.split(","))
        out = tmp_path / f"out-{suffixes[0]}"
        index = build_shard(tree, out, shard, artifact_names=listing)
        arches = {f["arch"] for f in index["files"]}
        assert arches == ({None} if label == "generic" else set(suffixes))
        outs.append(out)
    merge(outs, tmp_path / "merged")
    assert digests(tmp_path / "merged") == digests(example_release.out)


def test_a_by_target_shard_lacking_its_artifacts_is_one_error(example_artifacts, tmp_path):
    listing = "\n".join(sorted(p.name for p in example_artifacts.iterdir()))
    (tmp_path / "listing.txt").write_text(listing + "\n")
    tree = partial_tree(example_artifacts, tmp_path / "tree", ("generic", "gfx1100"))
    result = CliRunner().invoke(
        cli,
        [
            "build",
            "--config",
            str(EXAMPLE_CONFIG),
            "--artifacts",
            str(tree),
            "--release-artifacts",
            str(tmp_path / "listing.txt"),
            "--out",
            str(tmp_path / "out"),
            "--rocm-version",
            "8.2.0",
            "--shard-by-target",
            "gfx942",
            "-q",
        ],
    )
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "lacks: blas_lib_gfx942" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("selector", "suffixes", "lacking"),
    [
        (["--shard-by-target", "gfx942"], ("gfx942",), "generic"),
        (["--shard", "generic"], ("generic",), "per-arch"),
    ],
    ids=["by-target", "generic"],
)
def test_a_shard_without_the_release_listing_is_one_line(
    example_artifacts, tmp_path, selector, suffixes, lacking
):
    """A machine holding only its shard's artifacts plans another release (every other
    package missing): one line saying what the shard needs, not an error per package."""
    tree = partial_tree(example_artifacts, tmp_path / "tree", suffixes)
    result = CliRunner().invoke(
        cli,
        [
            *("build", "--config", str(EXAMPLE_CONFIG), "--artifacts", str(tree)),
            *("--out", str(tmp_path / "out"), "--rocm-version", "8.2.0", *selector),
        ],
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {tree}: holds no {lacking} artifact directories, but {' '.join(selector)} "
        "plans the whole release: give --release-artifacts FILE, the release's artifact "
        "directory names one a line (what ls ARTIFACTS prints on a machine that has them "
        "all), and --mode kpack\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def halves(example_artifacts, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("halves")
    build_shard(example_artifacts, root / "1", parse_shard("1/2"))
    build_shard(example_artifacts, root / "2", parse_shard("2/2"))
    return root / "1", root / "2"


def merge_cli(*args: str):
    return CliRunner().invoke(cli, ["merge", *args])


def assert_refused(result, message: str, out: Path) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr
    assert not (out / "index.json").exists()


def test_merge_refuses_a_missing_shard(halves, tmp_path):
    result = merge_cli(str(halves[0]), "--out", str(tmp_path / "m"))
    assert_refused(result, "built by no shard given", tmp_path / "m")


def test_merge_refuses_a_package_built_twice(halves, example_artifacts, tmp_path):
    gfx942 = tmp_path / "gfx942"
    build_shard(example_artifacts, gfx942, by_targets(["gfx942"]))
    result = merge_cli(str(halves[0]), str(halves[1]), str(gfx942), "--out", str(tmp_path / "m"))
    assert_refused(result, "was built twice: by ", tmp_path / "m")
    assert "(shard gfx942)" in result.stderr


def test_merge_refuses_shards_of_two_plans(halves, example_artifacts, tmp_path):
    other = tmp_path / "other"
    build_shard(example_artifacts, other, parse_shard("2/2"), release="2")
    result = merge_cli(str(halves[0]), str(other), "--out", str(tmp_path / "m"))
    assert_refused(result, "were built from different plans", tmp_path / "m")


def test_merge_refuses_a_shard_missing_a_file(halves, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(halves[1], broken)
    victim = json.loads((broken / "index.json").read_text())["files"][0]["file"]
    (broken / victim).unlink()
    result = merge_cli(str(halves[0]), str(broken), "--out", str(tmp_path / "m"))
    assert_refused(result, f"{broken / victim}: No such file", tmp_path / "m")


def test_merge_into_a_shard_directory(halves, example_release, tmp_path):
    first = tmp_path / "first"
    shutil.copytree(halves[0], first)
    result = merge_cli(str(first), str(halves[1]), "--out", str(first))
    assert result.exit_code == 0, result.output
    assert digests(first) == digests(example_release.out)


def test_two_shards_cannot_share_an_out(halves, example_artifacts, tmp_path):
    shared = tmp_path / "shared"
    shutil.copytree(halves[0], shared)
    before = digests(shared)
    with pytest.raises(Exception, match="holds shard 1/2 of this release: give each shard"):
        build_shard(example_artifacts, shared, parse_shard("2/2"))
    assert digests(shared) == before


def test_bad_shard_selectors_are_one_error(tmp_path):
    for args, message in (
        (["--shard", "4/3"], "expected K/N with 1 <= K <= N"),
        (["--shard", "1/2", "--shard-by-target", "gfx942"], "give one of them"),
        (["--executor", "dask"], "--executor dask and --scheduler ADDRESS go together"),
    ):
        result = CliRunner().invoke(
            cli,
            [
                "build",
                "--config",
                str(EXAMPLE_CONFIG),
                "--artifacts",
                str(tmp_path),
                "--out",
                str(tmp_path / "out"),
                "--rocm-version",
                "8.2.0",
                *args,
            ],
        )
        assert result.exit_code == 1 and message in result.stderr, result.output


def test_merge_of_no_index(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(MergeError, match=r"index\.json: missing or not JSON"):
        merge([tmp_path / "empty"], tmp_path / "m")


def test_the_readme_matrix_from_the_command_line(example_artifacts, example_release, tmp_path):
    """What README's CI matrix runs: device shards and the generic shard, each from only
    its own artifacts and the release's listing, with --mode kpack; then merge."""
    listing = tmp_path / "release-artifacts.txt"
    listing.write_text("".join(f"{p.name}\n" for p in sorted(example_artifacts.iterdir())))
    outs = []
    for selector, suffixes in (
        (["--shard-by-target", "gfx942,gfx950"], ("gfx942", "gfx950")),
        (["--shard-by-target", "gfx1100"], ("gfx1100",)),
        (["--shard", "generic"], ("generic",)),
    ):
        tree = partial_tree(example_artifacts, tmp_path / f"tree-{suffixes[0]}", suffixes)
        out = tmp_path / f"out-{suffixes[0]}"
        result = CliRunner().invoke(
            cli,
            [
                "build",
                "--config",
                str(EXAMPLE_CONFIG),
                "--artifacts",
                str(tree),
                "--release-artifacts",
                str(listing),
                "--mode",
                "kpack",
                "--rocm-version",
                "8.2.0",
                "--out",
                str(out),
                "-q",
                *selector,
            ],
        )
        assert result.exit_code == 0, result.output
        outs.append(str(out))
    result = merge_cli(*outs, "--out", str(tmp_path / "merged"), "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["files"]) == len(digests(example_release.out))
    assert digests(tmp_path / "merged") == digests(example_release.out)


def copied_shard(halves, tmp_path: Path) -> tuple[Path, str]:
    """A private copy of the second half (no links to the shared one) and the name of
    its largest listed file."""
    copy = tmp_path / "copy"
    shutil.copytree(halves[1], copy)
    listed = json.loads((copy / "index.json").read_text())["files"]
    return copy, max(listed, key=lambda item: item["size"])["file"]


def test_merge_refuses_a_shard_file_of_the_right_size_but_other_bytes(halves, tmp_path):
    copy, victim = copied_shard(halves, tmp_path)
    data = bytearray((copy / victim).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / victim).write_bytes(data)
    out = tmp_path / "m"
    result = merge_cli(str(halves[0]), str(copy), "--out", str(out))
    assert_refused(result, f"{copy / victim}: not the file {copy / 'index.json'} lists", out)
    assert not out.exists() and (copy / victim).read_bytes() == data


def test_merge_refuses_a_shard_file_linked_to_a_file_outside_it(halves, tmp_path):
    # The host file holds the listed bytes, so size and sha256 agree: the link gives it away.
    copy, victim = copied_shard(halves, tmp_path)
    host = tmp_path / "host" / "kept"
    host.parent.mkdir()
    shutil.copyfile(copy / victim, host)
    (copy / victim).unlink()
    os.link(host, copy / victim)
    before = os.lstat(host)
    out = tmp_path / "m"
    result = merge_cli(str(halves[0]), str(copy), "--out", str(out))
    assert_refused(result, f"{copy / victim}: has 1 other hard link(s)", out)
    after = os.lstat(host)
    assert (after.st_ino, after.st_nlink, after.st_mtime_ns) == (
        before.st_ino,
        2,
        before.st_mtime_ns,
    )
    assert not out.exists()


def test_merge_refuses_a_symlinked_shard_file(halves, tmp_path):
    copy, victim = copied_shard(halves, tmp_path)
    host = tmp_path / "host"
    shutil.copyfile(copy / victim, host)
    (copy / victim).unlink()
    (copy / victim).symlink_to(host)
    out = tmp_path / "m"
    result = merge_cli(str(halves[0]), str(copy), "--out", str(out))
    assert_refused(result, f"{copy / victim}: not a regular file (a symlink)", out)
    assert not out.exists() and os.lstat(host).st_nlink == 1


def test_merging_again_into_the_same_out_is_allowed(halves, example_release, tmp_path):
    # The first merge links the shards' files into OUT: that link is merge's own.
    first, second = tmp_path / "1", tmp_path / "2"
    shutil.copytree(halves[0], first)
    shutil.copytree(halves[1], second)
    out = tmp_path / "m"
    for _ in range(2):
        result = merge_cli(str(first), str(second), "--out", str(out))
        assert result.exit_code == 0, result.output
    assert digests(out) == digests(example_release.out)
    name = next(iter(digests(out)))
    assert os.lstat(out / name).st_nlink == 2  # OUT and its shard, nothing else


def test_a_merge_onto_another_file_system_copies_the_checked_files(
    halves, example_release, tmp_path
):
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the shards")
    first, second = tmp_path / "1", tmp_path / "2"
    shutil.copytree(halves[0], first)
    shutil.copytree(halves[1], second)
    with tempfile.TemporaryDirectory(dir=other) as scratch:
        out = Path(scratch) / "m"
        result = merge_cli(str(first), str(second), "--out", str(out))
        assert result.exit_code == 0, result.output
        assert digests(out) == digests(example_release.out)
        assert {os.lstat(p).st_nlink for p in out.iterdir()} == {1}
        assert {os.lstat(p).st_mode & 0o7777 for p in out.iterdir()} == {0o644}
