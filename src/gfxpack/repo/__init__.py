"""Package repositories from builds' output: apt (repo/apt.py) and rpm-md (repo/rpmmd.py).

A run (repo/run.py) holds the repository's lock (repo/transaction.py): every input of
every ``--in`` is checked (repo/inputs.py) and the new packages read (repo/debfile.py,
repo/rpmfile.py), both repositories' new indexes are composed and signed, and only
then is anything a client reads changed; repo/stream.py says in which order.
:func:`publish` (repo/publishing.py) is the whole of ``gfxpack repo`` under that one
lock, and returns a :class:`PublishResult` (repo/results.py).
"""

from __future__ import annotations

from gfxpack.repo.inputs import RepoError
from gfxpack.repo.names import RepositoryNames
from gfxpack.repo.publishing import SetupRequest, publish
from gfxpack.repo.results import FormatSummary, PublishResult

__all__ = [
    "FormatSummary",
    "PublishResult",
    "RepoError",
    "RepositoryNames",
    "SetupRequest",
    "publish",
]
