"""A release stream's repository over time: builds added, pruned by a retention policy,
promoted from another stream's repository, and removed on request.

Which files make up which build is kept in ``OUT/.gfxpack-builds.json``: one entry a
published build (its version, ``ROCM_VERSION-RELEASE`` from the build's index.json),
in the order published, with the date it was published and its file names; a promoted
build also says where it came from (``promoted_from``: the source stream and the date
it was published there). Files published without a version (a setup package, a
directory without index.json) belong to no build, and retention never removes them.

Every operation is one transaction (repo/transaction.py) over both formats: the new
indexes are computed and signed over what stays, written, and only then are the pool
files no index names any more removed; the newest build is never pruned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS
from gfxpack.repo.backends import RepositoryUpdate, backend
from gfxpack.repo.inputs import FILE_NAME, InputFile, RepoError
from gfxpack.repo.names import DEFAULT_NAMES, RepositoryNames
from gfxpack.repo.transaction import (
    RECORD,
    Transaction,
    check_published,
    os_errors,
    read_record,
    recover,
)

BUILDS = ".gfxpack-builds.json"
DAY = 86_400

# RFC0012's streams and their retention (TheRock's repository plan).
STREAM_RETENTION = {
    "dev": "30d",
    "nightly": "120builds",
    "weekly": "52w",
    "rc": "2y",
    "stable": "all",
}
_POLICY = re.compile(r"(?P<count>[1-9][0-9]{0,8})(?P<unit>d|w|y|builds)\Z")
_UNIT_DAYS = {"d": 1, "w": 7, "y": 365}


@dataclass(frozen=True, slots=True)
class Retention:
    """Which builds stay: those of the last ``days`` days, or the last ``builds``
    builds; neither set keeps all."""

    days: int | None = None
    builds: int | None = None

    @classmethod
    def parse(cls, text: str) -> Retention:
        """``30d``, ``52w``, ``2y`` (days), ``120builds``, ``all``, or a stream's name."""
        policy = STREAM_RETENTION.get(text, text)
        if policy == "all":
            return cls()
        match = _POLICY.match(policy)
        if match is None:
            raise RepoError(
                f"--retain {text!r}: expected a number of days (30d), weeks (52w) or years "
                f"(2y), a number of builds (120builds), all, or a stream: "
                f"{', '.join(f'{k} ({v})' for k, v in STREAM_RETENTION.items())}"
            )
        count, unit = int(match["count"]), match["unit"]
        if unit == "builds":
            return cls(builds=count)
        return cls(days=count * _UNIT_DAYS[unit])

    def expired(self, builds: Sequence[Build], now: int) -> list[Build]:
        """The builds this policy removes at ``now``; never the newest."""
        older = list(builds[:-1])
        if self.builds is not None:
            return older[: max(0, len(builds) - self.builds)]
        if self.days is not None:
            return [b for b in older if b.published < now - self.days * DAY]
        return []


@dataclass(frozen=True, slots=True)
class Build:
    version: str
    published: int
    files: tuple[str, ...]
    promoted_from: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "version": self.version,
            "published": self.published,
            "files": list(self.files),
        }
        if self.promoted_from is not None:
            document["promoted_from"] = self.promoted_from
        return document


def read_builds(out: Path) -> list[Build]:
    """The builds published into ``out``, oldest first; none when it has no record."""
    path = out / BUILDS
    try:
        document = json.loads(path.read_bytes())
        builds = [
            Build(
                b["version"],
                int(b["published"]),
                tuple(str(name) for name in b["files"]),
                b.get("promoted_from"),
            )
            for b in document["builds"]
        ]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RepoError(
            f"{path}: not a record of the published builds ({e}); restore it from a backup"
        ) from None
    # Its names become pool paths: one plain file name each, never a path.
    if not all(
        isinstance(b.version, str) and all(FILE_NAME.match(n) for n in b.files) for b in builds
    ):
        raise RepoError(f"{path}: not a record of the published builds")
    return builds


