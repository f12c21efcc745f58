"""One run over a repository: the packages it adds are read and checked, builds and
files it removes decided, then the record, the pools and the indexes written in the
order that keeps every client's view whole (repo/stream.py says which order and why).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS, PackageFormat, format_named
from gfxpack.repo import generations, legacy
from gfxpack.repo.backends import Indexes, backend
from gfxpack.repo.inputs import InputFile, RepoError
from gfxpack.repo.kept_dependencies import holes
from gfxpack.repo.names import RepositoryNames
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.own_tree import check_tree
from gfxpack.repo.package_signatures import check_run
from gfxpack.repo.retention import Retention
from gfxpack.repo.settings import settle
from gfxpack.repo.state import DATABASE, PackageEntry, State, has_record
from gfxpack.repo.transaction import (
    Transaction,
    check_published,
    check_recorded,
    os_errors,
    stamp,
    unchanged,
)

# A file retired by this run, before its generation's number is known.
_RETIRING = -1


@dataclass(frozen=True, slots=True)
class Build:
    """A build published into a repository: its version (``ROCM_VERSION-RELEASE``), the
    date it was published there, its package files and, when promoted, where from."""

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


@dataclass(frozen=True)
class Request:
    """What one run does: builds it adds (their files among its inputs), a retention
    policy applied after, builds and package files it removes (refused when a kept
    package would lose a dependency, unless ``force``), and whether every format's
    indexes are written and signed again though nothing changed (``refresh``: a new
    Date and Valid-Until)."""

    add: Sequence[Build] = ()
    retain: Retention | None = None
    remove_versions: Sequence[str] = ()
    remove_packages: Sequence[str] = ()
    force: bool = False
    refresh: bool = False


@dataclass
class _Plan:
    """What a request comes to, decided under the lock."""

    gone: list[int] = field(default_factory=list)  # builds removed
    removed_versions: list[str] = field(default_factory=list)
    drop: set[str] = field(default_factory=set)  # package files leaving the indexes


def apply(
    out: Path,
    files: Sequence[InputFile],
    request: Request,
    options: PublishOptions,
    names: RepositoryNames | None = None,
    warn: Callable[[str], None] = lambda _: None,
    wait: bool = True,
    dry_run: bool = False,
    unsigned: bool = False,
    allow_unsigned_packages: bool = False,
    allow_weak_key: bool = False,
    held: Session | None = None,
    then: Callable[[State, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Publish ``files`` into the repositories under ``out`` and carry out ``request``,
    in one run (see the module); with ``dry_run`` only what would change is said (and
    no key is needed: nothing is signed). ``names`` (None: as recorded) name the
    repository; a repository signed before is not published unsigned unless
    ``unsigned``; an unsigned package is not added into a signed one unless
    ``allow_unsigned_packages``, nor is it signed with a key current clients reject
    unless ``allow_weak_key``, and a package may be signed by one of the keys published
    beside the signing key (``options.extra_keys``, else the recorded ones:
    repo/settings.py; repo/package_signatures.py). The result: each format's
    summary, the versions and files removed from the indexes, the pool files deleted,
    and the kept packages a removal made uninstallable (with ``force``). With ``held``
    (:func:`session`), the run is part of a caller's, under the lock it holds; ``then``
    is called with the record and the result of a complete run (not a dry one) before
    the lock is released: what the caller publishes with it (the key beside the
    indexes) is part of the run."""
    with os_errors(str(out)), _held_or_new(held, out, warn, wait, not dry_run) as run:
        tx, state = run.tx, run.state
        options, settings = settle(state, options, names, unsigned or dry_run)
        roots = {fmt: out / fmt.repo_dir for fmt in FORMATS}
        if not dry_run:
            _recover(state, roots, warn)
        plan = _plan(state, request, options.epoch, out)
        uninstallable = _check_removal(out, options.suite, request, plan)
        adding, revived, restamped = _read_inputs(state, files, plan.drop, roots, options.epoch)
        result: dict[str, Any] = {
            "removed_versions": plan.removed_versions,
            "removed_files": sorted(plan.drop),
            "deleted_files": [],
            "uninstallable": uninstallable,
            "formats": [],
        }
        if dry_run:
            return result
        # The one check of what a signed repository takes, for every run that adds.
        settings |= check_run(
            state,
            options,
            [item.path for fmt in FORMATS for item, _ in adding[fmt]]
            + [backend(fmt).pool(roots[fmt]) / e.name for fmt in FORMATS for e in revived[fmt]],
            allow_unsigned_packages=allow_unsigned_packages,
            allow_weak_key=allow_weak_key,
            extra_keys=options.extra_keys or (),
            warn=warn,
        )
        touched = {f.format for f in files} | {format_of(n) for n in plan.drop}
        # A format's indexes are written when this run changes it, or when it has
        # packages and its indexes are stale (a killed run), gone, or to be refreshed.
        written = [
            fmt for fmt in FORMATS
            if fmt in touched or (state.live_count(fmt.name) and (
                request.refresh
                or state.setting(f"stale:{fmt.name}") is not None
                or not _has_top_file(fmt, roots[fmt], options.suite)
            ))
        ]  # fmt: skip
        # What the new indexes name is what the record says: every pool file they index
        # is checked (its inputs were, above), so a file changed in place since it was
        # published (signed again, say) is an error, never indexed under old digests.
        inputs = {item.name for item in files}
        for fmt in written:
            pool = backend(fmt).pool(roots[fmt])
            for name, recorded, size, sha256 in state.live_stamps(fmt.name):
                if name in inputs or name in plan.drop or unchanged(f"{pool}/{name}", recorded):
                    continue
                now = check_recorded(pool / name, size, sha256, recorded)
                if now != recorded:
                    restamped.append((name, now))
        with state.transaction():
            for fmt in FORMATS:
                state.set_pending(fmt.name, [item.name for item, _ in adding[fmt]])
        indexes: dict[PackageFormat, Indexes] = {}
        kept_generations: dict[PackageFormat, list[tuple[int, list[str]]]] = {}
        with state.transaction():
            state.set_settings(settings)
            state.set_stamps(restamped)
            added: dict[PackageFormat, list[PackageEntry]] = {}
            for fmt in FORMATS:
                pool = backend(fmt).pool(roots[fmt])
                added[fmt] = [
                    entry.with_stamp(stamp(tx.add_to_pool(item, pool)))
                    for item, entry in adding[fmt]
                ]
            _record_changes(state, request, plan, added, revived, options.epoch)
            for fmt in written:
                work = tx.work / fmt.name
                work.mkdir()
                made = backend(fmt).compose(state, roots[fmt], options, work)
                following, number = generations.following(
                    state.generations(fmt.name),
                    made.on_disk(),
                    made.paths,
                    options.names.keep_generations,
                )
                state.number_retired(fmt.name, _RETIRING, number)
                indexes[fmt], kept_generations[fmt] = made, following
            state.set_settings({f"stale:{fmt.name}": "1" for fmt in written})
            state.clear_pending()  # the files added are recorded from now on
        for fmt in FORMATS:
            for item, _ in adding[fmt]:
                tx.forget(backend(fmt).pool(roots[fmt]) / item.name)
        # What apt and dnf read changes only now, each format's top file last.
        for fmt in written:
            indexes[fmt].commit()
        # What no kept generation names goes, then the record says so in one commit: a
        # run killed in between leaves rows the next run finds gone, and removes again.
        result["deleted_files"] = _collect(roots, indexes, kept_generations, state)
        with state.transaction():
            for fmt in written:
                state.set_generations(fmt.name, kept_generations[fmt])
            state.set_settings({f"stale:{fmt.name}": None for fmt in written})
            state.forget_files(result["deleted_files"])
        result["formats"] = [
            {
                "format": fmt.name,
                "added": sorted(item.name for item, _ in adding[fmt])
                + sorted(e.name for e in revived[fmt]),
                "packages": state.live_count(fmt.name),
                **({"suite": options.suite} if fmt.repo_marker == "dists" else {}),
                **indexes[fmt].summary(),
            }
            for fmt in written
        ]
        if then is not None:
            then(state, result)
        return result


