"""Package repositories from a build's output: apt (repo/apt.py) and rpm-md (repo/rpmmd.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gfxpack.repo import apt, rpmmd
from gfxpack.repo.apt import RepoError

__all__ = ["RepoError", "build_files", "publish"]


def build_files(build: Path, warn: Callable[[str], None] | None = None) -> list[Path]:
    """The packages of a build: those its index.json lists, else every .deb and .rpm
    (said through ``warn``: nothing then checks that the files belong together)."""
    if not build.is_dir():
        raise RepoError(f"{build}: not a directory (give the --out directory of gfxpack build)")
    index = build / "index.json"
    if index.exists():
        try:
            files = [build / item["file"] for item in json.loads(index.read_text())["files"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise RepoError(f"{index}: not a gfxpack build index: {e}") from None
        missing = [f.name for f in files if not f.exists()]
        if missing:
            raise RepoError(
                f"{index} lists {len(missing)} file(s) that are not there, e.g. {missing[0]}"
            )
        return files
    files = sorted([*build.glob("*.deb"), *build.glob("*.rpm")])
    if not files:
        raise RepoError(f"{build}: no .deb or .rpm files and no index.json")
    if warn is not None:
        warn(
            f"{build}: no index.json (not a gfxpack build directory): publishing its "
            f"{len(files)} .deb/.rpm file(s) as they are"
        )
    return files


def publish(
    build: Path,
    out: Path,
    suite: str,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
) -> list[dict]:
    """Add a build's packages to the apt repository at out/apt and the rpm-md one at out/rpm."""
    files = build_files(build)
    debs = [f for f in files if f.suffix == ".deb"]
    rpms = [f for f in files if f.suffix == ".rpm"]
    results = []
    if debs:
        results.append(apt.publish(debs, out / "apt", suite, epoch, sign_key, gnupghome))
    if rpms:
        results.append(rpmmd.publish(rpms, out / "rpm", epoch))
    return results
