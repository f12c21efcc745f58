"""``verify --waivers FILE``: known findings accepted with a reason, stale waivers
reported, and a malformed waiver file refused with one error line naming it.

The repositories are real: the example with a leak added (tests/verify/conftest.py)
and a hand-made one with a shared file (tests/verify/helpers.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import RPM
from tests.verify.helpers import gfxarch_set, make_repo

SUITE = "amdrocm-suite8.2-gfx942"
REASON = "bench pulls the full core; fixed when bench depends on the host packages"


def verify(repo: Path, *args: str):
    return CliRunner().invoke(cli, ["verify", "--repo", str(repo), *args])


def waiver_file(path: Path, *entries: dict[str, str]) -> Path:
    """A TOML waiver file of ``entries`` (string values only)."""
    tables = [
        "[[waiver]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in e.items())
        for e in entries
    ]
    path.write_text("# known findings\n" + "\n".join(tables), encoding="utf-8")
    return path


def test_a_waived_finding_passes_and_says_why(leaky_repo, tmp_path):
    args = ("--format", "deb", "--install", SUITE)
    assert verify(leaky_repo, *args).exit_code == 1  # the same run without the waiver
    waivers = waiver_file(
        tmp_path / "waivers.toml", {"rule": "cross-arch", "package": SUITE, "reason": REASON}
    )
    result = verify(leaky_repo, *args, "--waivers", str(waivers))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    out = result.stdout
    assert f"  waived: cross-arch: {SUITE} is for gfx942 but pulls in " in out
    assert out.count(f"({REASON})\n") == 2  # the request and the package's own resolution
    # Nothing fails: the other arches' suites are notes, outside the install.
    rule_line = "  note  an arch-specific package pulls no device or arch meta of another arch"
    (line,) = [line for line in out.splitlines() if line.startswith(rule_line)]
    assert line.endswith(" resolutions; 2 waived; 2 notes)")
    assert "FAIL" not in out


def test_one_pattern_waives_every_arch_and_json_says_which_waiver(leaky_repo, tmp_path):
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "cross-arch", "package": "amdrocm-suite8.2-gfx*", "reason": REASON},
    )
    result = verify(leaky_repo, "--waivers", str(waivers), "--json")
    assert result.exit_code == 0, result.stdout[:2000]
    for report in json.loads(result.stdout):
        assert report["ok"] and report["findings"] == [] and report["stale_waivers"] == []
        assert len(report["waived"]) == 3
        assert {w["waiver"]["source"] for w in report["waived"]} == {f"{waivers}, waiver 1"}
        assert {w["waiver"]["reason"] for w in report["waived"]} == {REASON}


def test_a_stale_waiver_is_a_warning_and_an_error_with_strict(leaky_repo, tmp_path):
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "cross-arch", "package": SUITE, "reason": REASON},
        {"rule": "arch-set", "package": "amdrocm-gone8.2", "reason": "removed in 8.2"},
    )
    args = ("--format", "deb", "--install", SUITE, "--waivers", str(waivers))
    result = verify(leaky_repo, *args)
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: waiver arch-set amdrocm-gone8.2 ({waivers}, waiver 2) matches no "
        "finding in deb: remove it, or correct it\n"
    )
    strict = verify(leaky_repo, *args, "--strict")
    assert strict.exit_code == 1
    assert strict.stderr.startswith("error: waiver arch-set amdrocm-gone8.2 (")
    assert strict.stderr.endswith("1 warning, and --strict makes warnings errors\n")
    # With --json, --strict's error is the one JSON document on stdout (errors.md).
    strict_json = verify(leaky_repo, *args, "--strict", "--json")
    assert (strict_json.exit_code, strict_json.stderr) == (1, "")
    error = json.loads(strict_json.stdout)
    assert (error["reason"], error["option"]) == ("strict", None)
    assert error["error"].startswith("waiver arch-set amdrocm-gone8.2 (")
    assert error["error"].endswith("\n1 warning, and --strict makes warnings errors")
    quiet = verify(leaky_repo, *args, "--strict", "-q")
    assert quiet.exit_code == 1
    assert quiet.stdout.startswith("FAIL: install ")
    assert quiet.stdout.endswith(", 1 stale waiver(s)\n")
    (report,) = json.loads(verify(leaky_repo, *args, "--json").stdout)
    assert report["stale_waivers"] == [
        {
            "rule": "arch-set",
            "package": "amdrocm-gone8.2",
            "reason": "removed in 8.2",
            "source": f"{waivers}, waiver 2",
        }
    ]


def test_a_waiver_for_a_note_is_not_stale(leaky_repo, tmp_path):
    """A waiver file written for the whole repository also serves one install's gate."""
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "cross-arch", "package": "amdrocm-suite8.2-gfx950", "reason": REASON},
    )
    args = ("--format", "deb", "--install", "amdrocm-blas8.2-gfx942", "--json")
    result = verify(leaky_repo, *args, "--waivers", str(waivers))
    assert result.exit_code == 0 and result.stderr == ""
    (report,) = json.loads(result.stdout)
    assert [w["packages"] for w in report["waived"]] == [["amdrocm-suite8.2-gfx950"]]
    assert len(report["notes"]) == 2 and report["stale_waivers"] == []