@dataclass(frozen=True, slots=True)
class Session:
    """A run's hold on a repository: its lock and scratch directory, and its record."""

    tx: Transaction
    state: State


@contextmanager
def session(
    out: Path, warn: Callable[[str], None], wait: bool = True, adopt: bool = True
) -> Iterator[Session]:
    """Hold the repository at ``out`` for one run: its lock (waited for, or an error
    when not ``wait``), its scratch directory and its record (see :func:`record`). What
    a caller does around :func:`apply` (``held=``) is then part of the same run."""
    with Transaction(out, warn, wait) as tx, record(out, warn, adopt=adopt) as state:
        check_tree(out)  # under the lock: what this run writes in is no link out of OUT
        yield Session(tx, state)


@contextmanager
def _held_or_new(
    held: Session | None, out: Path, warn: Callable[[str], None], wait: bool, adopt: bool
) -> Iterator[Session]:
    if held is not None:
        yield held
        return
    with session(out, warn, wait, adopt) as made:
        yield made


@contextmanager
def record(out: Path, warn: Callable[[str], None], adopt: bool = True) -> Iterator[State]:
    """The record of ``out``, made from what an older gfxpack left when there is none
    (unless not ``adopt``: then that is an error)."""
    fresh = not has_record(out)
    if fresh and (out / DATABASE).exists() and legacy.present(out) and adopt:
        # An empty record is no empty repository: taken for one, this run would drop
        # every package published before from the signed indexes.
        warn(
            f"{out / DATABASE}: empty; rebuilt from the package files of the pools (they "
            "stay published; which build each belonged to is not known again)"
        )
    if fresh and not adopt and legacy.present(out):
        raise RepoError(legacy.NOT_ADOPTED.format(out=out))
    with State.open(out) as state:
        try:
            if fresh:
                legacy.adopt(state, out, warn)
            yield state
        except BaseException:
            if fresh and state.is_empty():  # a refused first run leaves no record behind
                state.close()
                for name in (DATABASE, f"{DATABASE}-journal"):
                    (out / name).unlink(missing_ok=True)
            raise


