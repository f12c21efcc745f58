"""A fresh clone, without ../shared beside it, passes the suite: every test that reads the
shared fixtures skips with a reason naming the missing path."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# make check skips it: the repository cloned and its suite run in the clone.
pytestmark = pytest.mark.slow


def test_suite_passes_with_the_shared_fixtures_hidden(tmp_path):
    readers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(r"\bshared_path\(|\bSHARED\b", path.read_text(encoding="utf-8"))
        and path.name != "test_fresh_clone.py"
    )
    assert len(readers) >= 3  # the seed golden texts, the upstream descriptors, TheRock
    hidden = tmp_path / "no-shared-here"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *readers],
        cwd=ROOT,
        env={**os.environ, "GFXPACK_SHARED": str(hidden)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    skips = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips, result.stdout[-3000:]
    assert all(f"{hidden}/" in line and " is absent" in line for line in skips), skips
    assert re.search(r"\d+ passed, \d+ skipped", result.stdout)
