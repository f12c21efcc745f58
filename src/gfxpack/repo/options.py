"""What one publish is told: where apt's indexes go, when they are dated, who signs
them and what users' machines call the repository."""

from __future__ import annotations

from dataclasses import dataclass

from gfxpack.repo.names import DEFAULT_NAMES, RepositoryNames


@dataclass(frozen=True, slots=True)
class PublishOptions:
    suite: str
    epoch: int  # the indexes' date (SOURCE_DATE_EPOCH, else now)
    sign_key: str | None = None
    gnupghome: str | None = None
    names: RepositoryNames = DEFAULT_NAMES
    # Where the repository is served (the setup lines' URLs); None: as recorded.
    base_url: str | None = None
    # Keys published beside sign_key without signing (a key rotation's other key), by
    # fingerprint; None: as the repository recorded them (repo/settings.py), () none.
    extra_keys: tuple[str, ...] | None = None
