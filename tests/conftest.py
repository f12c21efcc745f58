"""Shared fixtures: the seed-000 package set and the bundled example."""

from __future__ import annotations

from pathlib import Path

import pytest

from gfxpack.config import load_config
from gfxpack.plan import plan

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
EXAMPLE_CONFIG = ROOT / "examples" / "package.json"
SEED_CONFIG = ROOT / "tests" / "plan" / "seed000" / "package.json"
SEED_TARGETS = ("gfx1100", "gfx942")


@pytest.fixture(scope="session")
def seed_specs():
    return load_config(SEED_CONFIG).packages


@pytest.fixture(scope="session")
def seed_plan(seed_specs):
    """Seed 000's example: targets gfx1100 + gfx942, version 8.2."""
    return plan(seed_specs, SEED_TARGETS, "8.2.0")


@pytest.fixture(scope="session")
def example_config():
    return load_config(EXAMPLE_CONFIG)
