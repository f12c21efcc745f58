"""The example release published as repositories, shared by the verify tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from gfxpack.repo import publish


@pytest.fixture(scope="session")
def example_repo(example_release, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("published") / "repo"
    publish(example_release.out, root, "stable", 1_700_000_000)
    return root