def test_a_waiver_for_another_format_neither_waives_nor_goes_stale(leaky_repo, tmp_path):
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "cross-arch", "package": SUITE, "reason": REASON, "format": "rpm"},
    )
    deb = verify(leaky_repo, "--format", "deb", "--install", SUITE, "--waivers", str(waivers))
    assert deb.exit_code == 1
    assert "warning:" not in deb.stderr
    rpm = verify(leaky_repo, "--format", "rpm", "--install", SUITE, "--waivers", str(waivers))
    assert rpm.exit_code == 0, rpm.output


def test_a_plan_warnings_waiver_in_the_file_is_passed_by(leaky_repo, tmp_path):
    """One file serves plan, build and verify: verify neither uses nor reports as stale
    a waiver of a plan warning (dependency-cycle)."""
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "cross-arch", "package": SUITE, "reason": REASON},
        {"rule": "dependency-cycle", "package": "amdrocm-base8.2", "reason": "by design"},
    )
    args = ("--format", "deb", "--install", SUITE, "--json", "--waivers", str(waivers))
    result = verify(leaky_repo, *args)
    assert result.exit_code == 0 and result.stderr == "", result.output
    (report,) = json.loads(result.stdout)
    assert report["stale_waivers"] == []


def test_a_file_conflict_is_waived_by_its_path(tmp_path):
    packages = gfxarch_set()
    shared = "/opt/rocm/core-8.2/lib/librocblas.so.5"
    packages["amdrocm-runtime8.2"]["files"] += (shared,)
    root = make_repo(tmp_path, RPM, packages)
    args = ("--install", "amdrocm-blas-host8.2", "--json", "--waivers")
    entry = {"rule": "file-conflict", "package": "amdrocm-runtime8.2", "reason": "moving"}
    wrong = waiver_file(tmp_path / "wrong.toml", {**entry, "path": "/opt/rocm/other.so"})
    result = verify(root, *args, str(wrong))
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)
    # Found by the request and by the host's own resolution.
    assert [v["files"] for v in report["findings"]] == [[shared], [shared]]
    assert len(report["stale_waivers"]) == 1
    right = waiver_file(tmp_path / "right.toml", {**entry, "path": shared})
    result = verify(root, *args, str(right))
    assert result.exit_code == 0, result.stdout
    (report,) = json.loads(result.stdout)
    assert report["findings"] == []
    # Judged: the request and the host's own resolution; the rest were notes (the metas
    # and devices that pull in both owners).
    assert [w["install"] for w in report["waived"] if w["judged"]] == [
        "amdrocm-blas-host8.2",
        "amdrocm-blas-host8.2=8.2.0-1",
    ]
    assert len(report["waived"]) > 2
    assert report["stale_waivers"] == []


def test_quiet_prints_one_summary_line(leaky_repo, tmp_path):
    waivers = waiver_file(
        tmp_path / "w.toml", {"rule": "cross-arch", "package": SUITE, "reason": REASON}
    )
    result = verify(leaky_repo, "--install", SUITE, "--waivers", str(waivers), "-q")
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"ok: install {SUITE} brings ")
    assert line.endswith(" package(s) (deb, rpm); 0 finding(s), 4 waived, 4 note(s) elsewhere")
    assert result.stderr == ""
    failed = verify(leaky_repo, "--install", SUITE, "-q")
    assert failed.exit_code == 1
    assert failed.stdout.splitlines() == [failed.stdout.strip()] and failed.stdout.strip().endswith(
        "; 4 finding(s) (cross-arch), 0 waived, 4 note(s) elsewhere"
    )
    assert failed.stdout.startswith("FAIL: ")


