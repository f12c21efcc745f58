"""The planner's scenarios, one JSON file each in tests/plan/cases/ (as resolvelib keeps
its functional cases), run by the one test below; its ids are the files' stems.

A case holds the input of :func:`gfxpack.plan.plan` and what to expect of the result::

    {
      "doc": "what the case shows and why",
      "packages": [package.json entries],
      "targets": ["gfx1100", "gfx942"],
      "version": "8.2.0",
      "release": "1",                                 optional
      "options": {"pin_policy": "exact", ...},        optional: PlanOptions' fields
      "artifacts": ["blas_lib_generic", ...],         optional: the tree's directories
      "expected": {...}
    }

``expected`` holds either ``causes``, the lines of the PlanError the plan must fail
with, or any of the keys of PLAN_CHECKS, each compared exactly with the plan. A
relation is written as the format renders it, so its version operator is compared
too. Known gaps go in XFAIL with the reason; the test then must fail (strict).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gfxpack.config import parse_config
from gfxpack.formats import FORMATS
from gfxpack.plan import (
    ArtifactIndex,
    MissingDependencies,
    Mode,
    PinPolicy,
    PlanError,
    PlannedPackage,
    PlanOptions,
    ReleasePlan,
    Variant,
    plan,
)

CASES_DIR = Path(__file__).resolve().parent / "cases"
CASES = sorted(CASES_DIR.glob("*.json"))

# Case stem -> why the planner does not do what the case expects yet.
XFAIL: dict[str, str] = {}

INPUT_KEYS = {"doc", "packages", "targets", "version", "release", "options", "artifacts"}
OPTION_TYPES: dict[str, Callable[[str], Any]] = {
    "mode": Mode,
    "pin_policy": PinPolicy,
    "variant": Variant,
    "install_prefix": str,
    "missing_dependencies": MissingDependencies,
}
FORMAT_BY_NAME = {fmt.name: fmt for fmt in FORMATS}


def _names(p: ReleasePlan, expected: dict[str, list[str]]) -> object:
    return {fmt: [x.name(FORMAT_BY_NAME[fmt]) for x in p.packages] for fmt in expected}


def _families(p: ReleasePlan, expected: dict[str, object]) -> object:
    return {base: [[x.key, x.kind.value] for x in p.family(base)] for base in expected}


def _kinds(p: ReleasePlan, expected: dict[str, str]) -> object:
    return {name: _get(p, name).kind.value for name in expected}


def _relations(p: ReleasePlan, expected: dict[str, dict[str, dict[str, object]]]) -> object:
    """For each package named, each format's relation fields the case lists, rendered."""
    shown: dict[str, dict[str, dict[str, list[str]]]] = {}
    for name, formats in expected.items():
        package = _get(p, name)
        shown[name] = {}
        for fmt_name, fields in formats.items():
            fmt = FORMAT_BY_NAME[fmt_name]
            relations = package.relations(fmt)
            shown[name][fmt_name] = {
                field: [fmt.render(dep) for dep in getattr(relations, field)] for field in fields
            }
    return shown


def _notes(p: ReleasePlan, expected: list[list[str]]) -> object:
    """The expected notes the plan has (each must be there; others may be too)."""
    have = [[n.severity.value, n.message] for n in p.notes]
    return [note for note in expected if note in have] + [
        ["missing:", *note] for note in expected if note not in have
    ]


def _all_notes(p: ReleasePlan, expected: object) -> object:
    return [[n.severity.value, n.message] for n in p.notes]


def _edge_ops(p: ReleasePlan, expected: object) -> object:
    """Every version operator on an edge into the set, in either format (null: none)."""
    ops = {req.op for x in p.packages for fmt in FORMATS for req in x.relations(fmt).edges()}
    return sorted(ops, key=str)


def _get(p: ReleasePlan, name: str) -> PlannedPackage:
    package = p.get(name)
    assert package is not None, f"{name} is not planned"
    return package


# Expected key -> what the plan shows for it (given the expected value, to pick names).
PLAN_CHECKS: dict[str, Callable[[ReleasePlan, Any], object]] = {
    "names": _names,  # every package, in plan order, per format
    "families": _families,  # base -> [key, kind] of each of its packages
    "kinds": _kinds,  # a package (any format's name) -> its kind
    "relations": _relations,  # a package -> format -> field -> rendered relations
    "notes": _notes,  # [severity, message] that must be among the notes
    "all_notes": _all_notes,  # [severity, message] of every note, in order
    "edge_ops": _edge_ops,
    "prefix": lambda p, _: p.prefix,
    "targets": lambda p, _: list(p.targets),
    "arches": lambda p, _: list(p.arches),
    "owners": lambda p, _: {arch: list(targets) for arch, targets in p.owners.items()},
}


def load_case(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    unknown = set(case) - INPUT_KEYS - {"expected"}
    assert not unknown, f"{path.name}: unknown keys {sorted(unknown)}"
    expected = case.get("expected") or {}
    # A case that expects nothing checks nothing: refuse it rather than pass it.
    assert expected, f"{path.name}: no expected"
    unknown = set(expected) - set(PLAN_CHECKS) - {"causes"}
    assert not unknown, f"{path.name}: unknown expected keys {sorted(unknown)}"
    assert "causes" not in expected or len(expected) == 1, f"{path.name}: causes and a plan"
    return case


def run_case(case: dict[str, Any]) -> ReleasePlan:
    options: dict[str, Any] = {
        key: OPTION_TYPES[key](value) for key, value in case.get("options", {}).items()
    }
    artifacts = case.get("artifacts")
    return plan(
        parse_config(json.dumps(case["packages"])).packages,
        case["targets"],
        case["version"],
        case.get("release", "1"),
        options=PlanOptions(**options),
        artifacts=None if artifacts is None else ArtifactIndex(artifacts),
    )


def _param(path: Path) -> object:
    reason = XFAIL.get(path.stem)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_param(path) for path in CASES])
def test_case(path: Path) -> None:
    case = load_case(path)
    expected = case["expected"]
    if "causes" in expected:
        with pytest.raises(PlanError) as caught:
            run_case(case)
        assert str(caught.value).splitlines() == expected["causes"]
        return
    release_plan = run_case(case)
    for key, value in expected.items():
        assert PLAN_CHECKS[key](release_plan, value) == value, f"{path.name}: expected.{key}"


def test_there_are_cases_and_each_xfail_names_one() -> None:
    assert CASES, f"no case in {CASES_DIR}"
    assert set(XFAIL) <= {path.stem for path in CASES}
