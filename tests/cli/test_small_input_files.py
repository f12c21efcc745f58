"""Every command that reads a small input file a user names (package.json, waivers, a
kernel list, a symbol registry, a changelog, a system list, a keyring, a list of
artifact directories, sysfs properties, manifests and indexes inside a tree) given a
FIFO there: one error line naming it, at once, never a wait for a writer.

Each command runs in a child process with a timeout, so a reader that opens the FIFO
fails the test instead of hanging the suite."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.small_tree import write_config

pytestmark = pytest.mark.slow  # whole commands run in child processes

GFXPACK = Path(sys.executable).with_name("gfxpack")  # the installed console script
REFUSED = "is a FIFO, expected a regular file"
RELEASE = ("--rocm-version", "8.2.0")


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def config(tmp: Path) -> str:
    return str(write_config(tmp / "package.json"))


def artifacts(tmp: Path, fifo_at: str | None = None, fat: bool = False) -> Path:
    """A blas artifacts tree, with a FIFO at ``fifo_at`` inside it: generic and gfx942
    artifacts as a build reads them, or (``fat``) a generic one as split reads it."""
    root = tmp / "artifacts"
    for name in ("blas_lib_generic",) if fat else ("blas_lib_generic", "blas_lib_gfx942"):
        (root / name / "stage").mkdir(parents=True)
        if f"{name}/artifact_manifest.txt" != fifo_at:
            (root / name / "artifact_manifest.txt").write_text("stage\n")
    if fifo_at is not None:
        fifo(root / fifo_at)
    return root


def repository(tmp: Path) -> str:
    """As little of an apt repository as the commands look for before the options."""
    (tmp / "repo" / "dists").mkdir(parents=True)
    return str(tmp / "repo")


def build(tmp: Path, *extra: str) -> list[str]:
    out = str(tmp / "out")
    return [
        "build",
        "--config",
        config(tmp),
        *RELEASE,
        "--artifacts",
        str(tmp),
        "--out",
        out,
        *extra,
    ]


def split(root: Path) -> list[str]:
    return ["split", str(root), "--out", str(root.parent / "split")]


def sysfs(tmp: Path) -> tuple[str, Path]:
    return str(tmp), fifo(tmp / "sys/class/kfd/kfd/topology/nodes/1/properties")


THEROCK = "blas_lib_generic/stage/share/therock/therock_manifest.json"
GENERIC_MANIFEST = "blas_lib_generic/artifact_manifest.txt"
# Safe-tree readers (sysfs), walkers (split) and the readers of a build's index (being
# moved onto the one reader) say it their own way, still naming it: ``says`` is a regex.
TREE_SAYS = r"not a regular file \(a FIFO\)"
WALK_SAYS = "is a FIFO; only regular files, directories and symlinks can be packaged"


def _cases() -> dict[str, Callable[[Path], tuple[list[str], Path, str]]]:
    """id: (tmp) -> (the command's arguments, the FIFO, what the error says of it)."""

    def named(
        option: str, *before: str | Callable[[Path], str], after: tuple[str, ...] = ()
    ) -> Callable:
        """``option`` given the FIFO, after ``before`` (a function: made in tmp)."""

        def case(tmp: Path) -> tuple[list[str], Path, str]:
            path = fifo(tmp / "input")
            args = [a(tmp) if callable(a) else a for a in before]
            return [*args, option, str(path), *after], path, REFUSED

        return case

    def in_tree(
        command: Callable[[Path], list[str]], at: str, says: str = REFUSED, fat: bool = False
    ) -> Callable:
        def case(tmp: Path) -> tuple[list[str], Path, str]:
            root = artifacts(tmp, at, fat)
            return command(root), root / at, says

        return case

    def with_sysfs(*words: str) -> Callable:
        def case(tmp: Path) -> tuple[list[str], Path, str]:
            root, path = sysfs(tmp)
            return [*words, "--sysfs", root], path, TREE_SAYS

        return case

    def with_index(*words: str, says: str = REFUSED) -> Callable:
        def case(tmp: Path) -> tuple[list[str], Path, str]:
            path = fifo(tmp / "build" / "index.json")
            return [w.replace("BUILD", str(path.parent)) for w in words], path, says

        return case

    def build_with(option: str, *extra: str) -> Callable:
        def case(tmp: Path) -> tuple[list[str], Path, str]:
            root = artifacts(tmp)
            path = fifo(tmp / "input")
            args = build(root, option, str(path), "--target", "gfx942", *extra)
            return args, path, REFUSED

        return case

    plan = ("plan", *RELEASE, "--target", "gfx942")
    pack = ("descriptors", "pack", "--descriptors", "DIR", "--code-objects", "DIR")
    return {
        "plan --config": named("--config", *plan),
        "plan --waivers": named("--waivers", *plan, "--config", config),
        "build --config": named(
            "--config", "build", *RELEASE, "--artifacts", "DIR", "--out", "OUT"
        ),
        "build --changelog": build_with("--changelog"),
        "build --waivers": build_with("--waivers"),
        "build --release-artifacts": build_with(
            "--release-artifacts", "--shard-by-target", "gfx942"
        ),
        "build --artifacts (artifact_manifest.txt)": in_tree(
            lambda root: build(root, "--target", "gfx942"), GENERIC_MANIFEST
        ),
        "build --artifacts (therock_manifest.json)": in_tree(
            lambda root: build(root, "--target", "gfx942"), THEROCK
        ),
        "init --artifacts (artifact_manifest.txt)": in_tree(
            lambda root: ["init", "--artifacts", str(root), "--out", str(root.parent / "p.json")],
            GENERIC_MANIFEST,
        ),
        "split (artifact_manifest.txt)": in_tree(split, GENERIC_MANIFEST, fat=True),
        "split (therock_manifest.json)": in_tree(split, "therock_manifest.json", fat=True),
        "split (a therock_manifest.json in an artifact)": in_tree(
            split, THEROCK, WALK_SAYS, fat=True
        ),
        "descriptors pack --kernels": named("--kernels", *pack, after=("--out", "OUT")),
        "descriptors pack --symbols": named(
            "--symbols", *pack, "--kernels", "EMPTY", after=("--out", "OUT")
        ),
        "descriptors lint --symbols": named("--symbols", "descriptors", "lint", "--root", "DIR"),
        "descriptors list-engines --symbols": named(
            "--symbols", "descriptors", "list-engines", "--root", "DIR"
        ),
        "detect --sysfs": with_sysfs("detect"),
        "kpack resolve --sysfs": with_sysfs("kpack", "resolve", "DIR"),
        "probe --sysfs": with_sysfs("probe", "--root", "DIR", "--device", "auto"),
        "verify --system": named("--system", "verify", "--repo", repository),
        "verify --keyring": named("--keyring", "verify", "--repo", repository),
        "verify --waivers": named("--waivers", "verify", "--repo", repository),
        "why --system": named("--system", "why", "--repo", repository, "--install", "a", "a"),
        "try-install --system": named("--system", "try-install", "--repo", repository, "a"),
        "image --system": named(
            "--system",
            "image",
            "--repo",
            repository,
            "--base",
            "oci:DIR",
            "--out",
            "OUT",
            "--target",
            "gfx942",
            "a",
        ),
        "diff (a plan or index file)": with_index("diff", "BUILD/index.json", "BUILD/index.json"),
        "report --build (index.json)": with_index("report", "--build", "BUILD", "--html", "r.html"),
        "repo --in (index.json)": with_index(
            "repo",
            "--in",
            "BUILD",
            "--out",
            "OUT",
            says=f"{REFUSED}|not a regular file; only regular files are published",
        ),
        "merge (index.json)": with_index(
            "merge", "BUILD", "--out", "OUT", says=f"{REFUSED}|missing or not JSON"
        ),
    }


CASES = _cases()


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_fifo_is_one_error_naming_it_and_no_wait(tmp_path: Path, case: Callable) -> None:
    (tmp_path / "DIR").mkdir()
    (tmp_path / "EMPTY").write_text("")
    args, path, says = case(tmp_path)
    try:
        result = subprocess.run(
            [str(GFXPACK), *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,  # a reader waiting on the FIFO never returns: this ends it
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"gfxpack {' '.join(args)} waited on the FIFO {path}")
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
    assert result.returncode != 0, result.stderr
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("error: ") and str(path) in errors[0]
    assert re.search(says, errors[0]), errors[0]


def test_an_oci_base_whose_index_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """``image --base oci:DIR`` reads DIR/index.json only after resolving the packages
    against a repository, so its reader is called directly (in a child process, for
    the timeout)."""
    layout = tmp_path / "base"
    layout.mkdir()
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    fifo(layout / "index.json")
    code = (
        "import sys; from pathlib import Path; from gfxpack.image.base import read_base\n"
        "try:\n"
        f"    read_base('oci:{layout}', Path({str(tmp_path / 'scratch')!r}))\n"
        "except Exception as e:\n"
        "    sys.exit(f'{type(e).__name__}: {e}')\n"
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading the OCI layout {layout} waited on the FIFO index.json")
    assert result.stderr == f"ImageError: base oci:{layout}: index.json: {REFUSED}\n"
