"""What a repository keeps from run to run, in its record: its apt suite (one per
repository), the names users' machines know it by, where it is served (--base-url), the
key its indexes are signed with and the keys published beside it (--extra-key: a key
rotation lasts many runs, and a run that forgot the other key would republish the
keyrings without it); a run that says nothing of them takes them from there."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack.repo.inputs import RepoError
from gfxpack.repo.names import RepositoryNames
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.recorded import fingerprint_problem
from gfxpack.repo.state import State, has_record

DEFAULT_SUITE = "stable"


@dataclass(frozen=True)
class Recorded:
    """What a repository keeps from run to run: its apt suite, its names (None: a new
    repository), the URL it is served at (None: never given) and the key its indexes
    are signed with, and the fingerprints of the keys published beside it."""

    suite: str = DEFAULT_SUITE
    names: RepositoryNames | None = None
    signed_by: str | None = None
    base_url: str | None = None
    extra_keys: tuple[str, ...] = ()

    def extra_keys_with(self, given: Sequence[str] | None) -> tuple[str, ...]:
        """The keys a run publishes beside its signing key: those ``given`` (--extra-key,
        replacing the recorded ones; () with --drop-extra-keys), else the recorded."""
        return self.extra_keys if given is None else tuple(given)

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
        _recorded_extra_keys(state),
    )


def checked_extra_keys(keys: Sequence[str]) -> tuple[str, ...]:
    """The --extra-key values given, each once, as the record keeps them (upper-case
    fingerprints); RepoError names one that is not a fingerprint."""
    for key in keys:
        problem = fingerprint_problem(key)
        if problem:
            raise RepoError(f"--extra-key {problem}, as gpg --list-keys prints it")
    return tuple(dict.fromkeys(key.upper() for key in keys))


def _recorded_extra_keys(state: State) -> tuple[str, ...]:
    # Checked as fingerprints when read (recorded.py): a damaged record is refused.
    text = state.setting("extra_keys")
    return tuple(text.split(" ")) if text else ()


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
    if options.extra_keys and not options.sign_key:
        raise RepoError("--extra-key needs --sign-key: it is published beside that key")
    # Published only beside a signing key: an unsigned run ends the rotation too.
    # Those given are checked as the record's are (a library caller's too): a value
    # recorded unchecked would have every later run refuse the record as damaged.
    given = checked_extra_keys(options.extra_keys) if options.extra_keys is not None else None
    extra_keys = (
        Recorded(extra_keys=_recorded_extra_keys(state)).extra_keys_with(given)
        if options.sign_key
        else ()
    )
    settings = {
        "suite": suite,
        "names": json.dumps(_names_json(names)),
        "signed_by": options.sign_key or None,
        "base_url": options.base_url or state.setting("base_url"),
        "extra_keys": " ".join(extra_keys) or None,
    }
    settled = PublishOptions(
        suite,
        options.epoch,
        options.sign_key,
        options.gnupghome,
        names,
        settings["base_url"],
        extra_keys,
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
