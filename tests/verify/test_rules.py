"""Each rule of gfxpack verify, shown to pass on a well-formed set and to catch the
mistake it exists for, in both formats, with the path that pulled the packages in."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.verify import verify
from tests.verify.helpers import gfxarch_set, make_repo


def only(reports):
    assert len(reports) == 1
    return reports[0]


def by_rule(report, rule):
    return [v for v in report.violations if v.rule == rule]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_well_formed_set_passes_every_rule(tmp_path, fmt):
    root = make_repo(tmp_path, fmt, gfxarch_set())
    report = only(verify(root, ["amdrocm-blas8.2-gfx942"]))
    assert report.ok, report.violations
    assert [s.name for s in report.resolution.steps] == [
        "amdrocm-blas-host8.2",
        "amdrocm-blas8.2-gfx942",
        "amdrocm-runtime8.2",
    ]
    assert {s.action for s in report.resolution.steps} == {"install"}
    # One resolution for the request plus one per package in the repository.
    assert report.checked["installable"] == 1 + 6
    assert report.checked["cross-arch"] == 1 + 2  # the request and both devices
    assert report.checked["arch-set"] == 2  # amdrocm-blas8.2 and amdrocm-blas


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_device_that_pulls_another_arch_is_reported_with_its_path(tmp_path, fmt):
    packages = gfxarch_set()
    packages["amdrocm-blas8.2-gfx942"]["depends"] += ("amdrocm-blas8.2 (>= 8.2.0-1)",)
    root = make_repo(tmp_path, fmt, packages)
    report = only(verify(root, ["amdrocm-blas8.2-gfx942"]))
    found = [v for v in by_rule(report, "cross-arch") if v.install == "amdrocm-blas8.2-gfx942"]
    assert [v.message for v in found] == [
        "amdrocm-blas8.2-gfx942 is for gfx942 but pulls in 1 package(s) of gfx950: "
        "amdrocm-blas8.2-gfx950"
    ]
    path = found[0].path
    assert [h.package for h in path] == [
        "amdrocm-blas8.2-gfx942 (8.2.0-1)",
        "amdrocm-blas8.2 (8.2.0-1)",
        "amdrocm-blas8.2-gfx950 (8.2.0-1)",
    ]
    assert path[1].via == (
        "amdrocm-blas8.2 (>= 8.2.0-1)" if fmt is DEB else "amdrocm-blas8.2 >= 8.2.0-1"
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_meta_missing_a_device_or_its_host_is_reported(tmp_path, fmt):
    packages = gfxarch_set()
    packages["amdrocm-blas8.2"]["depends"] = ("amdrocm-blas8.2-gfx942 (= 8.2.0-1)",)
    # The device no longer needs the host either, so nothing pulls it in.
    packages["amdrocm-blas8.2-gfx942"]["depends"] = ("amdrocm-runtime8.2 (>= 8.2.0-1)",)
    root = make_repo(tmp_path, fmt, packages)
    report = only(verify(root, ["amdrocm-blas"]))
    messages = {(v.install, v.message) for v in by_rule(report, "arch-set")}
    missing = "amdrocm-blas-host8.2 (8.2.0-1), amdrocm-blas8.2-gfx950 (8.2.0-1)"
    assert messages == {
        ("amdrocm-blas", f"installing amdrocm-blas does not pull in {missing}"),
        ("amdrocm-blas=8.2.0-1", f"installing amdrocm-blas does not pull in {missing}"),
        ("amdrocm-blas8.2=8.2.0-1", f"installing amdrocm-blas8.2 does not pull in {missing}"),
    }
    request = next(v for v in report.violations if v.install == "amdrocm-blas")
    assert [h.package for h in request.path] == [
        "amdrocm-blas (8.2.0-1)",
        "amdrocm-blas8.2 (8.2.0-1)",
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_packages_owning_one_file_are_reported(tmp_path, fmt):
    packages = gfxarch_set()
    packages["amdrocm-runtime8.2"]["files"] += ("/opt/rocm/core-8.2/lib/librocblas.so.5",)
    root = make_repo(tmp_path, fmt, packages)
    report = only(verify(root, ["amdrocm-blas-host8.2"]))
    found = [v for v in by_rule(report, "file-conflict") if v.install == "amdrocm-blas-host8.2"]
    assert [v.message for v in found] == [
        "amdrocm-blas-host8.2 (8.2.0-1) and amdrocm-runtime8.2 (8.2.0-1) both install "
        "/opt/rocm/core-8.2/lib/librocblas.so.5"
    ]
    assert [h.package for h in found[0].path] == [
        "amdrocm-blas-host8.2 (8.2.0-1)",
        "amdrocm-runtime8.2 (8.2.0-1)",
    ]
    # Shared directories are not conflicts: both packages have /opt/rocm/core-8.2/lib.
    assert len(by_rule(report, "file-conflict")) == len(
        [v for v in report.violations if "librocblas.so.5" in v.message]
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_missing_system_package_is_reported_once_as_the_root_cause(tmp_path, fmt):
    packages = gfxarch_set()
    packages["amdrocm-blas-host8.2"]["depends"] += ("libmissing1 (>= 2.0)",)
    root = make_repo(tmp_path, fmt, packages)
    report = only(verify(root, []))
    # One root cause, counting the host and everything that needs it (the runtime alone
    # still installs), in the repository's own spelling.
    (violation,) = by_rule(report, "installable")
    missing = "libmissing1 (>= 2.0)" if fmt is DEB else "libmissing1 >= 2.0"
    assert violation.message.startswith(
        f"system packages not available: {missing} (needed by 5 packages); not on the system"
    )
    assert report.checked["installable"] == len(packages)


@pytest.mark.parametrize("fmt", FORMATS)
def test_versions_compare_as_the_format_says(tmp_path, fmt):
    packages = {
        "a": {"version": "8.2.1"},
        "b": {"depends": ("a (>= 8.2.1-1)",)},
        "c": {"depends": ("a (<< 8.2.1-1)",)},
        "d": {"depends": ("missing | a (= 8.2.1-1)",)},
        "e": {"depends": ("a (>> 8.2.0-1)", "a (<= 8.2.1-1)")},
    }
    root = make_repo(tmp_path, fmt, packages)
    report = only(verify(root, []))
    assert [v.install for v in by_rule(report, "installable")] == ["c=8.2.0-1"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_system_file_supplies_what_the_repository_lacks(tmp_path, fmt):
    packages = {"tool": {"depends": ("libfoo1 (>= 2.0)",)}}
    root = make_repo(tmp_path, fmt, packages)
    assert not only(verify(root, ["tool"])).ok
    system = tmp_path / "status"
    system.write_text(
        "Package: old-thing\nStatus: deinstall ok config-files\nVersion: 1\n\n"
        "Package: libfoo\nStatus: install ok installed\nVersion: 2.1-1\n"
        f"Provides: {'libfoo1 (= 2.1)' if fmt is DEB else 'libfoo1 = 2.1'}\n"
    )
    report = only(verify(root, ["tool"], fmt, system))
    assert report.ok, report.violations
    assert [s.name for s in report.resolution.steps] == ["tool"]
    assert report.system == str(system)


def test_cli_reports_a_violation_with_its_path_and_exit_status_1(tmp_path):
    packages = gfxarch_set()
    packages["amdrocm-blas8.2-gfx942"]["depends"] += ("amdrocm-blas8.2-gfx950 (= 8.2.0-1)",)
    root = make_repo(tmp_path, DEB, packages)
    result = CliRunner().invoke(
        cli, ["verify", "--repo", str(root), "--install", "amdrocm-blas8.2-gfx942"]
    )
    assert result.exit_code == 1
    assert "FAIL  an arch-specific package pulls no device" in result.output
    assert (
        "cross-arch: amdrocm-blas8.2-gfx942 is for gfx942 but pulls in "
        "1 package(s) of gfx950: amdrocm-blas8.2-gfx950"
    ) in result.output
    assert "requires amdrocm-blas8.2-gfx950 (= 8.2.0-1) -> amdrocm-blas8.2-gfx950" in (
        result.output
    )
    assert "violation(s)" in result.stderr


def test_cli_json_is_parseable_and_complete(tmp_path):
    root = make_repo(tmp_path, RPM, gfxarch_set())
    result = CliRunner().invoke(
        cli, ["verify", "--repo", str(root), "--install", "amdrocm-blas", "--json"]
    )
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.output)
    assert report["format"] == "rpm" and report["ok"] and report["violations"] == []
    assert {s["name"] for s in report["transaction"]} == set(gfxarch_set())
    assert report["transaction"][0] == {
        "action": "install",
        "name": "amdrocm-blas",
        "version": "8.2.0-1",
        "arch": "x86_64",
    }
