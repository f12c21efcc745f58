"""A release stream's repository over time: builds added, pruned by a retention policy,
promoted from another stream's repository, and removed on request.

Every operation is one run under the repository's lock (repo/transaction.py) over both
formats, recorded in the repository's record (repo/state.py):

1. the packages it adds are read (only those: what is published comes from the
   record) and checked: a name published with other bytes, or a second file of one
   package version, is refused;
2. the new indexes are composed from the record's pieces and signed, the new package
   files copied into the pools, and the record committed, all before any index a
   client reads changes;
3. the indexes are moved into place, the top files (Release, repomd.xml) last, and the
   new generation recorded;
4. what no retained generation names any more goes: older indexes, and the pool files
   of packages that left the indexes N publishes ago (``--keep-generations``), so a
   client that read an older top file still finds every file it names.

A run killed anywhere is completed or undone by the next: pool files it added but
never recorded are removed, and indexes the record says are stale are written again.
Files published without a version (a setup package, a directory without index.json)
belong to no build, and retention never removes them; the newest build is never
pruned.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS
from gfxpack.repo import legacy
from gfxpack.repo.backends import backend
from gfxpack.repo.generations import DEFAULT_KEEP
from gfxpack.repo.inputs import InputFile, RepoError
from gfxpack.repo.names import DEFAULT, REPO_ID, RepositoryNames
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.own_tree import check_tree
from gfxpack.repo.recorded import stream_name_problem
from gfxpack.repo.retention import Retention
from gfxpack.repo.run import Build, Request, apply, format_of, record
from gfxpack.repo.settings import Recorded, recorded_settings
from gfxpack.repo.state import DATABASE, State, has_record
from gfxpack.repo.transaction import Transaction, check_published, os_errors


def _builds(state: State) -> list[Build]:
    return [
        Build(row.version, row.published, tuple(state.build_files(row.id)), row.promoted_from)
        for row in state.builds()
    ]


def read_builds(out: Path) -> list[Build]:
    """The builds published into ``out``, oldest first; none when it has none."""
    if not has_record(out):
        return []
    with State.open(out, create=False) as state:
        return _builds(state)


def listing(out: Path) -> dict[str, Any]:
    """What the repository at ``out`` holds, as JSON values: its suite, its signing key
    and the keys published beside it (--extra-key), each build (its
    version, date, promotion, files and their bytes), the package files of no build,
    per format the pool files kept only for older index generations, and the bytes of
    every file under ``out``."""
    _check_repository(out)
    if not (out / DATABASE).is_file():
        raise RepoError(legacy.NOT_ADOPTED.format(out=out))
    recorded = recorded_settings(out)
    names = recorded.names
    keep = names.keep_generations if names is not None else DEFAULT_KEEP
    with State.open(out, create=False) as state:
        builds = _builds(state)
        counts = {fmt.name: state.live_count(fmt.name) for fmt in FORMATS}
        suite = state.setting("suite")
        signed = state.setting("signed_by")
        sizes = {name: size for fmt in FORMATS for name, _, size, _ in state.live_stamps(fmt.name)}
        in_builds = {name for b in builds for name in b.files}
        loose = sorted(name for name in sizes if name not in in_builds)
        older = {fmt.name: _kept_for_older_indexes(state, fmt.name, keep) for fmt in FORMATS}
    listed = []
    for build in builds:
        document = build.as_json()
        document["bytes"] = sum(sizes.get(name, 0) for name in build.files)
        listed.append(document)
    return {"suite": suite, "signed_by": signed, "extra_keys": list(recorded.extra_keys),
            "packages": counts, "builds": listed,
            "unversioned": loose, "unversioned_bytes": sum(sizes[n] for n in loose),
            "kept_for_older_indexes": older, "bytes_on_disk": _bytes_under(out)}  # fmt: skip


def _kept_for_older_indexes(state: State, fmt: str, keep: int) -> dict[str, Any]:
    """The pool files of ``fmt`` that left the indexes and stay for the older index
    generations that name them: how many, their bytes, the current generation, and the
    generation whose publish removes the last of them (repo/run.py's _collect: a file
    retired at G goes once the oldest of the ``keep`` kept generations is G)."""
    retired = [(size, at) for _, size, at in state.retired_files(fmt) if at > 0]
    kept = state.generations(fmt)
    current = kept[-1][0] if kept else 0
    return {
        "files": len(retired),
        "bytes": sum(size for size, _ in retired),
        "generation": current,
        "until_generation": max((at + keep - 1 for _, at in retired), default=None),
    }


def _bytes_under(out: Path) -> int:
    """The bytes of every regular file under ``out`` (symlinks neither counted nor
    followed): what the repository takes on disk, its record included."""
    total = 0
    for directory, _, names in os.walk(out):
        for name in names:
            info = os.lstat(os.path.join(directory, name))
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total


# --- the operations ---------------------------------------------------------------------


def _check_repository(out: Path) -> None:
    """``out`` is a repository gfxpack published: nothing is made where there is none."""
    if not (out / DATABASE).is_file() and not legacy.present(out):
        raise RepoError(f"{out}: no repository gfxpack published is there")


def prune(out: Path, retention: Retention, options: PublishOptions, **run: Any) -> dict[str, Any]:
    """Remove the builds ``retention`` no longer keeps at ``options.epoch`` (never the
    newest)."""
    _check_repository(out)
    return apply(out, [], Request(retain=retention), options, **run)


def remove(
    out: Path,
    versions: Sequence[str],
    packages: Sequence[str],
    options: PublishOptions,
    force: bool = False,
    **run: Any,
) -> dict[str, Any]:
    """Remove the builds of ``versions`` and the package files named in ``packages``;
    refused when a kept package would lose a dependency, unless ``force`` (then the
    result lists the packages left uninstallable)."""
    _check_repository(out)
    request = Request(remove_versions=versions, remove_packages=packages, force=force)
    return apply(out, [], request, options, **run)


def refresh(out: Path, options: PublishOptions, **run: Any) -> dict[str, Any]:
    """Write and sign every format's indexes again, with what they held: a new Date, and
    a new Valid-Until for a repository published with one. Nothing is published."""
    _check_repository(out)
    result = apply(out, [], Request(refresh=True), options, **run)
    if not result["formats"]:
        raise RepoError(f"{out}: publishes no package, so it has no indexes to refresh")
    return result


def promote(
    source: Path,
    out: Path,
    version: str,
    source_stream: str,
    options: PublishOptions,
    retention: Retention | None = None,
    given: dict[str, Any] | None = None,
    **run: Any,
) -> dict[str, Any]:
    """Publish build ``version`` of the repository at ``source`` (stream
    ``source_stream``) into ``out``: its pool files copied as they are (checked against
    the source's record), the promotion recorded, the indexes made and signed anew.
    ``given`` names (RepositoryNames' fields; None: not given) replace the target's; a
    new target's others are its own (:func:`new_target_names`), never the source's
    repository id or Valid-Until."""
    if source.resolve() == out.resolve():
        raise RepoError(f"{source}: promoted into itself; give another repository as --to")
    _check_repository(source)
    problem = stream_name_problem(source_stream)
    if problem:
        raise RepoError(f"--from-stream: {problem}")
    warn = run.get("warn", lambda _: None)
    with (
        os_errors(str(source)),
        Transaction(source, warn, run.get("wait", True)),
        record(source, warn) as state,
    ):
        check_tree(source)  # its pool files are read: never through a link out of it
        row = next((b for b in state.builds() if b.version == version), None)
        if row is None:
            published = ", ".join(b.version for b in state.builds()) or "none"
            raise RepoError(
                f"{source}: no build {version} is published here (published: {published})"
            )
        files = []
        for name in state.build_files(row.id):
            found = state.file(name)
            if found is None or found[1] is not None:
                raise RepoError(
                    f"{source}: build {version} names {name}, which it does not publish"
                )
            fmt = format_of(name)
            pool = backend(fmt).pool(source / fmt.repo_dir)
            check_published(pool, found[0])
            files.append(InputFile(pool / name, found[0].size, found[0].sha256))
        promoted = Build(
            version,
            options.epoch,
            tuple(f.name for f in files),
            {"stream": source_stream, "published": row.published},
        )
        target = recorded_settings(out)
        if not (out / DATABASE).is_file() and not legacy.present(out):
            origin = recorded_settings(source)
            options = replace(options, suite=options.suite or origin.suite)
            target = Recorded(names=new_target_names(out, origin.names or RepositoryNames()))
        if target.names is not None or given:
            run["names"] = target.with_names(given or {})
        return apply(out, files, Request(add=[promoted], retain=retention), options, **run)


def new_target_names(out: Path, source: RepositoryNames) -> RepositoryNames:
    """What a new repository ``out`` a build is promoted into is called unless said
    otherwise: the source's Origin, Label, Codename and generations kept (the same
    vendor, pinned alike), its own repository id (its directory's name, when that is
    one: machines that have both keep them apart), name, and no Valid-Until (a stream
    published once a week or once a release would expire between publishes)."""
    ident = out.resolve().name
    return RepositoryNames(
        origin=source.origin,
        label=source.label,
        repo_id=ident if not REPO_ID.problem(ident) else DEFAULT,
        codename=source.codename,
        keep_generations=source.keep_generations,
    )
