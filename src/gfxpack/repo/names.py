"""What users' machines call a published repository: each name an option of gfxpack repo.

- apt shows the Release's ``Origin`` and ``Label`` in ``apt-cache policy`` (``o=``,
  ``l=``), and preferences pin by them (``Pin: release o=ORIGIN``);
- the repository id names the files a setup line or the setup package installs
  (``/etc/apt/sources.list.d/ID.list``, ``/usr/share/keyrings/ID-archive-keyring.gpg``,
  ``/etc/yum.repos.d/ID.repo``, ``/etc/zypp/repos.d/ID.repo``), the ``.repo`` section
  and zypper's alias: what ``dnf repolist`` and ``zypper repos`` list it by;
- the repository name is the ``.repo`` file's ``name=``, what dnf and zypper show;
- apt's ``Codename`` (``n=`` in pins), the suite unless named.

Beside them, how long the indexes users' machines fetch stay valid and fetchable: the
Release's ``Valid-Until`` and the number of publishes whose indexes are kept.

Each is checked once, as text of its kind, before anything is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gfxpack.repo.generations import DEFAULT_KEEP
from gfxpack.repo.inputs import RepoError
from gfxpack.text_fields import TextKind, shown

# apt's one component, and what dists/<suite> may be called: one plain directory name.
COMPONENT = "main"
SUITE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")


def check_suite(suite: str) -> None:
    if not SUITE.match(suite):
        raise RepoError(
            f"--suite {suite!r}: expected a plain name such as stable or rocm-8.2 "
            "(letters, digits and ._+-, no '/')"
        )


# What every name is unless an option says otherwise.
DEFAULT = "gfxpack"
# A Release field is one line of a deb822 paragraph; apt's pin expressions
# (o=ORIGIN,l=LABEL) separate their terms with ',', so a value with one could not be
# pinned. Spaces at either end would be lost by apt's parser.
RELEASE_FIELD = TextKind(
    "one line of printable characters without ',', not beginning or ending with a space",
    100,
    grammar=re.compile(r"[^,\s](?:[^,]*[^,\s])?"),
)
# A Codename is one word, like the suite it names (n= in apt's pins).
CODENAME = TextKind(
    "a plain name such as noble or rocm-8 (letters, digits and ._+-)",
    100,
    grammar=re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*"),
)
# The characters apt reads in a sources.list.d file name (it ignores any other file),
# which dnf's repository ids and zypper's aliases take too; a first letter or digit
# keeps it from reading as a command-line option (zypper refresh ID).
REPO_ID = TextKind(
    "a repository id (letters, digits, '.', '_' and '-', beginning with a letter or digit)",
    100,
    grammar=re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*"),
)
# The name= of a .repo file: one line, whose spaces at either end its readers drop.
REPO_NAME = TextKind(
    "one line of printable characters, not beginning or ending with a space",
    200,
    grammar=re.compile(r"\S(?:.*\S)?"),
)


def check_name(option: str, value: str, kind: TextKind) -> None:
    """``value`` (given as ``option``) is text of ``kind``; otherwise one error naming
    the option."""
    problem = kind.problem(value)
    if problem:
        # The value is named once, first.
        problem = problem.removesuffix(f", got {shown(value)}")
        raise RepoError(f"{option} {shown(value)}: {problem}")


@dataclass(frozen=True, slots=True)
class RepositoryNames:
    """What users' machines call the repository (see the module's documentation)."""

    origin: str = DEFAULT  # apt's Release Origin
    label: str = DEFAULT  # apt's Release Label
    repo_id: str = DEFAULT
    repo_name: str | None = None  # None: the id
    codename: str | None = None  # apt's Release Codename; None: the suite
    # Publishes whose indexes stay fetchable (apt by-hash, rpm-md repodata).
    keep_generations: int = DEFAULT_KEEP
    valid_for_days: int | None = None  # apt's Release Valid-Until; None: none

    @property
    def title(self) -> str:
        """The name dnf and zypper show."""
        return self.repo_name if self.repo_name is not None else self.repo_id

    def check(self) -> None:
        """Every name is text of its kind; otherwise one error naming its option."""
        check_name("--origin", self.origin, RELEASE_FIELD)
        check_name("--label", self.label, RELEASE_FIELD)
        check_name("--repo-id", self.repo_id, REPO_ID)
        if self.repo_name is not None:
            check_name("--repo-name", self.repo_name, REPO_NAME)
        if self.codename is not None:
            check_name("--codename", self.codename, CODENAME)
        check_lifetimes(self.keep_generations, self.valid_for_days)


# Upper bounds, far inside what a time_t and the record hold (10**30 days was an
# OverflowError): 100 years of Valid-Until, and 27 years of nightlies' generations,
# already an archive rather than apt's window for a slow mirror.
MAX_KEEP_GENERATIONS = 10_000
MAX_VALID_FOR_DAYS = 36_500  # 100 years


def check_lifetimes(keep_generations: int, valid_for_days: int | None) -> None:
    """--keep-generations and --valid-for are 1 or more, and at most their bound;
    otherwise one error naming the option."""
    if not 1 <= keep_generations <= MAX_KEEP_GENERATIONS:
        raise RepoError(
            f"--keep-generations {_number(keep_generations)}: expected 1 to "
            f"{MAX_KEEP_GENERATIONS:,} (1 keeps only the newest indexes)"
        )
    if valid_for_days is not None and not 1 <= valid_for_days <= MAX_VALID_FOR_DAYS:
        raise RepoError(
            f"--valid-for {_number(valid_for_days)}: expected a number of days, 1 to "
            f"{MAX_VALID_FOR_DAYS:,} (100 years; 0: no end)"
        )


def _number(value: int) -> str:
    """``value`` for a message; one too long to read (or for str(), past 4,300 digits)
    by its length."""
    return str(value) if abs(value) < 10**40 else "(a number of more than 40 digits)"


# What a repository is called when no option names it.
DEFAULT_NAMES = RepositoryNames()
