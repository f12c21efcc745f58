"""The dependency rules of spec section 7.1: what holds of a whole plan.

Each rule and Decision has its scenarios in tests/plan/cases/ (test_cases.py runs them);
the helpers here write package.json entries for the tests that build plans in code."""

from __future__ import annotations

import json

from gfxpack.config import parse_config
from gfxpack.plan import Kind, plan

TARGETS = ("gfx1100", "gfx942")


def specs(*entries):
    return parse_config(json.dumps(list(entries))).packages


def pkg(name, deps=(), gfx=False, meta=False, **extra):
    """An entry with the same dependencies in both formats."""
    entry = {
        "Package": name,
        "DEBDepends": list(deps),
        "RPMRequires": [d for d in deps if d != "libc6"],
    }
    entry["Gfxarch"] = "True" if gfx else "False"
    if meta:
        entry["Metapackage"] = "True"
    entry.update(extra)
    return entry


# --- Decision 12: metapackages own no files ------------------------------------------------


def test_only_host_device_and_versioned_packages_have_files(seed_plan):
    with_files = {x.kind for x in seed_plan.packages if x.has_files}
    assert with_files == {Kind.HOST, Kind.DEVICE, Kind.VERSIONED}


def test_plan_is_deterministic(seed_specs):
    assert plan(seed_specs, TARGETS, "8.2.0") == plan(seed_specs, TARGETS, "8.2.0")
