"""``plan --waivers`` and ``build --waivers``: CI gates on TheRock's config with
``--strict``, accepting its known warnings (each with a reason) and failing on a new
one or on a waiver that no longer matches anything (stale).

The same TOML file verify takes: a verify waiver in it is passed by here, a plan
waiver is passed by there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack import views
from gfxpack.cli import cli
from gfxpack.plan import WarningRule
from tests.conftest import ROOT, shared_path
from tests.small_tree import build, make_tree

TARGETS = "gfx90a,gfx942,gfx950,gfx1100,gfx1151,gfx1201"
# TheRock's 8 declared dependency cycles with these targets: base <-> runtime, the blas
# and solver host packages, and blas <-> solver once per arch.
CYCLES = [
    "amdrocm-base8.2",
    "amdrocm-blas-host8.2",
    *(f"amdrocm-blas8.2-{arch}" for arch in TARGETS.split(",")),
]
STRICT_TAIL = "and --strict makes warnings errors"


def waiver_file(path: Path, *entries: dict[str, str]) -> Path:
    tables = [
        "[[waiver]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in e.items())
        for e in entries
    ]
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


def cycle_waivers(path: Path, packages: list[str] = CYCLES) -> Path:
    return waiver_file(
        path,
        *(
            {"rule": "dependency-cycle", "package": name, "reason": f"TheRock ships {name}'s cycle"}
            for name in packages
        ),
    )


def plan_therock(*args: str, targets: str = TARGETS):
    config = shared_path("fixtures", "therock", "package.json")
    command = ["plan", "--config", str(config), "--target", targets, "--rocm-version", "8.2.0"]
    return CliRunner().invoke(cli, [*command, "--strict", *args])


def test_plan_strict_fails_on_therock_today():
    result = plan_therock("-q")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[-1] == f"error: 8 warnings, {STRICT_TAIL}"
    assert sum(line.startswith("error: dependency cycle: ") for line in lines) == 8


def test_plan_strict_passes_with_its_eight_cycles_waived(tmp_path):
    result = plan_therock("--waivers", str(cycle_waivers(tmp_path / "w.toml")))
    assert result.exit_code == 0, result.output
    waived = [line for line in result.stderr.splitlines() if line.startswith("waived: ")]
    assert len(waived) == 8 and result.stderr.count("\n") == 8
    assert waived[0].startswith("waived: dependency cycle: amdrocm-base8.2 → ")
    assert waived[0].endswith("(TheRock ships amdrocm-base8.2's cycle)")
    assert "77 base packages → " in result.stdout  # the plan is printed


def test_a_stale_waiver_is_reported_and_fails_strict(tmp_path):
    # gfx1151 and gfx1201 are not planned: their waivers match nothing.
    waivers = cycle_waivers(tmp_path / "w.toml")
    result = plan_therock("--waivers", str(waivers), targets="gfx90a,gfx942,gfx950,gfx1100")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: waiver dependency-cycle amdrocm-blas8.2-{arch} ({waivers}, waiver {n}) "
        "matches no warning of this release: remove it, or correct it"
        for n, arch in ((7, "gfx1151"), (8, "gfx1201"))
    ] + [f"error: 2 warnings, {STRICT_TAIL}"]
    # Without --strict the stale waivers are warnings and the plan is printed.
    relaxed = CliRunner().invoke(
        cli,
        [
            *("plan", "--config", str(shared_path("fixtures", "therock", "package.json"))),
            *("--target", "gfx90a,gfx942,gfx950,gfx1100", "--rocm-version", "8.2.0"),
            *("--waivers", str(waivers)),
        ],
    )
    assert relaxed.exit_code == 0
    assert relaxed.stderr.count("warning: waiver dependency-cycle ") == 2


def test_a_new_warning_not_in_the_file_fails(tmp_path):
    # The gfx1201 cycle is left out of the file: a new warning, as a new arch would bring.
    waivers = cycle_waivers(tmp_path / "w.toml", CYCLES[:-1])
    result = plan_therock("--waivers", str(waivers), "-q")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: dependency cycle: amdrocm-blas8.2-gfx1201 → amdrocm-solver8.2-gfx1201 → "
        "amdrocm-blas8.2-gfx1201: dpkg and rpm install the packages of a cycle together",
        f"error: 1 warning, {STRICT_TAIL}",
    ]


def test_one_file_serves_plan_and_verify(tmp_path):
    """A verify waiver is no stale plan waiver; a plan waiver with 'format' (verify's
    key) is refused with one line naming the waiver."""
    verify_waiver = {"rule": "cross-arch", "package": "amdrocm-x-gfx942", "reason": "known"}
    waivers = cycle_waivers(tmp_path / "w.toml")
    waivers.write_text(
        waivers.read_text() + "\n" + waiver_file(tmp_path / "v.toml", verify_waiver).read_text()
    )
    assert plan_therock("--waivers", str(waivers), "-q").exit_code == 0
    bad = waiver_file(
        tmp_path / "bad.toml",
        {"rule": "dependency-cycle", "package": "amdrocm-base8.2", "reason": "r", "format": "deb"},
    )
    result = plan_therock("--waivers", str(bad), "-q")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {bad}, waiver 1: 'format' is for verify's rules; dependency-cycle is a "
        "plan warning\n"
    )


def test_an_unknown_rule_names_the_plan_rules_too(tmp_path):
    bad = waiver_file(
        tmp_path / "bad.toml", {"rule": "dependency-cycles", "package": "a", "reason": "r"}
    )
    result = plan_therock("--waivers", str(bad))
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "unknown rule 'dependency-cycles' (did you mean 'dependency-cycle'?)" in result.stderr
    assert "placeholder" in result.stderr and "cross-arch" in result.stderr


def test_json_names_each_warnings_rule_and_reads_it_back():
    result = plan_therock("--format", "json", "-q")
    assert result.exit_code == 1  # --strict: the 8 cycles
    result = CliRunner().invoke(
        cli,
        [
            *("plan", "--config", str(shared_path("fixtures", "therock", "package.json"))),
            *("--target", TARGETS, "--rocm-version", "8.2.0", "--format", "json", "-q"),
        ],
    )
    document = json.loads(result.stdout)
    rules = [note.get("rule") for note in document["notes"] if note["severity"] == "warning"]
    assert rules == ["dependency-cycle"] * 8
    assert all("rule" not in note for note in document["notes"] if note["severity"] == "info")
    again = views.plan_from_dict(document, "plan.json")
    assert [n.rule for n in again.notes if n.rule] == [WarningRule.DEPENDENCY_CYCLE] * 8


# --- build: a small config (init's placeholders are its warnings) -------------------------


@pytest.fixture
def small(tmp_path) -> tuple[Path, Path]:
    """A one-package tree and a config that leaves License empty."""
    make_tree(tmp_path / "artifacts")
    config = tmp_path / "package.json"
    config.write_text(
        json.dumps(
            [
                {
                    "Package": "amdrocm-blas",
                    "Maintainer": "ROCm <rocm@amd.com>",
                    "Artifactory": [
                        {
                            "Artifact": "blas",
                            "Artifact_Subdir": [{"Name": "rocBLAS", "Components": ["lib"]}],
                        }
                    ],
                }
            ]
        )
    )
    return tmp_path / "artifacts", config


def test_build_strict_fails_then_passes_with_the_waiver(small, tmp_path):
    artifacts, config = small
    out = tmp_path / "out"
    failed = build(tmp_path, artifacts, "--strict", config=config, out=out)
    assert failed.exit_code == 1
    assert failed.stderr.splitlines() == [
        f"error: {config}: License of amdrocm-blas is empty (an RPM then says 'Unknown'): "
        "set the license, such as MIT",
        f"error: 1 warning, {STRICT_TAIL}",
    ]
    assert not out.exists()
    waivers = waiver_file(
        tmp_path / "w.toml",
        {"rule": "placeholder", "package": "amdrocm-blas", "reason": "licensed upstream"},
    )
    passed = build(tmp_path, artifacts, "--strict", "--waivers", str(waivers), config=config)
    assert passed.exit_code == 0, passed.output
    assert (out / "index.json").is_file()


def test_build_reports_a_stale_waiver_and_fails_a_new_warning(small, tmp_path):
    artifacts, config = small
    stale = waiver_file(
        tmp_path / "stale.toml",
        {"rule": "placeholder", "package": "amdrocm-blas", "reason": "licensed upstream"},
        {"rule": "dependency-cycle", "package": "amdrocm-blas8.2", "reason": "gone since"},
    )
    result = build(tmp_path, artifacts, "--strict", "--waivers", str(stale), config=config)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: waiver dependency-cycle amdrocm-blas8.2 ({stale}, waiver 2) matches no "
        "warning of this release: remove it, or correct it",
        f"error: 1 warning, {STRICT_TAIL}",
    ]
    assert not (tmp_path / "out").exists()
    # A waiver for another package leaves this one's warning new.
    other = waiver_file(
        tmp_path / "other.toml",
        {"rule": "placeholder", "package": "amdrocm-fft", "reason": "licensed upstream"},
    )
    result = build(tmp_path, artifacts, "--strict", "--waivers", str(other), config=config)
    assert result.exit_code == 1
    assert "error: " + str(config) + ": License of amdrocm-blas is empty" in result.stderr


def test_every_rule_is_in_the_guide():
    guide = (ROOT / "docs" / "guides" / "release-engineer.md").read_text()
    assert [rule for rule in WarningRule if f"| `{rule}` |" not in guide] == []


def test_each_planner_warning_has_its_rule():
    """No warning a waiver could not name: the planner's warnings, each with its rule."""
    from gfxpack.config import parse_config
    from gfxpack.plan import MissingDependencies, Mode, PlanOptions, Severity, plan

    entries = [
        {"Package": "amdrocm-a", "DEBDepends": ["amdrocm-gone (>= 1.0)"], "Gfxarch": "True"},
        {"Package": "amdrocm-gone", "DisablePackaging": "True"},
    ]
    specs = parse_config(json.dumps(entries), "package.json").packages
    options = PlanOptions(mode=Mode.SINGLE_ARCH, missing_dependencies=MissingDependencies.WARN)
    planned = plan(specs, ["gfx942", "gfx1100"], "8.2.0", options=options)
    warnings = [n for n in planned.notes if n.severity is Severity.WARNING]
    assert {n.rule for n in warnings} == {
        WarningRule.SINGLE_ARCH,
        WarningRule.DEPENDENCY_OMITTED,
    }
