"""What a repository has published, and how its indexes are made: one SQLite database,
``OUT/.gfxpack-repo.db``, written only under the repository's lock. One module, past 600
lines, because the schema and every statement run against it stand side by side, so a
reader sees all that touches a table in one place.

* **files**: every package file the pools hold, with its size, sha256, inode stamp, its
  identity (apt: package, version and architecture; rpm-md: NEVRA) and its entry (what
  it says in the indexes: apt's stanza and paths, rpm-md's XML snippets). A file that
  left the indexes stays a row, ``retired`` at the index generation that first did not
  name it, until no retained generation names it; then its pool file goes.
* **segments** and **pieces**: the packages one run added to one format are a segment;
  its share of every index is a piece, kept plain and gzip-compressed. An index is its
  pieces concatenated (gzip members concatenate: apt, dnf, zypper and libsolv read the
  whole), so a publish compresses only what it adds, and memory stays flat in the
  repository's size.
* **builds**: each build published (its version, date, files, where it was promoted
  from), in the order published.
* **generations**: the index files each of the last publishes wrote, per format, kept
  for clients that read an older top file (repo/generations.py).
* **pending**: pool files a run is adding; what an interrupted run added but never
  recorded is removed by the next (never a walk of the whole pool).
* **settings**: what a later run reuses: the apt suite, the repository's names.

Every value read back is checked as the option or input it came from was
(repo/recorded.py): names become pool paths only after the same check a ``--in`` file
name gets (one plain file name), the suite is one plain name as ``--suite`` is, build
versions and times are what gfxpack build and SOURCE_DATE_EPOCH take; so a damaged or
planted record is refused with one line, and cannot point a write or a removal out of
the repository. An empty file where the record was (a full disk, a lost copy) is no
record (:func:`has_record`): the next run rebuilds it from the pools, as a missing one.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack._io import FILE_MODE
from gfxpack.repo import recorded
from gfxpack.repo.inputs import FILE_NAME, RepoError

DATABASE = ".gfxpack-repo.db"
SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS builds(
    id INTEGER PRIMARY KEY,
    version TEXT NOT NULL UNIQUE,
    published INTEGER NOT NULL,
    promoted_from TEXT);
CREATE TABLE IF NOT EXISTS build_files(
    build INTEGER NOT NULL, name TEXT NOT NULL, PRIMARY KEY(build, name));
CREATE INDEX IF NOT EXISTS build_files_by_name ON build_files(name);
CREATE TABLE IF NOT EXISTS segments(id INTEGER PRIMARY KEY, format TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pieces(
    segment INTEGER NOT NULL, part TEXT NOT NULL, plain BLOB NOT NULL, packed BLOB NOT NULL,
    PRIMARY KEY(segment, part));
CREATE TABLE IF NOT EXISTS files(
    name TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    segment INTEGER,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    stamp TEXT NOT NULL,
    ident TEXT NOT NULL,
    arch TEXT NOT NULL,
    entry TEXT NOT NULL,
    retired INTEGER);
CREATE INDEX IF NOT EXISTS files_by_segment ON files(segment);
CREATE UNIQUE INDEX IF NOT EXISTS live_idents ON files(format, ident) WHERE retired IS NULL;
CREATE INDEX IF NOT EXISTS retired_files ON files(format, retired) WHERE retired IS NOT NULL;
CREATE TABLE IF NOT EXISTS generations(
    format TEXT NOT NULL, number INTEGER NOT NULL, paths TEXT NOT NULL,
    PRIMARY KEY(format, number));
CREATE TABLE IF NOT EXISTS pending(format TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY(format, name));
"""


@dataclass(frozen=True, slots=True)
class PackageEntry:
    """One package file as its repository indexes it."""

    name: str
    format: str
    size: int
    sha256: str
    ident: str  # what makes it one version: no two live files share it
    arch: str
    entry: dict[str, Any]  # what it says in the indexes (its format's own shape)
    stamp: str = ""

    def with_stamp(self, stamp: str) -> PackageEntry:
        return PackageEntry(
            self.name, self.format, self.size, self.sha256, self.ident, self.arch, self.entry, stamp
        )