def with_build(builds: list[Build], build: Build) -> list[Build]:
    """``builds`` with ``build`` published: a version published again gains its files and
    keeps its date."""
    for i, other in enumerate(builds):
        if other.version == build.version:
            files = tuple(sorted({*other.files, *build.files}))
            return [*builds[:i], replace(other, files=files), *builds[i + 1 :]]
    return [*builds, build]


@dataclass
class Change:
    """What one operation does: files added and dropped, and the builds record after."""

    builds: list[Build]
    drop: frozenset[str] = frozenset()
    removed_versions: list[str] = field(default_factory=list)


def apply(
    out: Path,
    files: list[InputFile],
    edit: Callable[[list[Build]], Change],
    suite: str,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
    warn: Callable[[str], None] = lambda _: None,
    wait: bool = True,
    names: RepositoryNames = DEFAULT_NAMES,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Add ``files`` to the repositories under ``out`` and drop what ``edit`` (given the
    builds published, under the lock) says, in one transaction; with ``dry_run`` only
    what would change is said. The result: each format's summary, the versions and
    files removed."""
    with os_errors(str(out)), Transaction(out, warn, wait) as tx:
        roots = [out / fmt.repo_dir for fmt in FORMATS]
        pools = [backend(fmt).pool(root) for fmt, root in zip(FORMATS, roots, strict=True)]
        if not dry_run:
            for fmt, root in zip(FORMATS, roots, strict=True):
                backend(fmt).recover(root, warn)
            recover(roots, pools, warn)
        records = {fmt: read_record(pool) or {} for fmt, pool in zip(FORMATS, pools, strict=True)}
        change = edit(read_builds(out))
        published = {name for record in records.values() for name in record}
        dropped = sorted(change.drop & published)
        result: dict[str, Any] = {
            "removed_versions": change.removed_versions,
            "removed_files": dropped,
            "formats": [],
        }
        if dry_run:
            return result
        updates: list[RepositoryUpdate] = []
        # Each update's pool and the record entries of the files it drops.
        drops: list[tuple[Path, dict[str, dict[str, Any]]]] = []
        try:
            for fmt, root, pool in zip(FORMATS, roots, pools, strict=True):
                chosen = [f for f in files if f.format is fmt]
                drop = {n: records[fmt][n] for n in dropped if n in records[fmt]}
                if chosen or drop:
                    updates.append(
                        backend(fmt).prepare(
                            chosen,
                            root,
                            suite,
                            epoch,
                            sign_key,
                            gnupghome,
                            names,
                            frozenset(drop),
                        )
                    )
                    drops.append((pool, drop))
            # Every pool, then every record, then every index: a failure (a full disk)
            # before the indexes leaves what apt and dnf read unchanged. Until the new
            # indexes are in, the old ones still name the files dropped, so the records
            # keep naming them too (a rerun's recovery removes the pool files no record
            # names); they lose them once no index does.
            for update in updates:
                update.add_files(tx)
            for update, (pool, drop) in zip(updates, drops, strict=True):
                tx.record(pool, {**update.record, **drop})
            for update in updates:
                update.commit_indexes(tx)
            for update, (_, drop) in zip(updates, drops, strict=True):
                if drop:
                    update.commit_record(tx)
        finally:
            for update in updates:
                update.discard()
        record = {"builds": [b.as_json() for b in change.builds]}
        tx.write(out / BUILDS, json.dumps(record, indent=1).encode())
        # No index names them now: a client reading the new indexes never asks for them.
        for fmt, pool in zip(FORMATS, pools, strict=True):
            for name in dropped:
                if name in records[fmt]:
                    (pool / name).unlink(missing_ok=True)
        result["formats"] = [update.summary() for update in updates]
        return result


def dropping(builds: list[Build], gone: Sequence[Build]) -> Change:
    """The change that removes the builds ``gone`` (and the files only they name)."""
    versions = {b.version for b in gone}
    kept = [b for b in builds if b.version not in versions]
    named = {name for b in kept for name in b.files}
    drop = frozenset(name for b in gone for name in b.files if name not in named)
    return Change(kept, drop, [b.version for b in gone])


def prune(
    out: Path,
    retention: Retention,
    suite: str,
    epoch: int,
    dry_run: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Remove the builds ``retention`` no longer keeps at ``epoch`` (never the newest)."""
    _check_repository(out)
    return apply(
        out,
        [],
        lambda builds: dropping(builds, retention.expired(builds, epoch)),
        suite,
        epoch,
        dry_run=dry_run,
        **options,
    )


def remove(
    out: Path,
    versions: Sequence[str],
    packages: Sequence[str],
    suite: str,
    epoch: int,
    dry_run: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Remove the builds of ``versions`` and the package files named in ``packages``."""

    def edit(builds: list[Build]) -> Change:
        known = {b.version for b in builds}
        missing = [v for v in versions if v not in known]
        if missing:
            raise RepoError(
                f"{out}: no build {', '.join(missing)} is published here "
                f"(published: {', '.join(b.version for b in builds) or 'none'})"
            )
        change = dropping(builds, [b for b in builds if b.version in versions])
        files = frozenset(packages)
        kept = [
            replace(b, files=tuple(n for n in b.files if n not in files)) for b in change.builds
        ]
        emptied = [b.version for b in kept if not b.files]  # every file of it named
        kept = [b for b in kept if b.files]
        return Change(kept, change.drop | files, change.removed_versions + emptied)

    _check_repository(out)
    if packages:
        _check_published(out, packages)
    return apply(out, [], edit, suite, epoch, dry_run=dry_run, **options)


def _check_repository(out: Path) -> None:
    """``out`` is a repository gfxpack published: nothing is made where there is none."""
    if not (out / BUILDS).is_file() and not any(
        (backend(fmt).pool(out / fmt.repo_dir) / RECORD).is_file() for fmt in FORMATS
    ):
        raise RepoError(f"{out}: no repository gfxpack published is there")


def _check_published(out: Path, names: Sequence[str]) -> None:
    published = set()
    for fmt in FORMATS:
        published |= set(read_record(backend(fmt).pool(out / fmt.repo_dir)) or {})
    missing = [name for name in names if name not in published]
    if missing:
        raise RepoError(f"{out}: {', '.join(missing)}: not published here")


def promote(
    source: Path,
    out: Path,
    version: str,
    source_stream: str,
    suite: str,
    epoch: int,
    retention: Retention | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Publish build ``version`` of the repository at ``source`` (stream
    ``source_stream``) into ``out``: its pool files copied as they are (checked against
    the source's record), the promotion recorded, the indexes made and signed anew."""
    if source.resolve() == out.resolve():
        raise RepoError(f"{source}: promoted into itself; give another repository as --to")
    _check_repository(source)
    warn = options.get("warn", lambda _: None)
    with os_errors(str(source)), Transaction(source, warn, options.get("wait", True)):
        build = next((b for b in read_builds(source) if b.version == version), None)
        if build is None:
            raise RepoError(f"{source}: no build {version} is published here")
        files = []
        for fmt in FORMATS:
            pool = backend(fmt).pool(source / fmt.repo_dir)
            record = read_record(pool) or {}
            for name in build.files:
                if name in record:
                    entry = check_published(pool, name, record[name])
                    files.append(InputFile(pool / name, entry["size"], entry["sha256"]))
        if len(files) != len(build.files):
            raise RepoError(f"{source}: build {version} names files its pools do not hold")
        promoted = Build(
            version,
            epoch,
            build.files,
            {"stream": source_stream, "published": build.published},
        )

        def edit(builds: list[Build]) -> Change:
            after = with_build(builds, promoted)
            if retention is None:
                return Change(after)
            return dropping(after, retention.expired(after, epoch))

        return apply(out, files, edit, suite, epoch, **options)
