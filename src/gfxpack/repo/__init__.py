"""Package repositories from builds' output: apt (repo/apt.py) and rpm-md (repo/rpmmd.py).

A run (repo/run.py) holds the repository's lock (repo/transaction.py): every input of
every ``--in`` is checked (repo/inputs.py) and the new packages read (repo/debfile.py,
repo/rpmfile.py), both repositories' new indexes are composed and signed, and only
then is anything a client reads changed; repo/stream.py says in which order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gfxpack.errors import StrictFailure
from gfxpack.outdir import INDEX, read_index
from gfxpack.repo import run
from gfxpack.repo.inputs import InputFile, RepoError, collect
from gfxpack.repo.names import DEFAULT_NAMES, RepositoryNames, check_suite
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.recorded import build_version_problem
from gfxpack.repo.retention import Retention
from gfxpack.repo.transaction import os_errors

__all__ = ["RepoError", "RepositoryNames", "publish"]


def _ignore(_: str) -> None:
    pass


def _inputs(
    builds: Sequence[Path], warn: Callable[[str], None], epoch: int
) -> tuple[list[InputFile], list[run.Build]]:
    """The files of every build, each name once (the same name twice must be the same
    bytes), and the builds among them that name their version."""
    chosen: dict[str, InputFile] = {}
    versioned = []
    for build in builds:
        items = collect(build, warn)
        if (made := _build_of(build, items, epoch)) is not None:
            versioned.append(made)
        for item in items:
            other = chosen.setdefault(item.name, item)
            if other.sha256 != item.sha256:
                raise RepoError(
                    f"{item.name}: {other.path.parent} and {item.path.parent} both have it, "
                    "with different contents"
                )
    return [chosen[name] for name in sorted(chosen)], versioned


def publish(
    builds: Path | Sequence[Path],
    out: Path,
    suite: str | None,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
    warn: Callable[[str], None] = _ignore,
    wait: bool = True,
    strict: bool = False,
    names: RepositoryNames = DEFAULT_NAMES,
    retain: Retention | None = None,
    unsigned: bool = False,
    base_url: str | None = None,
    allow_unsigned_packages: bool = False,
    allow_weak_key: bool = False,
    extra_keys: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Add the packages of ``builds`` to the repository of each format under ``out``: the
    apt one at out/apt, the rpm-md one at out/rpm; one summary per format published.
    Another run on ``out`` is waited for, or an error when not ``wait``. With ``strict``
    a warning about the inputs stops the run before anything is written. The indexes
    carry ``names`` where their format has a place for them (apt's Origin and Label);
    ``suite`` None is the one the repository has (stable for a new one). With
    ``retain`` the builds it no longer keeps are pruned in the same run
    (repo/retention.py). A repository signed before is not published unsigned unless
    ``unsigned``. ``base_url`` (None: the one recorded) is remembered for the setup
    lines of later runs. An unsigned RPM is not published into a signed repository
    unless ``allow_unsigned_packages``, nor is a repository signed with a key current
    apt or dnf reject unless ``allow_weak_key``; an RPM may be signed by one of
    ``extra_keys``, the keys published beside the signing key (repo/package_signatures.py)."""
    builds = [builds] if isinstance(builds, Path) else list(builds)
    if suite is not None:
        check_suite(suite)
    names.check()
    with os_errors(str(out)):
        input_warnings: list[str] = []
        files, added = _inputs(builds, input_warnings.append, epoch)
        if strict and input_warnings:
            raise StrictFailure(input_warnings)
        for message in input_warnings:
            warn(message)
        result = run.apply(
            out,
            files,
            run.Request(add=added, retain=retain),
            PublishOptions(suite or "", epoch, sign_key, gnupghome, base_url=base_url),
            names=names,
            warn=warn,
            wait=wait,
            unsigned=unsigned,
            allow_unsigned_packages=allow_unsigned_packages,
            allow_weak_key=allow_weak_key,
            extra_keys=extra_keys,
        )
    formats: list[dict[str, Any]] = result["formats"]
    if retain is not None:
        for summary in formats:
            summary["pruned"] = result["removed_versions"]
    return formats


def _build_of(build: Path, files: list[InputFile], epoch: int) -> run.Build | None:
    """The build the ``--in`` directory ``build`` (of ``files``) is, when its index.json
    names its version: a setup package's or an index-less directory's files belong to
    no build, and retention never removes them."""
    index = read_index(build)
    if not isinstance(index, dict) or not isinstance(index.get("rocm_version"), str):
        return None
    version = f"{index['rocm_version']}-{index.get('release', '1')}"
    # Checked as gfxpack build takes it: the record keeps it, and reads it back so.
    problem = build_version_problem(version)
    if problem:
        raise RepoError(f"{build / INDEX}: {problem}")
    return run.Build(version, epoch, tuple(sorted(f.name for f in files)))
