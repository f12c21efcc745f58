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

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS
from gfxpack.repo import legacy
from gfxpack.repo.backends import backend
from gfxpack.repo.inputs import InputFile, RepoError
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.retention import Retention
from gfxpack.repo.run import Build, Request, apply, format_of, record
from gfxpack.repo.settings import recorded_settings
from gfxpack.repo.state import DATABASE, State
from gfxpack.repo.transaction import Transaction, check_published, os_errors


def _builds(state: State) -> list[Build]:
    return [
        Build(row.version, row.published, tuple(state.build_files(row.id)), row.promoted_from)
        for row in state.builds()
    ]


def read_builds(out: Path) -> list[Build]:
    """The builds published into ``out``, oldest first; none when it has none."""
    if not (out / DATABASE).is_file():
        return []
    with State.open(out, create=False) as state:
        return _builds(state)


def listing(out: Path) -> dict[str, Any]:
    """What the repository at ``out`` holds, as JSON values: its suite, each build (its
    version, date, promotion and files) and the package files of no build."""
    _check_repository(out)
    if not (out / DATABASE).is_file():
        raise RepoError(legacy.NOT_ADOPTED.format(out=out))
    with State.open(out, create=False) as state:
        builds = _builds(state)
        counts = {fmt.name: state.live_count(fmt.name) for fmt in FORMATS}
        suite = state.setting("suite")
        signed = state.setting("signed_by")
        in_builds = {name for b in builds for name in b.files}
        loose = sorted(
            name for fmt in FORMATS for name, *_ in state.live_stamps(fmt.name)
            if name not in in_builds
        )  # fmt: skip
    return {"suite": suite, "signed_by": signed, "packages": counts,
            "builds": [b.as_json() for b in builds], "unversioned": loose}  # fmt: skip


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
    **run: Any,
) -> dict[str, Any]:
    """Remove the builds of ``versions`` and the package files named in ``packages``."""
    _check_repository(out)
    request = Request(remove_versions=versions, remove_packages=packages)
    return apply(out, [], request, options, **run)


def promote(
    source: Path,
    out: Path,
    version: str,
    source_stream: str,
    options: PublishOptions,
    retention: Retention | None = None,
    **run: Any,
) -> dict[str, Any]:
    """Publish build ``version`` of the repository at ``source`` (stream
    ``source_stream``) into ``out``: its pool files copied as they are (checked against
    the source's record), the promotion recorded, the indexes made and signed anew."""
    if source.resolve() == out.resolve():
        raise RepoError(f"{source}: promoted into itself; give another repository as --to")
    _check_repository(source)
    warn = run.get("warn", lambda _: None)
    with (
        os_errors(str(source)),
        Transaction(source, warn, run.get("wait", True)),
        record(source, warn) as state,
    ):
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
        if not (out / DATABASE).is_file() and not legacy.present(out):
            # A new repository of the stream is named as its source is.
            origin = recorded_settings(source)
            options = PublishOptions(
                options.suite or origin.suite, options.epoch, options.sign_key, options.gnupghome
            )
            run.setdefault("names", origin.names)
        return apply(out, files, Request(add=[promoted], retain=retention), options, **run)
