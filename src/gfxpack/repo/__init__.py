"""Package repositories from builds' output: apt (repo/apt.py) and rpm-md (repo/rpmmd.py).

A run is one transaction (repo/transaction.py): every input of every ``--in`` is
checked (repo/inputs.py) and read (repo/debfile.py, repo/rpmfile.py), both
repositories' new indexes are computed and signed, and only then is anything
linked into a pool or written, under one lock per repository.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gfxpack.errors import StrictFailure
from gfxpack.repo import apt, rpmmd
from gfxpack.repo.inputs import InputFile, RepoError, collect
from gfxpack.repo.transaction import Transaction, os_errors, recover

__all__ = ["RepoError", "publish"]


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
) -> list[dict[str, Any]]:
    """Add the packages of ``builds`` to the apt repository at out/apt and the rpm-md one
    at out/rpm; one summary per format published. Another run on ``out`` is waited
    for, or an error when not ``wait``. With ``strict`` a warning about the inputs
    stops the run before anything is written."""
    builds = [builds] if isinstance(builds, Path) else list(builds)
    apt.check_suite(suite)
    with os_errors(str(out)):
        input_warnings: list[str] = []
        files = _inputs(builds, input_warnings.append)
        if strict and input_warnings:
            raise StrictFailure(input_warnings)
        for message in input_warnings:
            warn(message)
        debs = [f for f in files if f.format == "deb"]
        rpms = [f for f in files if f.format == "rpm"]
        with Transaction(out, warn, wait) as tx:
            recover(out, [out / "apt" / "pool" / apt.COMPONENT, out / "rpm" / "Packages"], warn)
            updates: list[apt.AptUpdate | rpmmd.RpmUpdate] = []
            try:
                if debs:
                    updates.append(
                        apt.prepare(debs, out / "apt", suite, epoch, sign_key, gnupghome)
                    )
                if rpms:
                    updates.append(rpmmd.prepare(rpms, out / "rpm", epoch, sign_key, gnupghome))
                # Both pools, then both records, then both indexes: a failure (a full
                # disk) before the indexes leaves what apt and dnf read unchanged.
                for update in updates:
                    update.add_files(tx)
                for update in updates:
                    update.commit_record(tx)
                for update in updates:
                    update.commit_indexes(tx)
            finally:
                for update in updates:
                    if isinstance(update, rpmmd.RpmUpdate):
                        update.discard()
    return [update.summary() for update in updates]