@dataclass(frozen=True, slots=True)
class Piece:
    """One segment's share of one index: its text and that text gzip-compressed."""

    plain: bytes
    packed: bytes


@dataclass(frozen=True, slots=True)
class BuildRow:
    """A published build (repo/stream.py's Build without its file list)."""

    id: int
    version: str
    published: int
    promoted_from: dict[str, Any] | None


class State:
    """The open record of one repository. Writes happen in :meth:`transaction` blocks,
    each committed whole or not at all."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    # -- opening -------------------------------------------------------------------

    @classmethod
    def open(cls, out: Path, create: bool = True) -> State:
        """The record of the repository at ``out`` (made empty when ``create`` and there
        is none; RepoError when not ``create`` and there is none)."""
        path = out / DATABASE
        if path.is_symlink() or (path.exists() and not path.is_file()):
            # SQLite would write through a link: the record is a file of the repository.
            raise RepoError(f"{path}: not a regular file; the record is never followed out")
        if not create and not path.is_file():
            raise RepoError(f"{out}: no repository gfxpack published is there")
        if not create and not has_record(out):
            raise RepoError(
                f"{path}: empty (a disk that filled up, a copy that lost it?); the next "
                "gfxpack repo or stream command that changes the repository rebuilds it "
                "from the package files of its pools"
            )
        try:
            connection = sqlite3.connect(path, timeout=600, isolation_level=None)
            state = cls(path, connection)
            # A record that has its tables is only read here: opening it writes nothing.
            if not state._rows("SELECT 1 FROM sqlite_master WHERE name = 'settings'"):
                connection.executescript(_SCHEMA)
                # Like every file of a repository, whatever the umask (SQLite's journal
                # takes the database's mode).
                os.chmod(path, FILE_MODE)
            version = state.setting("schema")
            if version is None:
                with state.transaction():
                    state.set_settings({"schema": SCHEMA_VERSION})
            elif version != SCHEMA_VERSION:
                raise RepoError(
                    f"{path}: a record of schema {version}; this gfxpack reads schema "
                    f"{SCHEMA_VERSION} (use the gfxpack that published it, or a newer one)"
                )
        except sqlite3.DatabaseError as e:
            raise failure(path, e) from None
        return state

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> State:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write: every statement in the block is committed, or none."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                # SQLite has rolled back already after some errors (a full disk): the
                # error that stopped the block is the one to tell, never the rollback's.
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.DatabaseError):
                        self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            raise failure(self.path, e) from None

    def _rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, parameters).fetchall()
        except sqlite3.DatabaseError as e:
            raise failure(self.path, e) from None

    def _run(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        try:
            self._db.execute(sql, parameters)
        except sqlite3.DatabaseError as e:
            raise failure(self.path, e) from None

    def _run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            self._db.executemany(sql, rows)
        except sqlite3.DatabaseError as e:
            raise failure(self.path, e) from None

    # -- settings ------------------------------------------------------------------

    def setting(self, key: str) -> str | None:
        """The setting ``key``, checked as the option it keeps (None: not set)."""
        rows = self._rows("SELECT value FROM settings WHERE key = ?", (key,))
        if not rows:
            return None
        problem = recorded.setting_problem(key, rows[0][0])
        if problem:
            raise damaged(self.path, problem)
        return str(rows[0][0])

    def set_settings(self, values: dict[str, str | None]) -> None:
        for key, value in values.items():
            if value is None:
                self._run("DELETE FROM settings WHERE key = ?", (key,))
            else:
                self._run("INSERT OR REPLACE INTO settings VALUES (?, ?)", (key, value))

    def is_empty(self) -> bool:
        return not self._rows("SELECT 1 FROM files LIMIT 1") and not self._rows(
            "SELECT 1 FROM builds LIMIT 1"
        )

    # -- files ---------------------------------------------------------------------

    def file(self, name: str) -> tuple[PackageEntry, int | None] | None:
        """The file ``name`` and the generation it was retired at (None: live)."""
        rows = self._rows(
            "SELECT name, format, size, sha256, ident, arch, entry, stamp, retired "
            "FROM files WHERE name = ?",
            (name,),
        )
        if not rows:
            return None
        retired = rows[0][8]
        if retired is not None:
            retired = self._integer(retired, f"the generation {name} was retired at")
        return self._entry(rows[0]), retired

    def _entry(self, row: Sequence[Any]) -> PackageEntry:
        name = checked_name(self.path, row[0])
        problem = recorded.file_problem(row[1], row[2], row[3], row[5])
        if problem or not isinstance(row[4], str) or not isinstance(row[7], str):
            raise damaged(self.path, f"{name}: {problem or 'its identity or stamp is not text'}")
        try:
            entry = json.loads(row[6])
        except (ValueError, TypeError, RecursionError) as e:
            raise damaged(self.path, e) from None
        if not isinstance(entry, dict):
            raise damaged(self.path, f"the entry of {name} is not an object")
        # What the indexes say of it when they are made again (its segment lost a file).
        problem = recorded.entry_problem(row[1], name, row[2], row[3], entry)
        if problem:
            raise damaged(self.path, f"{name}: {problem}")
        return PackageEntry(name, row[1], row[2], row[3], row[4], row[5], entry, row[7])

    def _integer(self, value: object, what: str) -> int:
        """``value`` read back as ``what``: an integer, or the record is damaged."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise damaged(self.path, f"{what} is {value!r}, not a number")
        return value

    def live_owner(self, fmt: str, ident: str) -> str | None:
        """The live file of format ``fmt`` whose identity is ``ident``."""
        rows = self._rows(
            "SELECT name FROM files WHERE format = ? AND ident = ? AND retired IS NULL",
            (fmt, ident),
        )
        return checked_name(self.path, rows[0][0]) if rows else None

    def live_count(self, fmt: str) -> int:
        rows = self._rows("SELECT count(*) FROM files WHERE format = ? AND retired IS NULL", (fmt,))
        return int(rows[0][0])

    def live_stamps(self, fmt: str) -> list[tuple[str, str, int, str]]:
        """(name, stamp, size, sha256) of every live file of ``fmt``."""
        found = []
        for name, stamp_, size, sha256 in self._rows(
            "SELECT name, stamp, size, sha256 FROM files "
            "WHERE format = ? AND retired IS NULL ORDER BY name",
            (fmt,),
        ):
            name = checked_name(self.path, name)
            problem = recorded.digest_problem(size, sha256)
            if problem or not isinstance(stamp_, str):
                raise damaged(self.path, f"{name}: {problem or 'its stamp is not text'}")
            found.append((name, stamp_, size, sha256))
        return found

    def segment_entries(self, segment: int) -> list[PackageEntry]:
        """The live files of ``segment``, by name."""
        rows = self._rows(
            "SELECT name, format, size, sha256, ident, arch, entry, stamp, retired FROM files "
            "WHERE segment = ? AND retired IS NULL ORDER BY name",
            (segment,),
        )
        return [self._entry(r) for r in rows]

    def segments_of(self, names: Iterable[str]) -> dict[int, list[str]]:
        """segment -> the live files among ``names`` it holds."""
        found: dict[int, list[str]] = {}
        for chunk in _chunks(sorted(set(names))):
            marks = ",".join("?" * len(chunk))
            for name, segment in self._rows(
                f"SELECT name, segment FROM files WHERE retired IS NULL AND name IN ({marks})",
                chunk,
            ):
                found.setdefault(self._integer(segment, "a segment"), []).append(str(name))
        return found

    def add_files(self, segment: int | None, entries: Iterable[PackageEntry]) -> None:
        """Record ``entries`` as live files of ``segment`` (a retired row of the same
        name comes back to life)."""
        entries = list(entries)
        # A retired row of the name goes first; a second live file of one identity is
        # refused by the unique index, never replaced.
        self._run_many("DELETE FROM files WHERE name = ?", ((e.name,) for e in entries))
        self._run_many(
            "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (
                (
                    e.name,
                    e.format,
                    segment,
                    e.size,
                    e.sha256,
                    e.stamp,
                    e.ident,
                    e.arch,
                    json.dumps(e.entry, separators=(",", ":")),
                )
                for e in entries
            ),
        )

    def retire(self, names: Iterable[str], generation: int) -> None:
        """The live files ``names`` leave the indexes: retired at ``generation``, the
        first of their format's that does not name them."""
        self._run_many(
            "UPDATE files SET retired = ? WHERE name = ? AND retired IS NULL",
            ((generation, name) for name in names),
        )

    def number_retired(self, fmt: str, placeholder: int, number: int) -> None:
        """Files of ``fmt`` retired at ``placeholder`` are retired at ``number``."""
        self._run(
            "UPDATE files SET retired = ? WHERE format = ? AND retired = ?",
            (number, fmt, placeholder),
        )

    def set_stamps(self, stamps: Iterable[tuple[str, str]]) -> None:
        """(name, stamp): the files' bytes were checked again, under a new stamp."""
        self._run_many("UPDATE files SET stamp = ? WHERE name = ?", ((s, n) for n, s in stamps))

    def retired_before(self, fmt: str, generation: int) -> list[str]:
        """Retired files of ``fmt`` that no generation from ``generation`` on names."""
        return [
            checked_name(self.path, r[0])
            for r in self._rows(
                "SELECT name FROM files WHERE format = ? AND retired IS NOT NULL "
                "AND retired <= ? ORDER BY name",
                (fmt, generation),
            )
        ]

    def retired_files(self, fmt: str) -> list[tuple[str, int, int]]:
        """(name, size, generation retired at) of every retired file of ``fmt`` whose
        pool file an older generation still names, by name."""
        return [
            (checked_name(self.path, r[0]), int(r[1]), int(r[2]))
            for r in self._rows(
                "SELECT name, size, retired FROM files WHERE format = ? "
                "AND retired IS NOT NULL ORDER BY name",
                (fmt,),
            )
        ]

    def forget_files(self, names: Iterable[str]) -> None:
        self._run_many("DELETE FROM files WHERE name = ?", ((n,) for n in names))

    # -- segments and pieces -------------------------------------------------------

    def new_segment(self, fmt: str) -> int:
        self._run("INSERT INTO segments(format) VALUES (?)", (fmt,))
        return int(self._rows("SELECT last_insert_rowid()")[0][0])

    def set_pieces(self, segment: int, pieces: dict[str, Piece]) -> None:
        """The pieces of ``segment`` are ``pieces`` (none: the segment is gone)."""
        self._run("DELETE FROM pieces WHERE segment = ?", (segment,))
        if not pieces:
            self._run("DELETE FROM segments WHERE id = ?", (segment,))
            return
        self._run_many(
            "INSERT INTO pieces VALUES (?, ?, ?, ?)",
            ((segment, part, p.plain, p.packed) for part, p in sorted(pieces.items())),
        )

    def segments(self, fmt: str) -> list[int]:
        return [
            self._integer(r[0], "a segment")
            for r in self._rows("SELECT id FROM segments WHERE format = ? ORDER BY id", (fmt,))
        ]

    def parts(self, fmt: str) -> set[str]:
        """The names of every piece the segments of ``fmt`` have."""
        found = set()
        for (part,) in self._rows(
            "SELECT DISTINCT part FROM pieces JOIN segments ON segments.id = pieces.segment "
            "WHERE segments.format = ?",
            (fmt,),
        ):
            # A piece's name becomes a directory of the indexes (binary-ARCH).
            problem = recorded.part_problem(part)
            if problem:
                raise damaged(self.path, problem)
            found.add(str(part))
        return found

    def pieces(self, segment: int, parts: Sequence[str]) -> Iterator[Piece]:
        """The pieces of ``segment`` named ``parts``, in that order (missing ones skipped);
        one row in memory at a time."""
        for part in parts:
            rows = self._rows(
                "SELECT plain, packed FROM pieces WHERE segment = ? AND part = ?", (segment, part)
            )
            if rows:
                plain, packed = rows[0]
                if not isinstance(plain, bytes) or not isinstance(packed, bytes):
                    raise damaged(self.path, f"the index piece {part} of {segment} is not bytes")
                yield Piece(plain, packed)

    # -- builds --------------------------------------------------------------------

    def builds(self) -> list[BuildRow]:
        """Every published build, oldest first."""
        found = []
        for id_, version, published, promoted in self._rows(
            "SELECT id, version, published, promoted_from FROM builds ORDER BY id"
        ):
            try:
                origin = recorded.promoted_from(promoted)
            except ValueError as e:
                raise damaged(self.path, e) from None
            problem = recorded.build_version_problem(version) or recorded.time_problem(
                published, f"the date build {version} was published"
            )
            if problem:
                raise damaged(self.path, problem)
            found.append(BuildRow(self._integer(id_, "a build"), version, published, origin))
        return found

    def build_files(self, build: int) -> list[str]:
        return [
            checked_name(self.path, r[0])
            for r in self._rows(
                "SELECT name FROM build_files WHERE build = ? ORDER BY name", (build,)
            )
        ]

    def named_elsewhere(self, names: Iterable[str], builds: Iterable[int]) -> set[str]:
        """Those of ``names`` that a build other than ``builds`` names."""
        excluded = set(builds)
        found = set()
        for chunk in _chunks(sorted(set(names))):
            marks = ",".join("?" * len(chunk))
            for name, build in self._rows(
                f"SELECT name, build FROM build_files WHERE name IN ({marks})", chunk
            ):
                if build not in excluded:
                    found.add(str(name))
        return found

    def add_build(
        self,
        version: str,
        published: int,
        promoted_from: dict[str, Any] | None,
        files: Iterable[str],
    ) -> None:
        """Record build ``version`` with ``files``; a version published before gains the
        files and keeps its date."""
        rows = self._rows("SELECT id FROM builds WHERE version = ?", (version,))
        if rows:
            build = int(rows[0][0])
        else:
            origin = json.dumps(promoted_from) if promoted_from is not None else None
            self._run(
                "INSERT INTO builds(version, published, promoted_from) VALUES (?, ?, ?)",
                (version, published, origin),
            )
            build = int(self._rows("SELECT last_insert_rowid()")[0][0])
        self._run_many(
            "INSERT OR IGNORE INTO build_files VALUES (?, ?)", ((build, n) for n in files)
        )

    def drop_builds(self, builds: Iterable[int]) -> None:
        for build in builds:
            self._run("DELETE FROM build_files WHERE build = ?", (build,))
            self._run("DELETE FROM builds WHERE id = ?", (build,))

    def drop_build_files(self, names: Iterable[str]) -> None:
        """Forget ``names`` in every build; builds left with no file are removed."""
        self._run_many("DELETE FROM build_files WHERE name = ?", ((n,) for n in names))
        emptied = self._rows(
            "SELECT id FROM builds WHERE id NOT IN (SELECT build FROM build_files)"
        )
        self.drop_builds(int(r[0]) for r in emptied)

    # -- index generations ---------------------------------------------------------

    def generations(self, fmt: str) -> list[tuple[int, list[str]]]:
        """(number, paths) of each recorded generation of ``fmt``, oldest first."""
        found = []
        for number, paths in self._rows(
            "SELECT number, paths FROM generations WHERE format = ? ORDER BY number", (fmt,)
        ):
            try:
                listed = json.loads(paths)
            except (ValueError, TypeError, RecursionError) as e:
                raise damaged(self.path, e) from None
            problem = recorded.generation_problem(number, listed)
            if problem:
                raise damaged(self.path, problem)
            found.append((number, listed))
        return found

    def set_generations(self, fmt: str, kept: Sequence[tuple[int, list[str]]]) -> None:
        self._run("DELETE FROM generations WHERE format = ?", (fmt,))
        self._run_many(
            "INSERT INTO generations VALUES (?, ?, ?)",
            ((fmt, number, json.dumps(sorted(paths))) for number, paths in kept),
        )

    # -- pending pool files --------------------------------------------------------

    def set_pending(self, fmt: str, names: Iterable[str]) -> None:
        self._run_many("INSERT OR IGNORE INTO pending VALUES (?, ?)", ((fmt, n) for n in names))

    def pending(self) -> list[tuple[str, str]]:
        """(format, name) of every pool file a run was adding."""
        found = []
        for fmt, name in self._rows("SELECT format, name FROM pending ORDER BY format, name"):
            problem = recorded.format_problem(fmt)
            if problem:
                raise damaged(self.path, f"a pending file's {problem}")
            found.append((str(fmt), checked_name(self.path, name)))
        return found

    def clear_pending(self) -> None:
        self._run("DELETE FROM pending")


