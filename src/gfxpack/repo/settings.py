"""What a repository keeps from run to run, in its record: its apt suite (one per
repository), the names users' machines know it by, where it is served (--base-url) and
the key its indexes are signed with; a run that says nothing of them takes them from
there."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack.repo.inputs import RepoError
from gfxpack.repo.names import RepositoryNames
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.state import State, has_record

DEFAULT_SUITE = "stable"


@dataclass(frozen=True)
class Recorded:
    """What a repository keeps from run to run: its apt suite, its names (None: a new
    repository), the URL it is served at (None: never given) and the key its indexes
    are signed with."""

    suite: str = DEFAULT_SUITE
    names: RepositoryNames | None = None
    signed_by: str | None = None
    base_url: str | None = None

    def with_names(self, given: dict[str, Any]) -> RepositoryNames:
        """The repository's names with those ``given`` (None: not given) instead; a
        ``valid_for_days`` of 0 is no end."""
        names = self.names or RepositoryNames()
        values = {**_names_json(names), **{k: v for k, v in given.items() if v is not None}}
        if values.get("valid_for_days") == 0:
            values["valid_for_days"] = None
        return RepositoryNames(**values)


def recorded_settings(out: Path) -> Recorded:
    """What the repository at ``out`` keeps (see Recorded); the defaults when there is
    none."""
    if not has_record(out):
        return Recorded()
    with State.open(out, create=False) as state:
        return recorded_in(state)


def recorded_in(state: State) -> Recorded:
    """What the record ``state`` keeps (see Recorded): for a run holding the lock."""
    names = _recorded_names(state) if state.setting("names") is not None else None
    return Recorded(
        state.setting("suite") or DEFAULT_SUITE,
        names,
        state.setting("signed_by"),
        _recorded_base_url(state),
    )


def _recorded_base_url(state: State) -> str | None:
    """The --base-url the repository was last published with, checked as one given."""
    from gfxpack.repo.setup_package import check_base_url

    url = state.setting("base_url")
    if url is not None:
        try:
            check_base_url(url)
        except RepoError as e:
            raise RepoError(f"{state.path}: the recorded {e}") from None
    return url


def settle(
    state: State, options: PublishOptions, names: RepositoryNames | None, unsigned: bool
) -> tuple[PublishOptions, dict[str, str | None]]:
    """``options`` with what the record says where this run says nothing, checked
    against it (one suite per repository, and no unsigned indexes for a signed one),
    and the settings the record keeps of them."""
    recorded_suite = state.setting("suite")
    suite = options.suite or recorded_suite or DEFAULT_SUITE
    if recorded_suite is not None and suite != recorded_suite:
        raise RepoError(
            f"{state.path.parent}: its apt suite is {recorded_suite}; a repository has one "
            f"suite (publish suite {suite} into another directory, or give --suite "
            f"{recorded_suite})"
        )
    if names is None:
        names = _recorded_names(state)
    names.check()
    signed_by = state.setting("signed_by")
    if signed_by and not options.sign_key and not unsigned:
        raise RepoError(
            f"{state.path.parent}: its indexes are signed (key {signed_by}); give --sign-key "
            "to sign the new ones, or --unsigned to publish them unsigned from now on"
        )
    settings = {
        "suite": suite,
        "names": json.dumps(_names_json(names)),
        "signed_by": options.sign_key or None,
        "base_url": options.base_url or state.setting("base_url"),
    }
    settled = PublishOptions(
        suite,
        options.epoch,
        options.sign_key,
        options.gnupghome,
        names,
        settings["base_url"],
        options.extra_keys,
    )
    return settled, settings


def _names_json(names: RepositoryNames) -> dict[str, Any]:
    return {
        "origin": names.origin,
        "label": names.label,
        "repo_id": names.repo_id,
        "repo_name": names.repo_name,
        "codename": names.codename,
        "keep_generations": names.keep_generations,
        "valid_for_days": names.valid_for_days,
    }


def _recorded_names(state: State) -> RepositoryNames:
    text = state.setting("names")
    if text is None:
        return RepositoryNames()
    try:
        values = json.loads(text)
        return RepositoryNames(**values)
    except (ValueError, TypeError) as e:
        raise RepoError(f"{state.path}: unreadable repository names ({e})") from None
