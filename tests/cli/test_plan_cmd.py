"""The command line: every output format, notes on stderr, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from tests.conftest import EXAMPLE_CONFIG, SEED_CONFIG

BASE = [
    "plan",
    "--config",
    str(SEED_CONFIG),
    "--target",
    "gfx1100,gfx942",
    "--rocm-version",
    "8.2.0",
]


def run(*args):
    return CliRunner().invoke(cli, [*args])


def test_summary_is_the_default():
    result = run(*BASE)
    assert result.exit_code == 0, result.output
    assert "ROCm 8.2.0-1, kpack mode, targets gfx942, gfx1100" in result.stdout
    assert "12 base packages → 35 packages" in result.stdout


def test_json_is_parseable_and_notes_go_to_stderr():
    result = run(
        "plan",
        "--config",
        str(EXAMPLE_CONFIG),
        "--target",
        "gfx942",
        "--target",
        "gfx1100",
        "--rocm-version",
        "8.2.0",
        "--release",
        "7",
        "--format",
        "json",
        "-v",
    )
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["release"] == "7" and data["targets"] == ["gfx942", "gfx1100"]
    assert "info: amdrocm-openmp is disabled" in result.stderr


def test_targets_split_on_space_comma_and_semicolon():
    result = run(
        "plan",
        "--config",
        str(SEED_CONFIG),
        "--target",
        "gfx1100 gfx942;gfx950",
        "--rocm-version",
        "8.2",
        "--format",
        "json",
    )
    assert json.loads(result.stdout)["targets"] == ["gfx942", "gfx950", "gfx1100"]


def test_tree_for_one_package():
    result = run(*BASE, "--format", "tree", "--package", "amdrocm-sysdeps")
    assert result.stdout.splitlines()[:5] == [
        "amdrocm-sysdeps (non-versioned)",
        "│",
        "│   [No files - dependency pointer only]",
        "│",
        "└─► amdrocm-sysdeps8.2 (= 8.2.0-1) (versioned)",
    ]


def test_table_for_a_planned_package_name_shows_its_family():
    result = run(*BASE, "--format", "table", "--package", "amdrocm-blas8.2-gfx942")
    assert result.stdout.splitlines()[2].startswith("| `amdrocm-blas-host8.2`")


def test_tables_and_trees_for_everything():
    tables = run(*BASE, "--format", "table").stdout
    assert tables.count("### amdrocm-") == 12
    trees = run(*BASE, "--format", "tree").stdout
    assert trees.count("(non-versioned)\n") == 12


def test_dot_for_one_package():
    result = run(*BASE, "--format", "dot", "--package", "amdrocm-developer-tools")
    assert result.stdout.startswith('digraph "gfxpack 8.2.0-1" {')
    assert "amdrocm-blas" not in result.stdout
    assert "cluster_amdrocm-profiler" not in result.stdout  # a dependency, drawn as a leaf


def test_pkg_type_rpm_and_options():
    result = run(
        "plan",
        "--config",
        str(EXAMPLE_CONFIG),
        "--target",
        "gfx942",
        "--rocm-version",
        "7.15.0",
        "--build-variant",
        "asan",
        "--pin-policy",
        "exact",
        "--format",
        "tree",
        "--package",
        "amdrocm-blas-devel",
        "--pkg-type",
        "rpm",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("amdrocm-blas-devel-asan (non-versioned)")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--package", "amdrocm-nope"],
            "error: package 'amdrocm-nope' is not in the plan (give a base name from package.json "
            "or a planned package name; see --format summary)\n",
        ),
        (
            ["--rocm-version", "8"],
            "error: ROCm version '8': expected at least two numeric dot fields, such as 8.2.0\n",
        ),
        (
            ["--release", "1-2"],
            "error: release '1-2': expected letters, digits, '.', '+' or '~' (no '-'), such as 1\n",
        ),
        (
            ["--target", "gfx1100,gfx94"],
            "error: target 'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)\n",
        ),
        (
            ["--target", "sm_90"],
            "error: target 'sm_90' is not an AMDGPU processor LLVM knows (expected a processor "
            "such as gfx942, gfx942:xnack+ or a family such as gfx94X-dcgpu)\n",
        ),
    ],
)
def test_bad_arguments_give_one_line(args, message):
    result = run(*BASE, *args)
    assert result.exit_code == 1
    assert result.stderr == message


def test_bad_config_names_file_and_pointer(tmp_path):
    bad = tmp_path / "package.json"
    bad.write_text('[{"Package": "amdrocm-a", "DEBDepends": ["libc6", 3]}]')
    result = run("plan", "--config", str(bad), "--target", "gfx942", "--rocm-version", "8.2.0")
    assert result.exit_code == 1
    assert result.stderr == f"error: {bad}: /0/DEBDepends/1: expected a string, got a number (3)\n"


def test_plan_errors_are_all_listed(tmp_path):
    bad = tmp_path / "package.json"
    bad.write_text(json.dumps([{"Package": "amdrocm-a", "DEBDepends": ["amdrocm-b", "amdrocm-c"]}]))
    result = run("plan", "--config", str(bad), "--target", "gfx942", "--rocm-version", "8.2.0")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: amdrocm-a (/0/DEBDepends/0) depends on amdrocm-b, which package.json does not "
        "define",
        "error: amdrocm-a (/0/DEBDepends/1) depends on amdrocm-c, which package.json does not "
        "define",
    ]
    allowed = run(
        "plan",
        "--config",
        str(bad),
        "--target",
        "gfx942",
        "--rocm-version",
        "8.2.0",
        "--allow-missing-deps",
        "--format",
        "json",
    )
    assert allowed.exit_code == 0
    assert "warning: amdrocm-a (/0/DEBDepends/0) depends on amdrocm-b" in allowed.stderr


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([], "planned nothing: package.json defines no package (an empty array)"),
        (
            [{"Package": "amdrocm-a", "DisablePackaging": "True"}],
            "planned nothing: every package package.json defines is disabled "
            "(DisablePackaging) or has no artifacts (1 disabled, 0 without artifacts)",
        ),
    ],
    ids=["empty", "all-disabled"],
)
def test_a_plan_of_nothing_says_so_and_fails(tmp_path, entries, message):
    """No false green: a plan without packages would print an empty table and exit 0."""
    config = tmp_path / "package.json"
    config.write_text(json.dumps(entries))
    for output in ("summary", "json"):
        result = run(
            *("plan", "--config", str(config), "--target", "gfx942"),
            *("--rocm-version", "8.2.0", "--format", output),
        )
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr == f"error: {message}\n"


def test_missing_target_is_a_usage_error():
    result = run("plan", "--config", str(SEED_CONFIG), "--rocm-version", "8.2.0")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: missing option --target TEXT: GPU targets, e.g. gfx1100,gfx942 "
        "(comma, space or ';' separated; repeatable)\n"
    )


def test_console_script_runs_as_a_module():
    """The installed entry point, in a real process: exit status and streams."""
    done = subprocess.run(
        [sys.executable, "-m", "gfxpack", *BASE, "--format", "json", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert len(json.loads(done.stdout)["packages"]) == 35
    failed = subprocess.run(
        [
            sys.executable,
            "-m",
            "gfxpack",
            "plan",
            "--config",
            "/nonexistent",
            "--target",
            "gfx942",
            "--rocm-version",
            "8.2.0",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert failed.returncode == 1
    assert failed.stderr == "error: /nonexistent: file not found\n"
    assert "Traceback" not in failed.stderr


def test_help_explains():
    text = run("plan", "--help").stdout
    options = (
        "--config",
        "--target",
        "--rocm-version",
        "--format",
        "--package",
        "--pin-policy",
        "--mode",
        "--build-variant",
        "--install-prefix",
    )
    assert [option for option in options if option not in text] == []
