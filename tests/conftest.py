"""Shared fixtures: the seed-000 package set and the bundled example."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gfxpack.build import BuildOptions
from gfxpack.config import load_config
from gfxpack.formats import PackageFormat
from gfxpack.plan import plan
from gfxpack.release import ReleaseOptions, build_release
from tests.golden import UPDATE_OPTION, Golden

ROOT = Path(__file__).resolve().parent.parent
# The fixtures shared by every worktree (../shared). GFXPACK_SHARED points elsewhere, e.g.
# at a missing directory to run the suite as a fresh clone without ../shared would.
SHARED = Path(os.environ.get("GFXPACK_SHARED") or ROOT.parent / "shared")
EXAMPLE_CONFIG = ROOT / "examples" / "package.json"
SEED_CONFIG = ROOT / "tests" / "scenarios" / "seed000" / "package.json"
SEED_TARGETS = ("gfx1100", "gfx942")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        UPDATE_OPTION,
        action="store_true",
        help="rewrite the golden files (tests/scenarios/golden, tests/formats/golden) "
        "instead of comparing",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """The scenario golden files, rewritten instead of compared under --update-golden."""
    return Golden(update=request.config.getoption(UPDATE_OPTION))


def shared_path(*parts: str) -> Path:
    """A path under the shared fixtures; skips the test, naming the path, when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared fixtures are not checked out beside the clone)")
    return path


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


# --- a built example release (generated artifacts, both formats) -------------------------

EXAMPLE_TARGETS = ["gfx1100", "gfx942", "gfx950"]


def load_generator():
    """examples/generate_artifacts.py, imported from its file."""
    spec = importlib.util.spec_from_file_location(
        "generate_artifacts", ROOT / "examples" / "generate_artifacts.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_example(out: Path, scale: float = 0.2) -> Path:
    load_generator().generate(out, EXAMPLE_CONFIG, EXAMPLE_TARGETS, scale, seed=2026)
    return out


@dataclass
class BuiltRelease:
    plan: object
    tree: object
    routed: dict
    out: Path
    built: list

    def files(self, fmt: PackageFormat | str) -> dict[str, Path]:
        """Package key -> its file in ``fmt`` (a format or its name)."""
        return {b.package: self.out / b.file for b in self.built if b.format == str(fmt)}


def build_example(
    artifacts: Path, out: Path, jobs: int = 2, version: str = "8.2.0", **build_options
) -> BuiltRelease:
    options = ReleaseOptions(version, build=BuildOptions(jobs=jobs, **build_options))
    release, built = build_release(EXAMPLE_CONFIG, artifacts, out, options)
    return BuiltRelease(release.plan, release.tree, release.routed, out, built)


def build_example_args(artifacts: Path, out: Path, *extra: str) -> list[str]:
    """``gfxpack build`` arguments for the example release from ``artifacts`` into ``out``,
    then ``extra``."""
    return [
        *("build", "--config", str(EXAMPLE_CONFIG), "--artifacts", str(artifacts)),
        *("--out", str(out), "--rocm-version", "8.2.0", *extra),
    ]


@pytest.fixture(scope="session")
def example_artifacts(tmp_path_factory) -> Path:
    return generate_example(tmp_path_factory.mktemp("example") / "artifacts")


@pytest.fixture(scope="session")
def example_release(example_artifacts, tmp_path_factory) -> BuiltRelease:
    return build_example(example_artifacts, tmp_path_factory.mktemp("example") / "packages")


# --- TheRock's package.json built (generated artifacts, both formats) ----------------------

THEROCK_TARGETS = ("gfx90a", "gfx942", "gfx1100")


@pytest.fixture(scope="session")
def therock_release(tmp_path_factory) -> BuiltRelease:
    """TheRock's package.json built from an artifacts tree examples/generate_artifacts.py
    made for it; skips without ../shared. Built once a session: the tests of verify's
    scope and of the generator share it."""
    config = shared_path("fixtures", "therock", "package.json")
    base = tmp_path_factory.mktemp("therock")
    load_generator().generate(base / "artifacts", config, list(THEROCK_TARGETS), 0.002, seed=7)
    options = ReleaseOptions("8.2.0", targets=THEROCK_TARGETS, build=BuildOptions(jobs=2))
    release, built = build_release(config, base / "artifacts", base / "packages", options)
    return BuiltRelease(release.plan, release.tree, release.routed, base / "packages", built)


def run(*command: str, **options) -> subprocess.CompletedProcess:
    """Run a real tool; fail the test with its output when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, check=False, **options)
    assert result.returncode == 0, f"{' '.join(command)}: {result.stdout}\n{result.stderr}"
    return result


def dpkg_root(root: Path) -> Path:
    """An empty dpkg database under ``root``, for ``dpkg --root``."""
    for directory in (
        "var/lib/dpkg/info",
        "var/lib/dpkg/updates",
        "var/lib/dpkg/alternatives",
        "etc/alternatives",
    ):
        (root / directory).mkdir(parents=True)
    (root / "var/lib/dpkg/status").touch()
    (root / "var/lib/dpkg/available").touch()
    return root


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    """A small tmpfs mounted at ``path``, for a full (``size=8k``) or read-only (``ro``)
    output directory; skips where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mount.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root: {mount.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
