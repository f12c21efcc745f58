"""No unsigned package behind ``gpgcheck=1``: what a signed repository requires of the
packages it publishes, and of the key that signs it.

The setup package and the printed dnf and zypper lines of a signed rpm-md repository
say ``gpgcheck=1``: dnf and zypper then refuse every package not signed by the key
they were given, while gpg, createrepo and the repository's own indexes see nothing
wrong. So every RPM a run adds into a signed repository must carry a header
signature by the key that signs the repository (the key published as ``gpgkey``),
whether it comes from a build (``repo``) or another stream (``stream promote``): both
go through :func:`check_run`. ``--allow-unsigned-packages`` publishes them anyway and
is recorded, so that the repository's setup says ``gpgcheck=0`` (signed indexes,
``repo_gpgcheck=1``, still) from then on.

The signing key itself is refused when current apt or dnf would reject its
signatures (formats/openpgp.py), unless ``--allow-weak-key``: then a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gfxpack.formats import FORMATS
from gfxpack.formats.openpgp import check_signing_key
from gfxpack.formats.package_format import format_of_file
from gfxpack.formats.rpmsign import SignError, signature_problem
from gfxpack.repo.backends import backend
from gfxpack.repo.inputs import RepoError
from gfxpack.repo.options import PublishOptions
from gfxpack.repo.state import DATABASE, State
from gfxpack.repo.trust import export_public_key

# The record's setting that says the repository took unsigned packages: its setup says
# gpgcheck=0.
UNSIGNED_PACKAGES = "unsigned_packages"
# The record's setting naming the signing key a run allowed though current clients
# reject it (--allow-weak-key): later runs with that key warn rather than refuse.
WEAK_KEY = "weak_key_allowed"
# How many refused files the error names.
_NAMED = 3
# gpgv processes checking RPMs side by side: each check is a process start (5 ms or
# more), which dominates the publish of a signed nightly of hundreds of RPMs; four
# at a time took a third off on two cores (bench/README.md).
_CHECKERS = 4


def packages_unchecked(out: Path) -> bool:
    """Whether the repository at ``out`` took unsigned packages (``gpgcheck=0``)."""
    if not (out / DATABASE).is_file():
        return False
    with State.open(out, create=False) as state:
        return state.setting(UNSIGNED_PACKAGES) is not None


def check_run(
    state: State,
    options: PublishOptions,
    new: Iterable[Path],
    *,
    allow_unsigned_packages: bool = False,
    allow_weak_key: bool = False,
    extra_keys: Sequence[str] = (),
    warn: Callable[[str], None] = lambda _: None,
) -> dict[str, str | None]:
    """Before a run (with ``options``, on the repository of ``state``) publishes the
    package files ``new``: its signing key is one current clients accept, and every new
    package of a format that signs its packages is signed by it or by one of the
    ``extra_keys`` published beside it (what machines are given to check with), unless
    the repository takes unsigned packages (``allow_unsigned_packages``, or recorded
    so). The settings the record then keeps."""
    if not options.sign_key:
        return {}
    # A weak key allowed once is allowed on (a stream command has no option for it).
    allow_weak_key = allow_weak_key or state.setting(WEAK_KEY) == options.sign_key
    settings: dict[str, str | None] = {WEAK_KEY: options.sign_key if allow_weak_key else None}
    for what, key in [
        (f"--sign-key {options.sign_key}", options.sign_key),
        # Most runs are not given them: they are the repository's (repo/settings.py).
        *((f"--extra-key {k} (remembered until gfxpack repo --drop-extra-keys)", k)
          for k in extra_keys),
    ]:  # fmt: skip
        check_signing_key(key, options.gnupghome, what=what, allow=allow_weak_key, warn=warn)
    if allow_unsigned_packages or state.setting(UNSIGNED_PACKAGES) is not None:
        return {**settings, UNSIGNED_PACKAGES: "1"}
    checked = [path for path in new if format_of_file(path.name).signs_packages]
    if state.setting("signed_by") is None:
        # Signed for the first time: the setup turns to gpgcheck=1 for the packages
        # published unsigned before too.
        checked += _published(state)
    if not checked:
        return settings
    keyring = export_public_key(options.sign_key, options.gnupghome, extra_keys).binary

    def problem_of(path: Path) -> str | None:
        try:
            return signature_problem(path, keyring, "the repository's keys")
        except SignError as e:
            raise RepoError(str(e)) from None

    # In the order given (map keeps it), so the error names the first files.
    with ThreadPoolExecutor(max_workers=_CHECKERS) as pool:
        problems = [problem for problem in pool.map(problem_of, checked) if problem]
    if problems:
        more = f" and {len(problems) - _NAMED} more" if len(problems) > _NAMED else ""
        raise RepoError(
            f"{'; '.join(problems[:_NAMED])}{more}: this repository is signed, so its "
            "setup says gpgcheck=1 and dnf and zypper would refuse such a package. Sign "
            f"the packages with the repository's key (gfxpack build --sign-key "
            f"{options.sign_key}, or gfxpack sign --key {options.sign_key} FILE...), or "
            "give --allow-unsigned-packages to publish them with gpgcheck=0 in the "
            "repository's setup"
        )
    return settings


def _published(state: State) -> list[Path]:
    """The pool files of the live packages of every format that signs its packages."""
    out = state.path.parent
    return [
        backend(fmt).pool(out / fmt.repo_dir) / name
        for fmt in FORMATS
        if fmt.signs_packages
        for name, *_ in state.live_stamps(fmt.name)
    ]
