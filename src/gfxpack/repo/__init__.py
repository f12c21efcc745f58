"""Package repositories from a build's output: apt (repo/apt.py) and rpm-md (repo/rpmmd.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS
from gfxpack.repo.apt import RepoError

__all__ = ["RepoError", "build_files", "publish"]


def build_files(build: Path) -> list[Path]:
    """The packages of a build: those its index.json lists, else every .deb and .rpm."""
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
    files = sorted(path for fmt in FORMATS for path in build.glob(f"*{fmt.extension}"))
    if not files:
        extensions = " or ".join(fmt.extension for fmt in FORMATS)
        raise RepoError(f"{build}: no {extensions} files and no index.json")
    return files


def publish(
    build: Path,
    out: Path,
    suite: str,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
) -> list[dict[str, Any]]:
    """Add a build's packages to the repository of each format under ``out``: the apt
    one at out/apt, the rpm-md one at out/rpm."""
    files = build_files(build)
    results = []
    for fmt in FORMATS:
        chosen = [f for f in files if f.suffix == fmt.extension]
        if chosen:
            published = fmt.publish(chosen, out / fmt.repo_dir, suite, epoch, sign_key, gnupghome)
            results.append({"format": fmt.name, **published})
    return results
