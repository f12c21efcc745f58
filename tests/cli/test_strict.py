"""--strict: every warning of plan, build, repo, verify and descriptors list-engines is
an error (exit 1, nothing written); without it the commands go on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.repo import publish
from tests.conftest import ROOT, build_example_args

STRICT_TAIL = "and --strict makes warnings errors"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def cycle_config(tmp_path: Path) -> Path:
    entry = {"Maintainer": "ROCm <rocm@amd.com>", "Gfxarch": "False"}
    config = tmp_path / "package.json"
    config.write_text(
        json.dumps(
            [
                {**entry, "Package": "amdrocm-base", "DEBDepends": ["amdrocm-runtime"]},
                {**entry, "Package": "amdrocm-runtime", "DEBDepends": ["amdrocm-base"]},
            ]
        )
    )
    return config


def test_plan_warns_about_a_cycle_and_strict_refuses_it(tmp_path):
    args = ["plan", "--config", str(cycle_config(tmp_path)), "--target", "gfx942"]
    args += ["--rocm-version", "8.2.0"]
    relaxed = invoke(*args)
    assert relaxed.exit_code == 0
    assert relaxed.stderr.startswith(
        "warning: dependency cycle: amdrocm-base8.2 → amdrocm-runtime8.2 → amdrocm-base8.2"
    )
    strict = invoke(*args, "--strict", "--quiet")
    assert strict.exit_code == 1
    assert strict.stdout == ""
    assert strict.stderr.splitlines() == [
        "error: dependency cycle: amdrocm-base8.2 → amdrocm-runtime8.2 → amdrocm-base8.2: "
        "dpkg and rpm install the packages of a cycle together",
        f"error: 1 warning, {STRICT_TAIL}",
    ]


def test_build_strict_stops_before_writing(example_artifacts, tmp_path):
    out = tmp_path / "out"
    result = invoke(
        *build_example_args(example_artifacts, out, "--strict", "-q"),
    )
    assert result.exit_code == 1
    # The example's amdrocm-dnn has no gfx950 build: a warning, here an error.
    assert "error: amdrocm-dnn: no artifacts for gfx950" in result.stderr
    assert result.stderr.splitlines()[-1].endswith(STRICT_TAIL)
    assert not out.exists()


def test_repo_strict_refuses_a_directory_without_index(example_release, tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    deb = next(f for f in example_release.files("deb").values())
    shutil.copy(deb, loose)
    out = tmp_path / "repo"
    relaxed = invoke("repo", "--in", str(loose), "--out", str(tmp_path / "relaxed"))
    assert relaxed.exit_code == 0, relaxed.stderr
    assert relaxed.stderr == (
        f"warning: {loose}: no index.json, so not a gfxpack build; publishing its "
        "1 package file(s) as they are\n"
    )
    strict = invoke("repo", "--in", str(loose), "--out", str(out), "--strict")
    assert strict.exit_code == 1
    assert strict.stderr.splitlines()[0].startswith(f"error: {loose}: no index.json")
    assert not out.exists()


def test_verify_strict_fails_when_a_rule_could_not_check(example_release, tmp_path):
    root = tmp_path / "repo"
    publish(example_release.out, root, "stable", 1_700_000_000)
    for contents in (root / "apt" / "dists" / "stable").rglob("Contents-*"):
        contents.unlink()
    args = ["verify", "--repo", str(root), "--format", "deb", "-q"]
    relaxed = invoke(*args)
    assert relaxed.exit_code == 0, relaxed.output
    assert "no Contents index, so the file-conflict rule checks nothing" in relaxed.stderr
    strict = invoke(*args, "--strict")
    assert strict.exit_code == 1
    assert "error: " in strict.stderr and "no Contents index" in strict.stderr
    assert strict.stderr.splitlines()[-1].endswith(STRICT_TAIL)


def broken_descriptors(tmp_path: Path) -> Path:
    tree = tmp_path / "descriptors"
    shutil.copytree(ROOT / "examples" / "descriptors", tree)
    (tree / "broken.ued.json").write_text('{"schema_version": "1.0", ')
    return tree


def test_list_engines_counts_errors_on_its_last_line_and_exits_0(tmp_path):
    tree = broken_descriptors(tmp_path)
    result = invoke("descriptors", "list-engines", "--root", str(tree))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "2 engine(s); 1 ERROR and 0 WARN diagnostic(s)"
    assert "ERROR D" in result.stderr


def test_list_engines_strict_exits_1_on_a_diagnostic(tmp_path):
    tree = broken_descriptors(tmp_path)
    result = invoke("descriptors", "list-engines", "--root", str(tree), "--strict")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        f"error: 2 engine(s); 1 ERROR and 0 WARN diagnostic(s), {STRICT_TAIL}"
    )
    clean = invoke("descriptors", "list-engines", "--root", str(ROOT / "examples/descriptors"))
    assert clean.exit_code == 0
    assert clean.stdout.splitlines()[-1] == "2 engine(s); 0 ERROR and 0 WARN diagnostic(s)"
    as_json = invoke("descriptors", "list-engines", "--root", str(tree), "--json")
    assert json.loads(as_json.stdout)["errors"] == 1


def test_strict_is_offered_by_every_command_the_issue_names():
    for command in (["plan"], ["build"], ["repo"], ["verify"], ["descriptors", "list-engines"]):
        assert "--strict" in invoke(*command, "--help").stdout, command
