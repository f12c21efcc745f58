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
