"""OUT's own tree, trusted no more than an input.

A run writes into a repository's directories by path: package files into its pools,
indexes under ``dists/`` and ``repodata/``, and removes what no index names there. A
directory of those that is a symlink would send every one of those writes and
removals to wherever it leads (``pool/main`` -> ``/etc``). So before a run writes, under
its lock, each format's directory is gone through, one level at a time without
following a link (safe_tree.Tree, as ``join`` opens OUT): a symlink there, to a
directory or not, is refused with one error. The pool's files are not listed (a run
never reads the whole pool); each one a run uses is checked from ``lstat``
(repo/transaction.py).
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

from gfxpack.formats import FORMATS
from gfxpack.repo.backends import backend
from gfxpack.repo.inputs import RepoError
from gfxpack.safe_tree import Refused, Tree, TreeError


def check_tree(out: Path) -> None:
    """Refuse the repository at ``out`` (itself possibly a link its user named) when
    anything in a format's directory (``apt/``, ``rpm/``) is a symlink: its pool's
    directories, its indexes' directories and files, what an interrupted run left. The
    pool's files are not listed (a run never reads the whole pool)."""
    try:
        with Tree(out) as tree:
            for fmt in FORMATS:
                pool = backend(fmt).pool(Path(fmt.repo_dir)).parts
                if _directories(tree, pool[:1]):
                    _whole(tree, pool[:1], pool)
    except TreeError as e:
        raise RepoError(f"{e}; nothing was written") from None


def _directories(tree: Tree, parts: Sequence[str]) -> bool:
    """Open each directory of ``parts`` that is there, from the top: False where one is
    not (nor anything below it)."""
    for depth in range(1, len(parts) + 1):
        if parts[depth - 1] not in tree.names(parts[: depth - 1]):
            return False
        tree.directory(parts[:depth])  # refused: a symlink, or not a directory
    return True


def _whole(tree: Tree, top: Sequence[str], pool: Sequence[str]) -> None:
    """Everything under ``top`` but the files of ``pool``: no symlink anywhere (gfxpack
    writes none)."""
    pending = [tuple(top)]
    while pending:
        parts = pending.pop()
        if parts == tuple(pool):
            continue
        for name in tree.names(parts):
            mode = tree.status((*parts, name)).st_mode
            if stat.S_ISLNK(mode):
                shown = tree.name((*parts, name))
                raise Refused(f"{shown}: is a symlink; gfxpack does not follow it")
            if stat.S_ISDIR(mode):
                pending.append((*parts, name))
