"""Index generations: what a repository's last N publishes named, kept for clients.

A client reads the top file (apt's InRelease, rpm-md's repomd.xml), then fetches the
files it names. A publish that replaces them must leave the files an earlier top file
named where they were, or a client that read it a moment before gets a 404. Each
format writes its indexes under content-derived names (apt's by-hash, rpm-md's digest
prefixes), so a new publish adds names and never overwrites one; the record
(repo/state.py) keeps the names each of the last N publishes wrote, numbered, so that
the files of older generations are removed, and only once the new top file is in
place. Package files are kept the same way: one that left the indexes at generation
G is named by generations before G, and goes once none of those is retained.

The top file on disk counts as the newest generation even when an interrupted run
never recorded it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

# How many publishes' indexes stay fetchable unless --keep-generations says otherwise.
DEFAULT_KEEP = 3

Generation = tuple[int, list[str]]


def following(
    recorded: Sequence[Generation], on_disk: Iterable[str], new: Iterable[str], keep: int
) -> tuple[list[Generation], int]:
    """The last ``keep`` generations once ``new`` is published, and the number of the
    generation ``new`` is: ``recorded``, then ``on_disk`` (what the top file names, when
    the record missed it), then ``new`` (no new generation when it is the newest
    already: it would push an older one out)."""
    generations = [(number, sorted(paths)) for number, paths in recorded]

    def push(paths: list[str]) -> None:
        number = generations[-1][0] + 1 if generations else 1
        generations.append((number, paths))

    current = sorted(set(on_disk))
    if current and (not generations or generations[-1][1] != current):
        push(current)
    fresh = sorted(set(new))
    if not generations or generations[-1][1] != fresh:
        push(fresh)
    return generations[-keep:], generations[-1][0]


def stale(directory: Path, candidates: Iterable[Path], kept: Sequence[Generation]) -> list[Path]:
    """Of the files ``candidates`` (under ``directory``), those no kept generation names."""
    named = {path for _, paths in kept for path in paths}
    return sorted(p for p in candidates if p.relative_to(directory).as_posix() not in named)
