"""What users' machines call a published repository: each name an option of gfxpack repo.

- apt shows the Release's ``Origin`` and ``Label`` in ``apt-cache policy`` (``o=``,
  ``l=``), and preferences pin by them (``Pin: release o=ORIGIN``);
- the repository id names the files a setup line or the setup package installs
  (``/etc/apt/sources.list.d/ID.list``, ``/usr/share/keyrings/ID-archive-keyring.gpg``,
  ``/etc/yum.repos.d/ID.repo``, ``/etc/zypp/repos.d/ID.repo``), the ``.repo`` section
  and zypper's alias: what ``dnf repolist`` and ``zypper repos`` list it by;
- the repository name is the ``.repo`` file's ``name=``, what dnf and zypper show.

Each is checked once, as text of its kind, before anything is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gfxpack.repo.inputs import RepoError
from gfxpack.text_fields import TextKind, shown

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


# What a repository is called when no option names it.
DEFAULT_NAMES = RepositoryNames()
