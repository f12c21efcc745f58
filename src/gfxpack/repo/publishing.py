"""``gfxpack repo`` as one library call: :func:`publish` does the whole run under the
repository's one lock and returns a :class:`~gfxpack.repo.results.PublishResult`.

Under the lock, in this order: the settings the repository keeps (suite, names, base
URL: repo/settings.py) are merged with those given, once; the setup packages are made
and signed (a published one is taken as it is); every input is checked and read; the
run (repo/run.py) publishes; the public key is written beside the indexes; the setup
lines are made from what was recorded. A second run on the same repository waits for
all of it, so it never sees one run's indexes with another's key or settings.

Only checks of the values given, which need no record, come before the lock: a
refused value leaves no repository directory behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gfxpack.errors import StrictFailure
from gfxpack.formats import FORMATS, format_named
from gfxpack.formats.openpgp import check_signing_key
from gfxpack.outdir import INDEX
from gfxpack.repo import run
from gfxpack.repo.backends import backend
from gfxpack.repo.inputs import InputFile, RepoError, collect
from gfxpack.repo.names import DEFAULT, DEFAULT_NAMES, RepositoryNames, check_suite
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.package_signatures import UNSIGNED_PACKAGES
from gfxpack.repo.recorded import build_version_problem
from gfxpack.repo.results import PublishResult, RunResult
from gfxpack.repo.retention import Retention
from gfxpack.repo.settings import Recorded, checked_extra_keys, recorded_in
from gfxpack.repo.state import State, has_record
from gfxpack.repo.transaction import os_errors
from gfxpack.repo.trust import export_public_key, publish_key

# Sign the RPM made at the first path, unless the same package is published at the
# second (a signature differs each time it is made; a published file never changes),
# with the key named third: gfxpack.sign's sign_unless_published, which sits above
# repo/ and so is passed in.
PackageSigner = Callable[[Path, Path, str], None]


@dataclass(frozen=True, slots=True)
class SetupRequest:
    """A setup package to make and publish with the run (``--setup-package``)."""

    name: str
    sign: PackageSigner
    version: str = "1.0"
    repo_id: str | None = None  # what names the files it installs; None: ``name``
    repo_name: str | None = None  # the name dnf and zypper show; None: the id
    mtime: int = 0  # stamped as gfxpack build stamps packages (SOURCE_DATE_EPOCH)


def _ignore(_: str) -> None:
    pass


def publish(
    builds: Path | Sequence[Path],
    out: Path,
    suite: str | None,
    epoch: int,
    sign_key: str | None = None,
    gnupghome: str | None = None,
    warn: Callable[[str], None] = _ignore,
    wait: bool = True,
    strict: bool = False,
    names: RepositoryNames = DEFAULT_NAMES,
    retain: Retention | None = None,
    unsigned: bool = False,
    base_url: str | None = None,
    allow_unsigned_packages: bool = False,
    allow_weak_key: bool = False,
    extra_keys: Sequence[str] | None = None,
    given_names: Mapping[str, Any] | None = None,
    setup: SetupRequest | None = None,
) -> PublishResult:
    """Add the packages of ``builds`` to the repository of each format under ``out``: the
    apt one at out/apt, the rpm-md one at out/rpm; one summary per format published,
    with the lines that point a machine at it. Another run on ``out`` is waited for, or
    an error when not ``wait``. With ``strict`` a warning about the inputs stops the run
    before anything is written.

    The indexes carry ``names`` where their format has a place for them (apt's Origin
    and Label); with ``given_names`` (RepositoryNames' fields; None: not given) they are
    instead the recorded ones with those given. ``suite`` and ``base_url`` None are the
    recorded ones (stable and none for a new repository); a base URL given is
    remembered for the setup lines of later runs. With ``retain`` the builds it no
    longer keeps are pruned in the same run (repo/retention.py). A repository signed
    before is not published unsigned unless ``unsigned``. An unsigned RPM is not
    published into a signed repository unless ``allow_unsigned_packages``, nor is a
    repository signed with a key current apt or dnf reject unless ``allow_weak_key``;
    an RPM may be signed by one of ``extra_keys``, the keys published beside the
    signing key (repo/package_signatures.py): fingerprints, recorded and published by
    every later run until given again (None: the recorded ones; (): none, the end of a
    key rotation). With ``sign_key`` its public key (and the extra ones) is published
    beside the indexes; with ``setup`` a setup package is made, signed and published
    too."""
    # Imported here: setup packages need rpm's reader (createrepo_c), which the commands
    # that only read a repository (stream list, verify) import gfxpack.repo without.
    from gfxpack.repo.setup_package import (
        SetupPackage,
        check_base_url,
        check_setup_package,
        setup_lines,
        write_index,
        write_setup_packages,
    )

    builds = [builds] if isinstance(builds, Path) else list(builds)
    if suite is not None:
        check_suite(suite)
    if base_url is not None:
        check_base_url(base_url)
    if setup is not None:
        check_setup_package(setup.name, setup.version)
        # A base URL can come from the record, which only a repository has: without
        # one, refused here, before the lock makes the repository's directory.
        if sign_key is None or (base_url is None and not has_record(out)):
            raise RepoError("--setup-package needs --sign-key and --base-url")
    if given_names is not None:
        Recorded().with_names(dict(given_names)).check()  # the values given, alone
    else:
        names.check()
    given_keys = checked_extra_keys(extra_keys) if extra_keys is not None else None
    if given_keys and not sign_key:
        raise RepoError("--extra-key needs --sign-key: it is published beside that key")
    if sign_key:
        # Refused before anything is signed with them (the run warns, when allowed);
        # recorded extra keys are checked by the run (repo/package_signatures.py).
        for option, key_name in [
            ("--sign-key", sign_key),
            *(("--extra-key", k) for k in given_keys or ()),
        ]:
            check_signing_key(
                key_name, gnupghome, what=f"{option} {key_name}", allow=allow_weak_key
            )
    # A key gpg lacks is refused before the lock makes the repository's directory.
    key = export_public_key(sign_key, gnupghome, given_keys or ()) if sign_key else None
    # The inputs are no part of the repository: checked and read before its lock, so a
    # refused one leaves no repository behind.
    chosen: dict[str, InputFile] = {}
    input_warnings: list[str] = []
    with os_errors(str(out)):
        added = _inputs(builds, input_warnings.append, epoch, chosen)
    if strict and input_warnings:
        raise StrictFailure(input_warnings)
    for message in input_warnings:
        warn(message)
    with os_errors(str(out)), run.session(out, warn, wait) as held:
        recorded = recorded_in(held.state)
        suite = suite if suite is not None else recorded.suite
        check_suite(suite)
        base_url = base_url if base_url is not None else recorded.base_url
        # The keys published beside the signing key: given, else as recorded.
        extras = recorded.extra_keys_with(given_keys)
        if sign_key and extras != (given_keys or ()):
            try:
                key = export_public_key(sign_key, gnupghome, extras)
            except RepoError as e:  # the signing key's was exported above: an extra one
                raise RepoError(
                    f"{e}: a key the repository publishes beside --sign-key (--extra-key, "
                    "remembered until --drop-extra-keys)"
                ) from None
        if given_names is not None:
            given = dict(given_names)
            if recorded.names is None and given.get("repo_id") is None:
                given["repo_id"] = setup.name if setup is not None else DEFAULT
            names = recorded.with_names(given)
            names.check()
        unchecked = held.state.setting(UNSIGNED_PACKAGES) is not None
        setup_files = {}
        setup_dir = held.tx.work / "setup"
        if setup is not None:
            if sign_key is None or key is None or not base_url:
                raise RepoError("--setup-package needs --sign-key and --base-url")
            package = SetupPackage(
                setup.name,
                base_url,
                suite,
                setup.version,
                setup.repo_id,
                setup.repo_name,
                package_gpgcheck=not (allow_unsigned_packages or unchecked),
            )
            setup_dir.mkdir()
            setup_files = write_setup_packages(package, key, FORMATS, setup_dir, setup.mtime)
            for fmt, path in setup_files.items():
                if fmt.signs_packages:
                    setup.sign(path, backend(fmt).pool(out / fmt.repo_dir) / path.name, sign_key)
                # rpm-md lists a package file's mtime: the run's clock would make the
                # indexes differ on every run of the same inputs.
                os.utime(path, (setup.mtime, setup.mtime))
            write_index(setup_dir, setup_files.values())
            added += _inputs([setup_dir], warn, epoch, chosen)
        files = [chosen[name] for name in sorted(chosen)]
        done = RunResult.from_run(
            run.apply(
                out,
                files,
                run.Request(add=added, retain=retain),
                PublishOptions(
                    suite,
                    epoch,
                    sign_key,
                    gnupghome,
                    base_url=base_url,
                    extra_keys=given_keys,  # None: as recorded (repo/settings.py)
                ),
                names=names,
                warn=warn,
                unsigned=unsigned,
                allow_unsigned_packages=allow_unsigned_packages,
                allow_weak_key=allow_weak_key,
                held=held,
            )
        )
        published = [format_named(name) for name in done.published]
        keys = publish_key(out, key, published) if key is not None else {}
        unchecked = held.state.setting(UNSIGNED_PACKAGES) is not None
        lines = setup_lines(
            out, base_url, suite, keys, setup_files, published, names, not unchecked
        )
    pruned = done.removed_versions if retain is not None else None
    return PublishResult(
        formats=tuple(
            replace(summary, pruned=pruned, setup=lines.get(format_named(summary.format), {}))
            for summary in done.formats
        ),
        removed_versions=done.removed_versions,
    )


def _inputs(
    builds: Sequence[Path], warn: Callable[[str], None], epoch: int, chosen: dict[str, InputFile]
) -> list[run.Build]:
    """The files of every build added to ``chosen``, each name once (the same name twice
    must be the same bytes); the builds among them that name their version."""
    versioned = []
    for build in builds:
        items, version = collect(build, warn)
        if version is not None:
            versioned.append(_build_of(build, version, items, epoch))
        for item in items:
            other = chosen.setdefault(item.name, item)
            if other.sha256 != item.sha256:
                raise RepoError(
                    f"{item.name}: {other.path.parent} and {item.path.parent} both have it, "
                    "with different contents"
                )
    return versioned


def _build_of(build: Path, version: str, files: list[InputFile], epoch: int) -> run.Build:
    """The build the ``--in`` directory ``build`` (of ``files``) is, its index naming
    ``version``."""
    # Checked as gfxpack build takes it: the record keeps it, and reads it back so.
    problem = build_version_problem(version)
    if problem:
        raise RepoError(f"{build / INDEX}: {problem}")
    return run.Build(version, epoch, tuple(sorted(f.name for f in files)))


# What a stream command's library call (repo/stream.py) runs under its lock once the
# run is complete: repo/run.py's ``then``.
RunHook = Callable[[State, dict[str, Any]], None]


def stream_run(
    operation: Callable[[RunHook], dict[str, Any]],
    out: Path,
    sign_key: str | None,
    setup: bool = False,
    gnupghome: str | None = None,
) -> tuple[RunResult, Recorded | None]:
    """Run ``operation`` (stream prune, remove, promote or refresh on the repository at
    ``out``, given the hook to pass to the run) and, under the run's lock once it is
    complete, publish ``sign_key``'s public key, and the extra keys the repository
    records (a key rotation's other key), beside the indexes it signed and, with
    ``setup``, give each format published the lines that point a machine at ``out``,
    made from the settings the run recorded. Returns what the run did and those
    settings (None: a dry run, which publishes nothing)."""
    from gfxpack.repo.setup_package import setup_lines  # see publish()

    finished: list[tuple[RunResult, Recorded]] = []

    def then(state: State, result: dict[str, Any]) -> None:
        done = RunResult.from_run(result)
        recorded = recorded_in(state)
        published = [format_named(name) for name in done.published]
        keys = {}
        if sign_key and published:
            # With the keys the run published beside it (recorded: a key rotation's).
            public = export_public_key(sign_key, gnupghome, recorded.extra_keys)
            keys = publish_key(out, public, published)
        if setup and published:
            lines = setup_lines(
                out, recorded.base_url, recorded.suite, keys, {}, published,
                recorded.names or DEFAULT_NAMES,
                package_gpgcheck=state.setting(UNSIGNED_PACKAGES) is None,
            )  # fmt: skip
            formats = [
                replace(summary, setup=lines.get(format_named(summary.format), {}))
                for summary in done.formats
            ]
            done = replace(done, formats=tuple(formats))
        finished.append((done, recorded))

    result = operation(then)
    if finished:
        return finished[0]
    return RunResult.from_run(result), None
