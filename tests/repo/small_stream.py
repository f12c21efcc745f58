"""A small stream repository for the tests that damage one: two builds of a package of
each format, published by the real command, copied for each test."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from pathlib import Path

from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import FORMATS
from gfxpack.repo.transaction import LOCK
from tests.verify.helpers import write_package

EPOCH = "1700000000"
VERSIONS = ("8.2.0", "8.2.1", "8.2.2")


def build(directory: Path, version: str) -> Path:
    """A gfxpack build of ``version``: a tool package of each format and its index.json
    (so the repository records it as a build of the stream)."""
    listed = []
    for fmt in FORMATS:
        path = write_package(directory, fmt, "tool", version=version, files=(f"/opt/t-{version}",))
        data = path.read_bytes()
        listed.append({"file": path.name, "format": fmt.name, "size": len(data),
                       "sha256": hashlib.sha256(data).hexdigest()})  # fmt: skip
    index = {"rocm_version": version, "release": "1", "files": listed}
    (directory / "index.json").write_text(json.dumps(index))
    return directory


def gfxpack(*args: str):
    return CliRunner(env={"SOURCE_DATE_EPOCH": EPOCH}).invoke(cli, list(args))


def make_template(base: Path) -> tuple[Path, dict[str, Path]]:
    """A repository of the first two builds, and every build's directory."""
    builds = {v: build(base / f"build-{v}", v) for v in VERSIONS}
    repo = base / "template"
    for version in VERSIONS[:2]:
        result = gfxpack("repo", "--in", str(builds[version]), "--out", str(repo))
        assert result.exit_code == 0, result.output
    return repo, builds


def copy_of(template: Path, where: Path) -> Path:
    repo = where / "repo"
    shutil.copytree(template, repo, symlinks=True)
    return repo


def one_error(result) -> str:
    """The one error line of a refused command (warnings aside)."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    errors = [line for line in result.stderr.strip().splitlines() if not line.startswith("warning")]
    assert len(errors) == 1 and errors[0].startswith("error: "), result.stderr
    return errors[0]


def snapshot(root: Path, skip: tuple[str, ...] = (LOCK,)) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``root`` (links not followed): (mode, size, mtime); a
    directory's size and mtime aside (a refused run may add a file and remove it)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.name in skip:
            continue
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode):
            found[str(path.relative_to(root))] = (info.st_mode, 0, 0)
        else:
            found[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found
