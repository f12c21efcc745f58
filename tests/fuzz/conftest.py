"""Fuzz harnesses for every reader of untrusted input.

Each ``tests/fuzz/test_<reader>.py`` drives one reader with hypothesis and
asserts it either succeeds or raises gfxpack's own error type, never anything
else. ``make test`` runs them briefly; ``make fuzz`` (``GFXPACK_FUZZ=long``)
runs them long. An input that ever crashed a reader is kept as a file under
``corpus/<reader>/`` and replayed on every run through :func:`corpus`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

CORPUS = Path(__file__).parent / "corpus"

_EXAMPLES = {"brief": 60, "long": 5000}


def fuzz_settings() -> settings:
    """Hypothesis settings for one harness: brief by default, long under ``make fuzz``."""
    mode = os.environ.get("GFXPACK_FUZZ", "brief")
    return settings(
        max_examples=_EXAMPLES.get(mode, _EXAMPLES["brief"]),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


def corpus(reader: str) -> list[Path]:
    """The kept inputs of one reader (``corpus/<reader>/*``), sorted; empty when none yet."""
    folder = CORPUS / reader
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def kept_inputs(reader: str) -> list[Any]:
    """The kept inputs of one reader as test parameters, each named by its file. With
    none kept yet, one skipped parameter saying so: pytest's own "got empty parameter
    set" does not say why the replay checked nothing."""
    paths = corpus(reader)
    if paths:
        return [pytest.param(path, id=path.name) for path in paths]
    why = (
        f"no kept input to replay: tests/fuzz/corpus/{reader}/ holds none yet (an input "
        "is kept there once it has crashed the reader)"
    )
    return [pytest.param(None, id="none-kept", marks=pytest.mark.skip(reason=why))]
