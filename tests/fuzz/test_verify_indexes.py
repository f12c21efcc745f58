"""Fuzz what gfxpack verify reads of a repository: Release, Packages and repomd.xml,
each mutated from a repository gfxpack repo published, then loaded as verify loads it."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from hypothesis import given

from gfxpack.errors import GfxpackError
from gfxpack.formats import DEB, FORMATS, RPM, PackageFormat
from gfxpack.repo import publish
from gfxpack.verify.system import read_system
from gfxpack.verify.universe import load
from tests.fuzz.conftest import corpus, fuzz_settings
from tests.fuzz.mutation import mutated
from tests.verify.helpers import gfxarch_set, write_package

# make check skips it: a hypothesis fuzz harness (make fuzz runs it long).
pytestmark = pytest.mark.slow

RELEASE = "apt/dists/stable/Release"
PACKAGES = "apt/dists/stable/main/binary-amd64/Packages"
REPOMD = "rpm/repodata/repomd.xml"


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz-repo")
    for fmt in FORMATS:
        for name, options in gfxarch_set().items():
            write_package(folder / "build", fmt, name, **options)
    publish(folder / "build", folder / "repo", "stable", 1_700_000_000)
    return folder / "repo"


def _load(root: Path, fmt: PackageFormat) -> None:
    """Load as verify does; only gfxpack's errors may come out."""
    try:
        universe = load(root, fmt, read_system(None, fmt))
        list(universe.package_files())
        assert universe.files is not None
    except GfxpackError:
        pass


def _exercise(reader: str, root: Path, data: bytes) -> None:
    if reader == "release":
        (root / RELEASE).write_bytes(data)
        _load(root, DEB)
    elif reader == "packages":
        # A Release that vouches for these bytes, so the parser is reached.
        (root / PACKAGES).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        release = f"Suite: stable\nSHA256:\n {digest} {len(data)} main/binary-amd64/Packages\n"
        (root / RELEASE).write_text(release)
        _load(root, DEB)
    else:
        (root / REPOMD).write_bytes(data)
        _load(root, RPM)


@pytest.mark.parametrize(
    ("reader", "where"),
    [("release", RELEASE), ("packages", PACKAGES), ("repomd", REPOMD)],
)
def test_mutated_index_raises_only_gfxpack_errors(repository, tmp_path, reader, where) -> None:
    root = tmp_path / "repo"
    shutil.copytree(repository, root)
    original = (root / where).read_bytes()

    @fuzz_settings()
    @given(data=mutated(original))
    def run(data: bytes) -> None:
        _exercise(reader, root, data)

    run()


@pytest.mark.parametrize(
    "path",
    [*corpus("release"), *corpus("packages"), *corpus("repomd")],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_kept_crash_inputs(repository, tmp_path, path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(repository, root)
    _exercise(path.parent.name, root, path.read_bytes())