def _has_top_file(fmt: PackageFormat, root: Path, suite: str) -> bool:
    if fmt.repo_marker == "dists":
        return (root / "dists" / suite / "Release").is_file()
    return (root / "repodata" / "repomd.xml").is_file()


def format_of(name: str) -> PackageFormat:
    return format_named(name.rsplit(".", 1)[1])


def _recover(state: State, roots: dict[PackageFormat, Path], warn: Callable[[str], None]) -> None:
    """Remove the pool files an interrupted run was adding and never recorded (what it
    staged went with its scratch directory); each format's older leftovers are its
    repository's to recover."""
    for fmt in FORMATS:
        backend(fmt).recover(roots[fmt], warn)
    pending = state.pending()
    for fmt_name, name in pending:
        if state.file(name) is None:
            fmt = format_named(fmt_name)
            path = backend(fmt).pool(roots[fmt]) / name
            if path.is_file() and not path.is_symlink():
                path.unlink()
                warn(f"{path}: removed, an interrupted run added it but never published it")
    if pending:
        with state.transaction():
            state.clear_pending()


def _plan(state: State, request: Request, now: int, out: Path) -> _Plan:
    """The builds ``request`` removes (its versions, and what retention no longer keeps
    once its builds are added) and the package files that then leave the indexes."""
    rows = state.builds()
    known = {row.version for row in rows}
    missing = [v for v in request.remove_versions if v not in known]
    if missing:
        raise RepoError(
            f"{out}: no build {', '.join(missing)} is published here "
            f"(published: {', '.join(r.version for r in rows) or 'none'})"
        )
    if request.remove_packages:
        live = {name for fmt in FORMATS for name, *_ in state.live_stamps(fmt.name)}
        absent = [name for name in request.remove_packages if name not in live]
        if absent:
            raise RepoError(f"{out}: {', '.join(absent)}: not published here")
    # The builds after this run's: a version published again keeps its place and date.
    after: list[Any] = list(rows)
    new_files: dict[str, set[str]] = {}
    for build in request.add:
        if build.version in known or build.version in new_files:
            new_files.setdefault(build.version, set()).update(build.files)
        else:
            new_files[build.version] = set(build.files)
            after.append(build)
    gone_versions = set(request.remove_versions)
    if request.retain is not None:
        gone_versions |= {b.version for b in request.retain.expired(after, now)}
    plan = _Plan()
    candidates: set[str] = set()
    for row in rows:
        if row.version in gone_versions:
            plan.gone.append(row.id)
            plan.removed_versions.append(row.version)
            candidates |= set(state.build_files(row.id))
    kept_new = {n for v, names in new_files.items() if v not in gone_versions for n in names}
    for version, names in new_files.items():
        if version in gone_versions and version not in known:
            plan.removed_versions.append(version)
            candidates |= names
    plan.drop = (candidates - state.named_elsewhere(candidates, plan.gone)) - kept_new
    packages = set(request.remove_packages)
    if packages:
        plan.drop |= packages
        for row in rows:
            if row.id not in plan.gone and set(state.build_files(row.id)) <= packages:
                plan.removed_versions.append(row.version)
    return plan


def _check_removal(out: Path, suite: str, request: Request, plan: _Plan) -> list[str]:
    """The kept packages a removal leaves uninstallable, when ``request.force``; without
    it, a removal that takes a dependency of a kept package is refused, naming each."""
    if not (request.remove_versions or request.remove_packages) or not plan.drop:
        return []
    found = holes(out, suite, plan.drop)
    if found.lost and not request.force:
        raise RepoError(
            f"{out}: removing {', '.join(sorted(plan.drop))} leaves kept packages without "
            f"a dependency: {'; '.join(found.lost)}; nothing was removed (remove those "
            "packages too, or give --force to leave them uninstallable)"
        )
    return found.uninstallable


