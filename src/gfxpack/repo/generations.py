"""Index generations: what a repository's last N publishes named, kept for clients.

A client reads the top file (apt's InRelease, rpm-md's repomd.xml), then fetches the
files it names. A publish that replaces them must leave the files an earlier top file
named where they were, or a client that read it a moment before gets a 404. Each
format writes its indexes under content-derived names (apt's by-hash, rpm-md's digest
prefixes), so a new publish adds names and never overwrites one; this module keeps
the list of the names each of the last N publishes wrote, so that the files of older
generations are removed, and only once the new top file is in place.

The list is a JSON file (a list of generations, oldest first, each a sorted list of
paths relative to the directory it is in). The top file on disk counts as the newest
generation even when an interrupted run never recorded it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from gfxpack.repo.inputs import RepoError

# How many publishes' indexes stay fetchable unless --keep-generations says otherwise.
DEFAULT_KEEP = 3
RECORD = ".gfxpack-generations.json"


def read(directory: Path) -> list[list[str]]:
    """The generations recorded in ``directory``, oldest first (none: an empty list)."""
    path = directory / RECORD
    try:
        value = json.loads(path.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise RepoError(
            f"{path}: unreadable list of index generations ({e}); remove it (the files of "
            "older generations are then kept until they are no longer named)"
        ) from None
    if not isinstance(value, list) or not all(
        isinstance(g, list) and all(isinstance(p, str) for p in g) for g in value
    ):
        raise RepoError(f"{path}: not a list of index generations; remove it")
    return value


def following(
    history: list[list[str]], published: Iterable[str], new: Iterable[str], keep: int
) -> list[list[str]]:
    """The last ``keep`` generations once ``new`` is published: ``history`` (as
    recorded), then ``published`` (what the top file on disk names, when the record
    missed it), then ``new``."""
    generations = [sorted(g) for g in history]
    current = sorted(set(published))
    if current and (not generations or generations[-1] != current):
        generations.append(current)
    fresh = sorted(set(new))
    if not generations or generations[-1] != fresh:  # a publish that changed nothing
        generations.append(fresh)  # is no new generation: it would push an old one out
    return generations[-keep:]


def encode(generations: list[list[str]]) -> bytes:
    return json.dumps(generations, indent=0).encode()


def stale(directory: Path, candidates: Iterable[Path], generations: list[list[str]]) -> list[Path]:
    """Of the files ``candidates`` (under ``directory``), those no generation names."""
    kept = {path for generation in generations for path in generation}
    return sorted(p for p in candidates if p.relative_to(directory).as_posix() not in kept)
