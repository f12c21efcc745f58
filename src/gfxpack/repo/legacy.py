"""Repositories an older gfxpack published, before the record (repo/state.py): adopted
once, on the first run that finds no record.

Those kept JSON files beside what they described: each pool's ``.gfxpack-pool.json``
(its files' digests), ``OUT/.gfxpack-builds.json`` (the builds) and a
``.gfxpack-generations.json`` beside each format's indexes. Adopting reads every pool
file once (its digest checked against the old record, which names what was
published: a pool file it does not name was left by an interrupted run and is
removed), then the builds and generations, into the new record; the JSON files go
once the record holds them. A pool without any record (the oldest gfxpack) is
adopted as it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gfxpack.formats import FORMATS
from gfxpack.repo.backends import backend
from gfxpack.repo.inputs import FILE_NAME, RepoError, digest
from gfxpack.repo.state import State
from gfxpack.repo.transaction import stamp

POOL_RECORD = ".gfxpack-pool.json"
BUILDS = ".gfxpack-builds.json"
GENERATIONS = ".gfxpack-generations.json"
# What a command that only reads says of a repository not adopted yet.
NOT_ADOPTED = (
    "{out}: published by an older gfxpack, whose record the next gfxpack repo or stream "
    "command that changes the repository makes"
)


def present(out: Path) -> bool:
    """Whether an older gfxpack published into ``out``."""
    if (out / BUILDS).is_file():
        return True
    for fmt in FORMATS:
        pool = backend(fmt).pool(out / fmt.repo_dir)
        if (pool / POOL_RECORD).is_file() or any(pool.glob(f"*{fmt.extension}")):
            return True
    return False


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as e:
        raise RepoError(
            f"{path}: unreadable record of an older gfxpack ({e}); restore it from a backup"
        ) from None


def adopt(state: State, out: Path, note: Callable[[str], None]) -> None:
    """Fill the empty record ``state`` of ``out`` from what an older gfxpack left there
    (nothing when it left nothing)."""
    if not present(out):
        return
    legacy_files = [out / BUILDS]
    with state.transaction():
        for fmt in FORMATS:
            root = out / fmt.repo_dir
            pool = backend(fmt).pool(root)
            record = _json(pool / POOL_RECORD)
            legacy_files.append(pool / POOL_RECORD)
            if record is not None and not isinstance(record, dict):
                raise RepoError(f"{pool / POOL_RECORD}: not a record of published files")
            entries = []
            for path in sorted(pool.glob(f"*{fmt.extension}")):
                if not path.is_file() or path.is_symlink():
                    continue
                if record is not None and path.name not in record:
                    path.unlink()
                    note(f"{path}: removed, an interrupted run added it but never published it")
                    continue
                if not FILE_NAME.match(path.name):
                    raise RepoError(f"{path}: not a package file name gfxpack publishes")
                size, sha256 = digest(path)
                recorded = record.get(path.name) if record is not None else None
                if isinstance(recorded, dict) and recorded.get("sha256") != sha256:
                    raise RepoError(
                        f"{path}: its bytes differ from those published (sha256 {sha256}, "
                        f"recorded {recorded.get('sha256')}); a published file never "
                        "changes: restore it, nothing was re-signed"
                    )
                entry = backend(fmt).read_package(path, path.name, size, sha256)
                entries.append(entry.with_stamp(stamp(path)))
            if entries:
                segment = state.new_segment(fmt.name)
                state.set_pieces(segment, backend(fmt).pieces(entries))
                state.add_files(segment, entries)
            for where in [root, *sorted((root / "dists").glob("*"))]:
                listed = _json(where / GENERATIONS)
                legacy_files.append(where / GENERATIONS)
                if isinstance(listed, list) and all(isinstance(g, list) for g in listed):
                    numbered = [(n, [str(p) for p in g]) for n, g in enumerate(listed, 1)]
                    state.set_generations(fmt.name, numbered)
        _adopt_builds(state, out)
    for path in legacy_files:
        path.unlink(missing_ok=True)


def _adopt_builds(state: State, out: Path) -> None:
    document = _json(out / BUILDS)
    if document is None:
        return
    try:
        builds = [
            (
                str(b["version"]),
                int(b["published"]),
                [str(n) for n in b["files"]],
                b.get("promoted_from"),
            )
            for b in document["builds"]
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise RepoError(f"{out / BUILDS}: not a record of the published builds ({e})") from None
    for version, published, files, promoted in builds:
        # Its names become pool paths: one plain file name each, never a path.
        if not all(FILE_NAME.match(name) for name in files):
            raise RepoError(f"{out / BUILDS}: not a record of the published builds")
        live = [name for name in files if state.file(name) is not None]
        if live:
            state.add_build(version, published, promoted, live)