def test_json_schema(leaky_repo, tmp_path):
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "cross-arch", "package": SUITE, "reason": REASON, "format": "deb"},
        {"rule": "installable", "package": "libgone1", "reason": "dropped"},
    )
    args = ("--install", SUITE, "--waivers", str(waivers), "--json")
    result = verify(leaky_repo, *args)
    assert result.exit_code == 1  # rpm has no waiver for the leak
    deb, rpm = json.loads(result.stdout)
    for report in (deb, rpm):
        assert {
            "scope",
            "closure",
            "findings",
            "notes",
            "waived",
            "stale_waivers",
            "warnings",
            "ok",
        } <= set(report)
        assert report["scope"] == "install"
        assert {"name", "version"} == set(report["closure"][0])
        for finding in report["findings"] + report["notes"]:
            assert {"rule", "install", "message", "packages", "path"} <= set(finding)
    assert deb["ok"] and not rpm["ok"]
    assert [w["waiver"]["rule"] for w in deb["waived"]] == ["cross-arch", "cross-arch"]
    assert [w["package"] for w in deb["stale_waivers"]] == ["libgone1"]
    assert [v["packages"] for v in rpm["findings"]] == [[SUITE], [SUITE]]
    assert rpm["violations"] == rpm["findings"]  # the older name, kept for scripts


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[waiver]]\nrule = "cross-arch"\npackage = "amdrocm-x"\n',
            "{file}, waiver 1: 'reason' is required (why the finding is accepted)",
        ),
        (
            '[[waiver]]\nrule = "cross-arch"\npackage = "amdrocm-x"\nreason = "  "\n',
            "{file}, waiver 1: 'reason' must be a non-empty string",
        ),
        (
            '[[waiver]]\nrule = "cros-arch"\npackage = "x"\nreason = "r"\n',
            "{file}, waiver 1: unknown rule 'cros-arch' (did you mean 'cross-arch'?) (one of "
            "installable, cross-arch, arch-set, file-conflict, dependency-cycle, "
            "cross-arch-path, no-artifacts, missing-arch, dependency-omitted, "
            "dependency-replaced, version-constraint, single-arch, placeholder)",
        ),
        (
            '[[waiver]]\nrule = "cross-arch"\npackages = "x"\nreason = "r"\n',
            "{file}, waiver 1: unknown key 'packages' (did you mean 'package'?) (a waiver has "
            "rule, package, reason, path, format)",
        ),
        (
            '[[waiver]]\nrule = "cross-arch"\nreason = "r"\n',
            "{file}, waiver 1: 'package' is required (the package the finding is about)",
        ),
        (
            '[[waiver]]\nrule = "cross-arch"\npackage = "x"\nreason = "r"\npath = "/a"\n',
            "{file}, waiver 1: 'path' names a shared file, so it is for file-conflict only",
        ),
        (
            '[[waiver]]\nrule = "cross-arch"\npackage = "x"\nreason = "r"\nformat = "dep"\n',
            "{file}, waiver 1: unknown format 'dep' (did you mean 'deb'?) (one of deb, rpm)",
        ),
        (
            '[[waiver]]\nrule = "cross-arch"\npackage = 3\nreason = "r"\n',
            "{file}, waiver 1: 'package' must be a non-empty string",
        ),
        (
            '[[waiver]]\nrule = "cross-arch"\npackage = "x"\nreason = "r"\n'
            '[[waiver]]\nrule = "cross-arch"\npackage = "x"\nreason = "again"\n',
            "{file}, waiver 2: the same finding as {file}, waiver 1",
        ),
        ('waiver = "all"\n', "{file}: 'waiver' must be [[waiver]] tables, one per known finding"),
        (
            '[[waivers]]\nrule = "cross-arch"\n',
            "{file}: unknown key 'waivers' (did you mean 'waiver'?): expected [[waiver]] tables",
        ),
        (
            '[[waiver]]\nrule = "cross-arch\n',
            "{file}: not valid TOML: Illegal character '\\n' (at line 2, column 19)",
        ),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", None),
        *(
            (
                f'[[waiver]]\nrule = "installable"\npackage = "{pattern}"\nreason = "r"\n',
                f"{{file}}, waiver 1: package '{pattern}' matches every package, which turns "
                "the installable rule off; name the package the finding is about ('*' may "
                "stand for part of it: amdrocm-core-sdk8.2-gfx*)",
            )
            for pattern in ("*", "**", "?*", "[a-z]*", "[!.]*")
        ),
    ],
)
def test_a_malformed_waiver_file_is_one_error_naming_it(tmp_path, text, message):
    root = make_repo(tmp_path, RPM, gfxarch_set())
    path = tmp_path / "waivers.toml"
    path.write_text(text, encoding="utf-8")
    result = verify(root, "--waivers", str(path))
    assert result.exit_code == 1
    assert result.stdout == ""  # refused before anything is verified
    (line,) = result.stderr.splitlines()
    if message is None:  # nested too deeply for the parser: still one line naming it
        assert line.startswith(f"error: {path}: "), line
    else:
        assert line == "error: " + message.format(file=path)


