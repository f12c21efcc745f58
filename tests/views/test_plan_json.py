"""The plan's JSON contract (views/plan_json.py): fields, both formats' spellings, notes,
and targets in processor order."""

from __future__ import annotations

import json

from gfxpack import views
from tests.views.helpers import ORDER, plan_cli

CONTRACT_KINDS = {
    "versioned",
    "non-versioned",
    "host",
    "device",
    "meta",
    "generic-meta",
    "arch-meta",
    "versioned-meta",
}


def test_json_contract(seed_plan):
    data = json.loads(views.dumps(views.plan_as_dict(seed_plan)))
    assert {k: data[k] for k in ("rocm_version", "release", "mode", "targets")} == {
        "rocm_version": "8.2.0",
        "release": "1",
        "mode": "kpack",
        "targets": ["gfx942", "gfx1100"],  # processor order (Decision 16), not as given
    }
    by_name = {p["name"]: p for p in data["packages"]}
    device = by_name["amdrocm-blas8.2-gfx942"]
    assert device == {
        "name": "amdrocm-blas8.2-gfx942",
        "base": "amdrocm-blas",
        "kind": "device",
        "arch": "gfx942",
        "has_files": True,
        "deb": {
            "name": "amdrocm-blas8.2-gfx942",
            "depends": [
                "amdrocm-blas-host8.2 (= 8.2.0-1)",
                "amdrocm-solver8.2-gfx942 (>= 8.2.0-1)",
            ],
            "recommends": [],
            "suggests": [],
            "provides": [],
            "conflicts": [],
            "replaces": [],
        },
        "rpm": {
            "name": "amdrocm-blas8.2-gfx942",
            "requires": ["amdrocm-blas-host8.2 = 8.2.0-1", "amdrocm-solver8.2-gfx942 >= 8.2.0-1"],
            "recommends": [],
            "suggests": [],
            "provides": [],
            "conflicts": [],
            "obsoletes": [],
        },
    }
    assert by_name["amdrocm-blas-host8.2"]["deb"]["depends"][0] == "libc6"
    assert {p["kind"] for p in data["packages"]} == CONTRACT_KINDS
    assert by_name["amdrocm-core8.2"]["arch"] is None


def test_json_names_use_rpm_spelling(example_plan):
    data = views.plan_as_dict(example_plan)
    devel = next(p for p in data["packages"] if p["name"] == "amdrocm-blas-devel8.2")
    assert devel["base"] == "amdrocm-blas-devel"
    assert devel["deb"]["name"] == "amdrocm-blas-dev8.2"
    assert devel["kind"] in CONTRACT_KINDS
    runtime = next(p for p in data["packages"] if p["name"] == "amdrocm-runtime")
    assert runtime["rpm"]["obsoletes"] == ["hip-runtime-amd"]
    assert runtime["deb"]["replaces"] == ["hip-runtime-amd"]


def test_json_lists_notes(example_plan):
    notes = views.plan_as_dict(example_plan)["notes"]
    assert {
        "severity": "info",
        "message": "amdrocm-openmp is disabled (DisablePackaging): not built",
        "packages": ["amdrocm-openmp"],
    } in notes


# --- Decision 16: targets in processor order everywhere ------------------------------------


def test_plan_json_lists_targets_arches_and_packages_in_processor_order():
    data = json.loads(plan_cli("--format", "json"))
    assert data["targets"] == data["arches"] == ORDER
    devices = [p["arch"] for p in data["packages"] if p["base"] == "amdrocm-blas" and p["arch"]]
    assert devices == ORDER
    generic = next(p for p in data["packages"] if p["name"] == "amdrocm-core8.2")
    assert generic["deb"]["depends"] == [f"amdrocm-core8.2-{a} (= 8.2.0-1)" for a in ORDER]
