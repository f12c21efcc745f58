"""Golden files: the expected output of a scenario, kept in tests/scenarios/golden/ (or,
for what the package writers emit, tests/formats/golden/) and compared exactly.

``pytest --update-golden`` rewrites the files a test checks from what gfxpack prints
now, instead of comparing; review ``git diff tests/scenarios/golden tests/formats/golden``
before keeping it.
Texts that are not gfxpack's output (the seed's own trees and tables) are only read:
rewriting them from gfxpack would make their test compare gfxpack with itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).resolve().parent / "scenarios" / "golden"
UPDATE_OPTION = "--update-golden"


@dataclass(frozen=True)
class Golden:
    """The golden files under ``directory``; ``update``: rewrite them instead of comparing."""

    directory: Path = GOLDEN_DIR
    update: bool = False

    def path(self, name: str) -> Path:
        return self.directory / name

    def read(self, name: str) -> str:
        return self.path(name).read_text(encoding="utf-8")

    def check(self, name: str, actual: str) -> None:
        """Fail unless ``actual`` is the golden file ``name`` (or, updating, write it)."""
        path = self.path(name)
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8", newline="")
            return
        if not path.is_file():
            pytest.fail(f"{path} is missing: run pytest {UPDATE_OPTION} to write it")
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, f"{path} differs ({UPDATE_OPTION} rewrites it)"
