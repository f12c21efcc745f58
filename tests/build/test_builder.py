"""Whole builds: index.json, byte-identical rebuilds, interrupts, errors and the CLI."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from gfxpack.build import BuildError, BuildOptions, build
from gfxpack.cli import cli
from gfxpack.formats import FORMATS
from gfxpack.formats.compress import Compression
from tests.conftest import EXAMPLE_CONFIG, build_example, generate_example, run

pytestmark = pytest.mark.slow  # make check skips it: whole builds, rebuilt byte for byte


def test_index_lists_every_file_with_its_digest(example_release):
    index = json.loads((example_release.out / "index.json").read_text())
    files = index["files"]
    assert len(files) == 2 * len(example_release.plan.packages)
    assert {(f["package"], f["format"]) for f in files} == {
        (p.key, fmt.name) for p in example_release.plan.packages for fmt in FORMATS
    }
    for item in files:
        data = (example_release.out / item["file"]).read_bytes()
        assert item["size"] == len(data)
        assert item["sha256"] == hashlib.sha256(data).hexdigest()
        package = example_release.plan.by_key[item["package"]]
        assert (item["kind"], item["arch"]) == (str(package.kind), package.arch)
    names = sorted(p.name for p in example_release.out.iterdir())
    assert names == sorted([*(f["file"] for f in files), "index.json"])  # nothing partial


@pytest.mark.slow
def test_rebuild_is_byte_identical(example_release, tmp_path):
    """A second artifacts tree generated afresh (new mtimes, other paths), one job
    instead of two: every package comes out with the same bytes."""
    again = build_example(generate_example(tmp_path / "artifacts"), tmp_path / "out", jobs=1)
    first = {b.file: b.sha256 for b in example_release.built}
    second = {b.file: b.sha256 for b in again.built}
    assert second == first


@pytest.mark.parametrize("compression", ["xz:1", "gzip:1", "none"])
def test_other_compressions_are_read_by_the_tools(example_release, tmp_path, compression):
    keys = ("amdrocm-blas8.2-gfx942", "amdrocm-blas8.2")
    small = [p for p in example_release.plan.packages if p.key in keys]
    plan = dataclasses.replace(example_release.plan, packages=tuple(small))
    options = BuildOptions(compression=Compression.parse(compression), jobs=1)
    built = build(plan, example_release.routed, tmp_path, options)
    assert len(built) == 2 * len(keys)
    for item in built:
        path = str(tmp_path / item.file)
        if item.format == "deb":
            run("dpkg-deb", "--contents", path)
        else:
            assert "NOT OK" not in run("rpmkeys", "-Kv", path).stdout
            listing = subprocess.run(
                f"rpm2cpio {path} | cpio -t --quiet",
                shell=True,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            routed = example_release.routed.get(item.package, ())
            assert listing == [f".{e.path}" for e in routed]


def test_a_failing_package_is_named_and_leaves_nothing_partial(example_release, tmp_path):
    routed = dict(example_release.routed)
    entries = routed["amdrocm-fft8.2-gfx942"]
    broken = tuple(
        dataclasses.replace(e, source=str(tmp_path / "gone")) if e.is_file else e for e in entries
    )
    routed["amdrocm-fft8.2-gfx942"] = broken
    with pytest.raises(BuildError, match=r"amdrocm-fft8.2-gfx942 \((deb|rpm)\): .*gone"):
        build(example_release.plan, routed, tmp_path / "out", BuildOptions(jobs=2))
    leftovers = [p.name for p in (tmp_path / "out").iterdir()]
    # No index (the build is not complete), only the record of what gfxpack wrote.
    assert [n for n in leftovers if not n.endswith((".deb", ".rpm"))] == [".gfxpack-building.json"]
    for name in leftovers:
        if name.endswith(".deb"):
            run("dpkg-deb", "--info", str(tmp_path / "out" / name))


def gfxpack(*args, **options):
    return subprocess.Popen(
        [sys.executable, "-m", "gfxpack", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_build_leaves_only_complete_packages(tmp_path, sig):
    artifacts = generate_example(tmp_path / "artifacts", scale=1.0)
    out = tmp_path / "out"
    # zstd:19 makes the build last several seconds, long enough to interrupt it.
    process = gfxpack(
        "build",
        "--compression",
        "zstd:19",
        "--config",
        str(EXAMPLE_CONFIG),
        "--artifacts",
        str(artifacts),
        "--out",
        str(out),
        "--rocm-version",
        "8.2.0",
        "-j",
        "2",
    )
    # Wait for the first finished package, then interrupt mid-build.
    first = process.stderr.readline()
    while first and not first.startswith("[1/"):
        first = process.stderr.readline()
    assert first.startswith("[1/"), "the build finished no package"
    time.sleep(0.3)
    process.send_signal(sig)
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 130, stderr
    assert stderr.splitlines()[-1] == "error: interrupted; nothing partial was left behind"
    left = sorted(p.name for p in out.iterdir() if p.name != ".gfxpack-building.json")
    assert "index.json" not in left
    assert left and all(name.endswith((".deb", ".rpm")) for name in left), left
    assert len(left) < 200  # it really stopped early
    for name in left:
        path = str(out / name)
        if name.endswith(".deb"):
            run("dpkg-deb", "--info", path)
        else:
            assert "NOT OK" not in run("rpmkeys", "-Kv", path).stdout


def cli_build(*args):
    return CliRunner().invoke(
        cli, ["build", "--config", str(EXAMPLE_CONFIG), "--rocm-version", "8.2.0", *args]
    )


def test_cli_builds_a_subset_quietly(example_artifacts, tmp_path):
    result = cli_build(
        "--artifacts",
        str(example_artifacts),
        "--out",
        str(tmp_path),
        "--format",
        "deb",
        "--target",
        "gfx942",
        "-j",
        "1",
        "-q",
    )
    assert result.exit_code == 0, result.output
    built = json.loads((tmp_path / "index.json").read_text())
    assert {f["format"] for f in built["files"]} == {"deb"}
    # -q: one summary line (the table of kinds is tests/cli/test_small.py's), no notes.
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{len(built['files'])} packages in {tmp_path} (")
    assert result.stderr == ""
    assert built["targets"] == ["gfx942"]
    assert not any("gfx1100" in f["file"] for f in built["files"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--artifacts", "/nonexistent"],
            "error: /nonexistent: artifacts directory does not exist\n",
        ),
        (["--format", "tgz"], "error: --format 'tgz': expected deb, rpm or deb,rpm\n"),
        (
            ["--compression", "zstd:99"],
            "error: compression 'zstd:99': the zstd level must be 1..22\n",
        ),
        (
            ["--compression", "bzip2"],
            "error: compression 'bzip2': expected zstd, xz, gzip or none, "
            "optionally with :LEVEL (zstd:19)\n",
        ),
    ],
)
def test_cli_errors_are_one_line(example_artifacts, tmp_path, args, message):
    base = ["--artifacts", str(example_artifacts), "--out", str(tmp_path / "out")]
    result = cli_build(*base, *args)
    assert result.exit_code == 1
    assert result.stderr == message


def test_cli_names_collisions(tmp_path):
    for name in ("a", "b"):
        stage = tmp_path / "art" / f"{name}_lib_generic" / "s"
        (stage / "lib").mkdir(parents=True)
        (stage / "lib" / "libsame.so").write_text(name)
        (tmp_path / "art" / f"{name}_lib_generic" / "artifact_manifest.txt").write_text("s\n")
    # The tree's one target: per-arch artifacts of a package not in this config.
    (tmp_path / "art" / "kernels_lib_gfx942").mkdir()
    (tmp_path / "art" / "kernels_lib_gfx942" / "artifact_manifest.txt").write_text("k\n")
    config = tmp_path / "package.json"
    config.write_text(
        json.dumps(
            [
                {
                    "Package": f"amdrocm-{n}",
                    "License": "MIT",  # an empty one is a warning of its own
                    "Artifactory": [
                        {"Artifact": n, "Artifact_Subdir": [{"Name": "s", "Components": ["lib"]}]}
                    ],
                }
                for n in ("a", "b")
            ]
        )
    )
    result = CliRunner().invoke(
        cli,
        [
            "build",
            "--config",
            str(config),
            "--artifacts",
            str(tmp_path / "art"),
            "--out",
            str(tmp_path / "out"),
            "--rocm-version",
            "8.2.0",
            "--target",
            "gfx942",
        ],
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "error: amdrocm-a8.2 and amdrocm-b8.2 both install /opt/rocm/core-8.2/lib/libsame.so\n"
    )
    assert not (tmp_path / "out").exists()


def test_source_date_epoch_must_be_a_number(example_artifacts, tmp_path):
    result = CliRunner(env={"SOURCE_DATE_EPOCH": "yesterday"}).invoke(
        cli,
        [
            "build",
            "--config",
            str(EXAMPLE_CONFIG),
            "--rocm-version",
            "8.2.0",
            "--artifacts",
            str(example_artifacts),
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "error: SOURCE_DATE_EPOCH='yesterday': expected seconds since 1970 "
        "(0 to 4294967295), e.g. 1704067200\n"
    )
    assert os.listdir(tmp_path) == []
