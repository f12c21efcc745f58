"""Fuzz the plan JSON reader (views.plan_from_dict: plan --format json files, the plan in a
build's index.json) and the report's index.json reader: either a value or one
GfxpackError, never another exception."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack import report, views
from gfxpack.config import load_config
from gfxpack.errors import GfxpackError
from gfxpack.plan import plan
from tests.conftest import SEED_CONFIG, SEED_TARGETS
from tests.fuzz.conftest import fuzz_settings, kept_inputs
from tests.fuzz.mutation import json_mutated

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

VALID = views.plan_as_dict(plan(load_config(SEED_CONFIG).packages, SEED_TARGETS, "8.2.0"))
SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def read_plan(data: Any) -> None:
    try:
        read = views.plan_from_dict(data, "fuzz.json")
    except GfxpackError:
        return
    views.dot(read)  # what was read can be drawn


@given(json_mutated(VALID, VALUES) | VALUES)
@fuzz_settings()
def test_plan_json(data: Any) -> None:
    read_plan(data)


@given(json_mutated(VALID, VALUES))
@fuzz_settings()
def test_index_json(plan_data: Any) -> None:
    files = [
        {
            "file": f"{p.get('name')}.deb",
            "package": p.get("name"),
            "kind": p.get("kind"),
            "format": "deb",
            "size": 1,
            "installed_size": 0,
        }
        for p in VALID["packages"]
    ]
    with tempfile.TemporaryDirectory() as build:
        Path(build, "index.json").write_text(json.dumps({"files": files, "plan": plan_data}))
        with contextlib.suppress(GfxpackError):
            report.make(Path(build))


@pytest.mark.parametrize("kept", kept_inputs("plan_json"))
def test_kept_inputs(kept: Path) -> None:
    read_plan(json.loads(kept.read_text()))
