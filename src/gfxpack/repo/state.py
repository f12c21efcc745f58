"""What a repository has published, and how its indexes are made: one SQLite database,
``OUT/.gfxpack-repo.db``, written only under the repository's lock.

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

Names read back from the database become pool paths only after the same check a
``--in`` file name gets (one plain file name), so a damaged record cannot point a
removal anywhere else.

One module for the record, a little over 500 lines: the schema and every statement
run against it side by side, so a reader sees all that touches a table in one place.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack._io import FILE_MODE
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
            raise damaged(path, e) from None
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
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            raise damaged(self.path, e) from None

    def _rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, parameters).fetchall()
        except sqlite3.DatabaseError as e:
            raise damaged(self.path, e) from None

    def _run(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        try:
            self._db.execute(sql, parameters)
        except sqlite3.DatabaseError as e:
            raise damaged(self.path, e) from None

    def _run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            self._db.executemany(sql, rows)
        except sqlite3.DatabaseError as e:
            raise damaged(self.path, e) from None

    # -- settings ------------------------------------------------------------------

    def setting(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM settings WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

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
        return self._entry(rows[0]), rows[0][8]

    def _entry(self, row: Sequence[Any]) -> PackageEntry:
        name = checked_name(self.path, row[0])
        try:
            entry = json.loads(row[6])
        except ValueError as e:
            raise damaged(self.path, e) from None
        if not isinstance(entry, dict):
            raise damaged(self.path, f"the entry of {name} is not an object")
        return PackageEntry(name, row[1], row[2], row[3], row[4], row[5], entry, row[7])

    def live_owner(self, fmt: str, ident: str) -> str | None:
        """The live file of format ``fmt`` whose identity is ``ident``."""
        rows = self._rows(
            "SELECT name FROM files WHERE format = ? AND ident = ? AND retired IS NULL",
            (fmt, ident),
        )
        return str(rows[0][0]) if rows else None

    def live_count(self, fmt: str) -> int:
        rows = self._rows("SELECT count(*) FROM files WHERE format = ? AND retired IS NULL", (fmt,))
        return int(rows[0][0])

    def live_stamps(self, fmt: str) -> list[tuple[str, str, int, str]]:
        """(name, stamp, size, sha256) of every live file of ``fmt``."""
        return [
            (checked_name(self.path, r[0]), r[1], r[2], r[3])
            for r in self._rows(
                "SELECT name, stamp, size, sha256 FROM files "
                "WHERE format = ? AND retired IS NULL ORDER BY name",
                (fmt,),
            )
        ]

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
                found.setdefault(int(segment), []).append(str(name))
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
            int(r[0])
            for r in self._rows("SELECT id FROM segments WHERE format = ? ORDER BY id", (fmt,))
        ]

    def parts(self, fmt: str) -> set[str]:
        """The names of every piece the segments of ``fmt`` have."""
        return {
            str(r[0])
            for r in self._rows(
                "SELECT DISTINCT part FROM pieces JOIN segments ON segments.id = pieces.segment "
                "WHERE segments.format = ?",
                (fmt,),
            )
        }

    def pieces(self, segment: int, parts: Sequence[str]) -> Iterator[Piece]:
        """The pieces of ``segment`` named ``parts``, in that order (missing ones skipped);
        one row in memory at a time."""
        for part in parts:
            rows = self._rows(
                "SELECT plain, packed FROM pieces WHERE segment = ? AND part = ?", (segment, part)
            )
            if rows:
                yield Piece(bytes(rows[0][0]), bytes(rows[0][1]))

    # -- builds --------------------------------------------------------------------

    def builds(self) -> list[BuildRow]:
        """Every published build, oldest first."""
        found = []
        for id_, version, published, promoted in self._rows(
            "SELECT id, version, published, promoted_from FROM builds ORDER BY id"
        ):
            try:
                origin = json.loads(promoted) if promoted is not None else None
            except ValueError as e:
                raise damaged(self.path, e) from None
            found.append(BuildRow(int(id_), str(version), int(published), origin))
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
            except ValueError as e:
                raise damaged(self.path, e) from None
            if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
                raise damaged(self.path, "a generation that is not a list of paths")
            found.append((int(number), listed))
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
        return [
            (str(fmt), checked_name(self.path, name))
            for fmt, name in self._rows("SELECT format, name FROM pending ORDER BY format, name")
        ]

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


def damaged(path: Path, problem: object) -> RepoError:
    return RepoError(
        f"{path}: not a record of a published repository ({problem}); restore it from a "
        "backup of the repository"
    )