def _read_inputs(
    state: State,
    files: Sequence[InputFile],
    drop: set[str],
    roots: dict[PackageFormat, Path],
    epoch: int,
) -> tuple[
    dict[PackageFormat, list[tuple[InputFile, PackageEntry]]],
    dict[PackageFormat, list[PackageEntry]],
    list[tuple[str, str]],
]:
    """Read and check the files this run publishes: per format, the new ones (with their
    entries) and those that left the indexes and come back; of those published already,
    (name, stamp) where the stamp changed over the same bytes."""
    adding: dict[PackageFormat, list[tuple[InputFile, PackageEntry]]] = {f: [] for f in FORMATS}
    revived: dict[PackageFormat, list[PackageEntry]] = {f: [] for f in FORMATS}
    restamped: list[tuple[str, str]] = []
    idents: dict[tuple[str, str], str] = {}
    for item in files:
        fmt = item.format
        pool = backend(fmt).pool(roots[fmt])
        if item.name in drop:
            continue
        found = state.file(item.name)
        if found is not None and found[0].sha256 != item.sha256:
            raise RepoError(
                f"{pool / item.name} is already published with different contents; a "
                "published version never changes (raise --release)"
            )
        if found is not None and found[1] is None:
            # Published already: its pool file is checked (hashed when its stamp
            # changed), as every file a run touches, never the whole pool; a new stamp
            # for the same bytes is recorded, so the next run need not hash it again.
            now = check_published(pool, found[0])
            if now != found[0].stamp:
                restamped.append((item.name, now))
            continue
        if found is not None:  # retired, its pool file kept: it comes back as it was
            entry = found[0].with_stamp(check_published(pool, found[0]))
            revived[fmt].append(entry)
        else:
            entry = backend(fmt).read_package(item.path, item.name, item.size, item.sha256, epoch)
            adding[fmt].append((item, entry))
        key = (fmt.name, entry.ident)
        other = idents.setdefault(key, item.name)
        owner = state.live_owner(fmt.name, entry.ident)
        if other != item.name or owner is not None:
            raise RepoError(
                f"{item.name}: {entry.ident} is already published as "
                f"{pool / (owner or other)}; a published version never changes "
                "(raise --release)"
            )
    return adding, revived, restamped


def _record_changes(
    state: State,
    request: Request,
    plan: _Plan,
    added: dict[PackageFormat, list[PackageEntry]],
    revived: dict[PackageFormat, list[PackageEntry]],
    epoch: int,
) -> None:
    """The record after the run (in the open transaction): builds added and removed,
    files retired, the pieces of the segments that lost files, a new segment per format
    for the files added."""
    for build in request.add:
        files = [n for n in build.files if n not in plan.drop]
        if files:
            state.add_build(build.version, epoch, build.promoted_from, files)
    state.drop_builds(plan.gone)
    if request.remove_packages:
        state.drop_build_files(request.remove_packages)
    by_segment = state.segments_of(plan.drop)
    state.retire(plan.drop, _RETIRING)
    for segment, names in sorted(by_segment.items()):
        entries = state.segment_entries(segment)
        pieces = backend(format_of(names[0])).pieces(entries) if entries else {}
        state.set_pieces(segment, pieces)
    for fmt in FORMATS:
        entries = added[fmt] + revived[fmt]
        if entries:
            segment = state.new_segment(fmt.name)
            state.set_pieces(segment, backend(fmt).pieces(entries))
            state.add_files(segment, entries)


def _collect(
    roots: dict[PackageFormat, Path],
    indexes: dict[PackageFormat, Indexes],
    kept: dict[PackageFormat, list[tuple[int, list[str]]]],
    state: State,
) -> list[str]:
    """Remove what no kept generation names: older indexes, and the pool files of
    packages that left the indexes before the oldest kept generation. The pool files
    removed (their rows are the caller's to forget)."""
    deleted = []
    for fmt, made in indexes.items():
        for path in made.stale(kept[fmt]):
            path.unlink(missing_ok=True)
        oldest = kept[fmt][0][0] if kept[fmt] else 0
        pool = backend(fmt).pool(roots[fmt])
        for name in state.retired_before(fmt.name, oldest):
            path = pool / name
            if path.is_file() and not path.is_symlink():
                path.unlink()
            deleted.append(name)
    return sorted(deleted)
