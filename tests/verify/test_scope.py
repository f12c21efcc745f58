"""Decision 17: ``verify --install X`` judges what installing X brings.

The rules (one arch, no cross-arch edge, every dependency resolvable) fail the run
only for X's closure; findings of other packages are notes unless ``--all``. Shown
on TheRock's own package.json (skipped without ../shared) and on the example with
a leak added where the install does not go (tests/verify/conftest.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.verify.rules import arch_of
from tests.conftest import THEROCK_TARGETS

SUITES = [f"amdrocm-suite8.2-{arch}" for arch in ("gfx942", "gfx950", "gfx1100")]


def verify(repo: Path, *args: str):
    return CliRunner().invoke(cli, ["verify", "--repo", str(repo), *args])


def reports(result) -> list[dict]:
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", ["amdrocm-core8.2-gfx942", "amdrocm-core-sdk8.2-gfx942"])
def test_therock_per_arch_installs_pass_and_bring_one_arch(therock_repo, name):
    """The CI gate of the issue: exit 0 for the runtime and the SDK of one arch. The
    SDK needs Decision 15 (a -devel depends on host packages, not full metas)."""
    result = verify(therock_repo, "--install", name, "--json")
    assert result.exit_code == 0, result.stdout[:3000]
    found = reports(result)
    assert [r["format"] for r in found] == ["deb", "rpm"]
    for report in found:
        assert report["scope"] == "install" and report["ok"]
        assert report["findings"] == [] and report["notes"] == []
        closure = [p["name"] for p in report["closure"]]
        # Checked here on names, not only by the rule: every arch package is gfx942's.
        assert {arch_of(n) for n in closure} == {None, "gfx942"}, closure
        assert "amdrocm-blas8.2-gfx942" in closure and name in closure
        assert len(closure) == len(report["transaction"])
    quiet = verify(therock_repo, "--install", name, "-q")
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout.startswith(f"ok: install {name} brings ")
    assert quiet.stdout.count("\n") == 1 and quiet.stderr == ""


def test_the_therock_sdk_pulls_devel_packages_and_host_libraries_only(therock_repo):
    (report, _) = reports(verify(therock_repo, "--install", "amdrocm-core-sdk8.2-gfx942", "--json"))
    closure = {p["name"] for p in report["closure"]}
    assert {"amdrocm-core-dev8.2-gfx942", "amdrocm-blas-dev8.2", "amdrocm-blas-host8.2"} <= (
        closure
    )
    assert not any(n.endswith(a) for n in closure for a in THEROCK_TARGETS if a != "gfx942")


def test_findings_outside_the_install_are_notes(leaky_repo):
    result = verify(leaky_repo, "--format", "deb", "--install", "amdrocm-blas8.2-gfx942")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    out = result.stdout
    assert "  judged: the 11 package(s) installing amdrocm-blas8.2-gfx942 brings" in out
    assert "  note  an arch-specific package pulls no device or arch meta of another arch" in out
    for suite in SUITES:
        assert f"  note: cross-arch: {suite} is for " in out
    assert "FAIL" not in out
    (report,) = reports(
        verify(leaky_repo, "--format", "deb", "--install", "amdrocm-blas8.2-gfx942", "--json")
    )
    assert report["ok"] and report["findings"] == []
    assert sorted(n["packages"] for n in report["notes"]) == [[s] for s in sorted(SUITES)]
    assert {n["rule"] for n in report["notes"]} == {"cross-arch"}


def test_all_judges_the_whole_repository(leaky_repo):
    args = ("--format", "deb", "--install", "amdrocm-blas8.2-gfx942", "--all")
    result = verify(leaky_repo, *args)
    assert result.exit_code == 1
    assert result.stderr == "error: 3 violation(s) of the package graph's rules\n"
    assert "  judged:" not in result.stdout
    (report,) = reports(verify(leaky_repo, *args, "--json"))
    assert report["scope"] == "repository" and report["closure"] == []
    assert sorted(v["install"] for v in report["findings"]) == sorted(
        f"{s}=8.2.0-1" for s in SUITES
    )
    assert report["notes"] == []


def test_without_install_every_finding_is_judged(leaky_repo):
    result = verify(leaky_repo, "--json")
    assert result.exit_code == 1
    for report in reports(result):
        assert report["scope"] == "repository"
        assert len(report["findings"]) == len(SUITES) and report["notes"] == []


def test_an_install_that_leaks_fails_on_its_own_findings_only(leaky_repo):
    suite = "amdrocm-suite8.2-gfx942"
    result = verify(leaky_repo, "--format", "rpm", "--install", suite)
    assert result.exit_code == 1
    # The request and the package's own resolution; the other arches' suites are notes.
    assert result.stderr == "error: 2 violation(s) of the package graph's rules\n"
    out = result.stdout
    assert "  FAIL  an arch-specific package pulls no device" in out
    assert f"  cross-arch: {suite} is for gfx942 but pulls in " in out
    assert "      requires amdrocm-bench8.2 = 8.2.0-1 -> amdrocm-bench8.2 (8.2.0-1)" in out
    assert "  note: cross-arch: amdrocm-suite8.2-gfx950 is for gfx950" in out
    # Processor order (Decision 16): gfx950 before gfx1100.
    assert "of gfx950, gfx1100: " in out
    (report,) = reports(verify(leaky_repo, "--format", "rpm", "--install", suite, "--json"))
    assert [v["install"] for v in report["findings"]] == [suite, f"{suite}=8.2.0-1"]
    assert {tuple(n["packages"]) for n in report["notes"]} == {(s,) for s in SUITES[1:]}


def test_a_requirement_only_other_packages_lack_is_a_note(leaky_repo, tmp_path):
    """Without OpenCL's system library, the runtime of blas still installs (exit 0, a
    note); the core cannot, and its failure and root cause are judged."""
    from tests.verify.test_system_missing import system_without

    system = tmp_path / "system.txt"
    system.write_text(system_without("deb", "ocl-icd-libopencl1"))
    args = ("--format", "deb", "--system", str(system), "--json", "--install")
    result = verify(leaky_repo, *args, "amdrocm-blas8.2-gfx942")
    assert result.exit_code == 0, result.stdout[:3000]
    (report,) = reports(result)
    assert report["findings"] == []
    (note,) = [n for n in report["notes"] if n["rule"] == "installable"]
    assert note["packages"] == ["ocl-icd-libopencl1"]
    assert note["message"].startswith("system packages not available: ocl-icd-libopencl1")
    failed = verify(leaky_repo, *args, "amdrocm-core8.2-gfx942")
    assert failed.exit_code == 1
    (report,) = reports(failed)
    assert report["closure"] == []  # a failed install brings nothing
    assert [(v["install"], v["packages"]) for v in report["findings"]] == [
        ("every package", ["ocl-icd-libopencl1"]),
        ("amdrocm-core8.2-gfx942", ["amdrocm-core8.2-gfx942"]),
    ]
