"""A writable copy of the shared root for one arch's install that costs what the
install changes, not the whole root: an overlay mount (the shared root read-only
below, a per-arch directory above that takes every write), else ``cp -a``.

Each arch's image starts from the base with the host packages installed once
(the performance goal: every arch shares the host install). Copying that root per
arch, then removing the copy, costs in proportion to the host packages, several
times what the arch's own install does. An overlay's lower directory is never
written: a file the arch's install or its scripts change is copied up first, so the
next arch starts from the same shared root. The mount is made by root on this
machine (``gfxpack image`` runs as root) and always unmounted when the block ends;
where the kernel or a container refuses it, the copy is a plain ``cp -a``.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from gfxpack.image import ImageError

# Characters mount's overlay options cannot carry in a directory's name.
_UNSAFE_IN_OPTIONS = (",", ":", "\\", "=")


class Removals:
    """Directories removed in threads of their own while the run goes on (removing a
    tree costs a metadata write per entry, which on a busy or discarding disk is
    waiting, not work); :meth:`wait` before anything depends on their being gone."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def remove(self, path: Path) -> None:
        thread = threading.Thread(target=shutil.rmtree, args=(path, True), daemon=True)
        thread.start()
        self._threads.append(thread)

    def wait(self) -> None:
        for thread in self._threads:
            thread.join()
        self._threads.clear()


@contextlib.contextmanager
def writable_copy(source: Path, where: Path, removals: Removals) -> Iterator[Path]:
    """A writable copy of the directory ``source`` for the block, made in the new
    directory ``where`` (removed, with the copy, by ``removals`` when the block
    ends)."""
    root, upper, work = where / "root", where / "upper", where / "work"
    where.mkdir()
    mounted = False
    try:
        mounted = _mount(source.resolve(), upper, work, root)
        if not mounted:
            copy(source, root)
        yield root
    finally:
        if mounted:
            _unmount(root)
        removals.remove(where)


def copy(source: Path, destination: Path) -> None:
    """cp -a: owners, modes, times, symlinks and hard links kept (a reflink where the
    file system shares blocks)."""
    copied = subprocess.run(
        ["cp", "-a", "--reflink=auto", str(source), str(destination)],
        capture_output=True, text=True, errors="replace", check=False,
    )  # fmt: skip
    if copied.returncode != 0:
        raise ImageError(f"copying {source} to {destination} failed: {copied.stderr.strip()}")


def _mount(lower: Path, upper: Path, work: Path, merged: Path) -> bool:
    """Mount the overlay at ``merged``; False (and nothing mounted or left) where it
    cannot be."""
    directories = (lower, upper.resolve(), work.resolve(), merged.resolve())
    if any(c in str(d) for d in directories for c in _UNSAFE_IN_OPTIONS) or not shutil.which(
        "mount"
    ):
        return False
    for directory in (upper, work, merged):
        directory.mkdir()
    options = f"lowerdir={lower},upperdir={directories[1]},workdir={directories[2]}"
    try:
        mounted = subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", options, str(directories[3])],
            capture_output=True, check=False, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        mounted = None
    if mounted is not None and mounted.returncode == 0:
        return True
    for directory in (upper, work, merged):
        shutil.rmtree(directory, ignore_errors=True)
    return False


def _unmount(merged: Path) -> None:
    """Unmount ``merged``; detached lazily when busy, so the removal that follows
    never reaches through it."""
    done = subprocess.run(["umount", str(merged)], capture_output=True, check=False)
    if done.returncode != 0:
        subprocess.run(["umount", "-l", str(merged)], capture_output=True, check=False)
