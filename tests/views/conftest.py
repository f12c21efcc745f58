"""Fixtures shared by the tests of gfxpack.views."""

from __future__ import annotations

import pytest

from gfxpack.plan import plan
from tests.conftest import SEED_TARGETS


@pytest.fixture(scope="module")
def example_plan(example_config):
    return plan(example_config.packages, SEED_TARGETS, "8.2.0")
