"""Package repositories from builds' output: apt (repo/apt.py) and rpm-md (repo/rpmmd.py).

A run is one transaction (repo/transaction.py): every input of every ``--in`` is
checked (repo/inputs.py) and read (repo/debfile.py, repo/rpmfile.py), both
repositories' new indexes are computed and signed, and only then is anything
copied into a pool or written, under one lock per repository.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gfxpack.errors import StrictFailure
from gfxpack.formats import FORMATS
from gfxpack.formats.package_format import RepositoryUpdate
from gfxpack.repo import apt
from gfxpack.repo.inputs import InputFile, RepoError, collect
from gfxpack.repo.names import DEFAULT_NAMES, RepositoryNames
from gfxpack.repo.transaction import Transaction, os_errors, recover

__all__ = ["RepoError", "RepositoryNames", "publish"]


def _ignore(_: str) -> None:
    pass


def _inputs(builds: Sequence[Path], warn: Callable[[str], None]) -> list[InputFile]:
    """The files of every build, each name once (the same name twice must be the same bytes)."""
    chosen: dict[str, InputFile] = {}
    for build in builds:
        for item in collect(build, warn):
            other = chosen.setdefault(item.name, item)
            if other.sha256 != item.sha256:
                raise RepoError(
                    f"{item.name}: {other.path.parent} and {item.path.parent} both have it, "
                    "with different contents"
                )
    return [chosen[name] for name in sorted(chosen)]


def publish(
    builds: Path | Sequence[Path],
    out: Path,
    suite: str,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
    warn: Callable[[str], None] = _ignore,
    wait: bool = True,
    strict: bool = False,
    names: RepositoryNames = DEFAULT_NAMES,
) -> list[dict[str, Any]]:
    """Add the packages of ``builds`` to the repository of each format under ``out``: the
    apt one at out/apt, the rpm-md one at out/rpm; one summary per format published.
    Another run on ``out`` is waited for, or an error when not ``wait``. With ``strict``
    a warning about the inputs stops the run before anything is written. The indexes
    carry ``names`` where their format has a place for them (apt's Origin and Label)."""
    builds = [builds] if isinstance(builds, Path) else list(builds)
    apt.check_suite(suite)
    names.check()
    with os_errors(str(out)):
        input_warnings: list[str] = []
        files = _inputs(builds, input_warnings.append)
        if strict and input_warnings:
            raise StrictFailure(input_warnings)
        for message in input_warnings:
            warn(message)
        with Transaction(out, warn, wait) as tx:
            roots = [out / fmt.repo_dir for fmt in FORMATS]
            for fmt, root in zip(FORMATS, roots, strict=True):
                fmt.recover_repository(root, warn)
            recover(roots, [fmt.pool(root) for fmt, root in zip(FORMATS, roots, strict=True)], warn)
            updates: list[RepositoryUpdate] = []
            try:
                for fmt in FORMATS:
                    chosen = [f for f in files if f.format is fmt]
                    if chosen:
                        updates.append(
                            fmt.prepare_repository(
                                chosen,
                                out / fmt.repo_dir,
                                suite,
                                epoch,
                                sign_key,
                                gnupghome,
                                names,
                            )
                        )
                # Every pool, then every record, then every index: a failure (a full
                # disk) before the indexes leaves what apt and dnf read unchanged.
                for update in updates:
                    update.add_files(tx)
                for update in updates:
                    update.commit_record(tx)
                for update in updates:
                    update.commit_indexes(tx)
            finally:
                for update in updates:
                    update.discard()
    return [update.summary() for update in updates]