def _chunks(values: list[str], size: int = 500) -> Iterator[list[str]]:
    """``values`` in slices small enough for one statement's parameters."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def checked_name(path: Path, name: object) -> str:
    """``name`` read from the record at ``path``: one plain package file name, or the
    record is damaged (it becomes a pool path)."""
    if not isinstance(name, str) or not FILE_NAME.match(name):
        raise damaged(path, f"{name!r} is not a package file name")
    return name


def has_record(out: Path) -> bool:
    """Whether ``out`` has a record to read. An empty file is none: what a disk that
    filled up while SQLite made it, or a copy that lost it, leaves; taken for an empty
    repository, the next publish would drop every earlier package from the indexes, so
    it is rebuilt from the pools as a missing record is. Anything else that is not a
    regular file counts, for :meth:`State.open` to refuse."""
    try:
        info = (out / DATABASE).lstat()
    except FileNotFoundError:
        return False
    return not stat.S_ISREG(info.st_mode) or info.st_size > 0


# SQLite's primary result codes (the low byte of an extended one) that say the system
# refused a write, not that the record is damaged.
_REFUSED_WRITES = {
    sqlite3.SQLITE_FULL: "no space left on the device",
    sqlite3.SQLITE_READONLY: "a read-only file or file system",
    sqlite3.SQLITE_IOERR: "an input/output error",
    sqlite3.SQLITE_CANTOPEN: "cannot open it",
    sqlite3.SQLITE_PERM: "permission denied",
}


def failure(path: Path, error: sqlite3.DatabaseError) -> RepoError:
    """What SQLite's ``error`` on the record at ``path`` means: the system refused a
    write (a full disk: the transaction was rolled back whole), or a damaged record."""
    code = getattr(error, "sqlite_errorcode", None)
    refused = _REFUSED_WRITES.get(code & 0xFF) if isinstance(code, int) else None
    if refused is None:
        return damaged(path, error)
    return RepoError(
        f"{path}: cannot write the record: {refused} ({error}); the record is whole: "
        "free some space (or make it writable) and run the command again, which "
        "completes or undoes what this one began"
    )


def damaged(path: Path, problem: object) -> RepoError:
    return RepoError(
        f"{path}: not a record of a published repository ({problem}); restore it from a "
        "backup of the repository"
    )