def test_a_missing_unreadable_or_huge_waiver_file_is_one_error(tmp_path):
    root = make_repo(tmp_path, RPM, gfxarch_set())
    missing = tmp_path / "missing.toml"
    result = verify(root, "--waivers", str(missing))
    assert (result.exit_code, result.stderr) == (1, f"error: {missing}: file not found\n")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    result = verify(root, "--waivers", str(fifo))  # refused, not opened: no hang
    assert result.exit_code == 1
    assert result.stderr == f"error: {fifo}: is a FIFO, expected a regular file\n"
    huge = tmp_path / "huge.toml"
    huge.write_text("# " + "x" * (1 << 20) + "\n")
    result = verify(root, "--waivers", str(huge))
    assert result.stderr == f"error: {huge}: a waiver file of at most 1 MiB is expected\n"
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"rule = '\xff'\n")
    result = verify(root, "--waivers", str(binary))
    assert result.stderr == f"error: {binary}: not UTF-8 text (byte 8)\n"


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_a_waiver_of_every_package_is_refused(tmp_path, strict):
    """``package = "*"`` would turn a rule off: refused with or without --strict, before
    anything is verified (a pattern with one literal character is a waiver)."""
    root = make_repo(tmp_path, RPM, gfxarch_set())
    every = waiver_file(tmp_path / "w.toml", {"rule": "cross-arch", "package": "*", "reason": "r"})
    result = verify(root, "--waivers", str(every), *(["--strict"] if strict else []))
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {every}, waiver 1: package '*' matches every package")
    some = waiver_file(
        tmp_path / "some.toml", {"rule": "cross-arch", "package": "*-gfx942", "reason": "r"}
    )
    result = verify(root, "--waivers", str(some))
    assert result.exit_code == 0, result.output  # stale (it matches nothing): a warning
    assert result.stderr.startswith("warning: waiver cross-arch *-gfx942 (")


def unresolvable_repo(tmp_path):
    """amdrocm-a needs libmissing1, which neither the repository nor the system has."""
    return make_repo(tmp_path, RPM, {"amdrocm-a": {"depends": ("libmissing1",)}, "amdrocm-b": {}})


def test_an_install_that_cannot_be_resolved_is_never_ok(tmp_path):
    """Waivers may accept every finding the run makes (the request's own failure and the
    missing requirement's); the install asked for still cannot be resolved, so the run
    fails and no line says ok about it."""
    root = unresolvable_repo(tmp_path)
    args = ("--install", "amdrocm-a")
    assert verify(root, *args).exit_code == 1  # the same run without waivers
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "installable", "package": "amdrocm-a", "reason": "known"},
        {"rule": "installable", "package": "libmissing1", "reason": "known"},
    )
    args += ("--waivers", str(waivers))
    (report,) = json.loads(verify(root, *args, "--json").stdout)
    assert report["findings"] == [] and len(report["waived"]) == 2  # everything waived
    assert report["ok"] is False
    quiet = verify(root, *args, "-q")
    assert quiet.exit_code == 1
    assert quiet.stdout.startswith("FAIL: install amdrocm-a cannot be resolved (rpm)")
    text = verify(root, *args)
    assert text.exit_code == 1
    assert "  FAIL  install amdrocm-a: cannot be resolved\n" in text.stdout
    (rule,) = [x for x in text.stdout.splitlines() if x.startswith(("  ok ", "  FAIL ", "  note "))
               and "every package in the repository is installable" in x]  # fmt: skip
    assert rule.startswith("  FAIL  ")
    assert text.stderr == (
        "error: install amdrocm-a cannot be resolved (rpm); a waiver does not change that\n"
    )


@pytest.mark.parametrize("install", ["", ",", " , ;"])
def test_an_install_naming_no_package_is_one_error(tmp_path, install):
    """Not the repository-wide checks alone, answered with ok: the install asked for
    names nothing."""
    root = make_repo(tmp_path, RPM, gfxarch_set())
    result = verify(root, "--install", install)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == f"error: --install {install!r}: names no package\n"
