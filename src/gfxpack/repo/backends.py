"""One repository backend per package format: how its repository is published, where
it keeps its packages, how an interrupted run is undone, and how a machine is pointed
at it (the printed setup lines and the setup package's files).

formats/ holds what a format is (names, relation syntax, fields, files); what a
repository of it is lives here, looked up by the format's name (:func:`backend`), so
that formats/ imports nothing of repo/. apt.py and rpmmd.py do the work; they are
imported when a backend first needs them (rpm-md needs createrepo_c, slow to import).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gfxpack.formats import DEB, RPM, PackageFormat
from gfxpack.repo.names import RepositoryNames
from gfxpack.repo.trust import RPM_MD_KEY, PublicKey, key_bytes

if TYPE_CHECKING:
    from gfxpack.repo.inputs import InputFile
    from gfxpack.repo.transaction import Transaction


class RepositoryUpdate(Protocol):
    """What one run adds to a format's repository, computed and checked before any of it
    is written; then written in three steps, each for every format before the next."""

    # The pool's record as it will be written: each published file's entry, by name.
    record: dict[str, dict[str, Any]]

    def add_files(self, tx: Transaction) -> None:
        """Copy the new files into the pool."""

    def commit_record(self, tx: Transaction) -> None:
        """Record the pool: its files are published."""

    def commit_indexes(self, tx: Transaction) -> None:
        """Write the indexes package managers read."""

    def discard(self) -> None:
        """Remove what was prepared and not written (a no-op once written)."""

    def summary(self) -> dict[str, Any]:
        """What was done, as JSON values."""


class SetupSource(Protocol):
    """What a setup package (repo/setup_package.py) says about the repository it sets up."""

    @property
    def ident(self) -> str: ...
    @property
    def keyring_path(self) -> str: ...
    @property
    def rpm_key_path(self) -> str: ...
    def sources_text(self) -> str: ...
    def repo_text(self) -> str: ...


class RepositoryBackend(Protocol):
    """A format's repository."""

    fmt: PackageFormat

    def prepare(
        self,
        files: list[InputFile],
        root: Path,
        suite: str,
        epoch: int,
        sign_key: str | None,
        gnupghome: str | None,
        names: RepositoryNames,
        drop: frozenset[str] = frozenset(),
    ) -> RepositoryUpdate:
        """Everything adding ``files`` to the repository at ``root`` writes, checked (and
        signed), with nothing written yet; its indexes carry ``names`` where the format
        has a place for them. The published files named in ``drop`` leave the indexes
        and the record (their pool files are the caller's to remove)."""

    def pool(self, root: Path) -> Path:
        """Where the repository at ``root`` keeps its package files."""

    def recover(self, root: Path, note: Callable[[str], None]) -> None:
        """Undo what an interrupted run left in the repository at ``root`` beyond partial
        files (which every repository leaves alike); ``note`` tells what it restored."""

    def setup_lines(
        self,
        base: str,
        served: bool,
        root: Path,
        suite: str,
        key: Path | None,
        names: RepositoryNames,
    ) -> dict[str, str]:
        """Package manager -> one shell command line (run as root) that points it at the
        repository published under ``root``, served at ``base`` (``served``: a --base-url,
        else ``base`` is ``root`` as a file:// URL), checked with the published ``key``
        (None: unsigned); what it writes is named by ``names``."""

    def setup_package_lines(self, base: str, package_file: str) -> dict[str, str]:
        """Package manager -> one shell command line (run as root) that installs the
        repository's setup package ``package_file`` from the repository served at
        ``base``."""

    def setup_files(self, setup: SetupSource, key: PublicKey) -> list[tuple[str, bytes]]:
        """(path, contents) of what the repository's setup package installs: the
        sources entry and the signing key where this format's package manager reads
        them."""


# printf's format that prints each argument on a line of its own.
_LINES = "%s\\n"


def shell_words(*words: str) -> str:
    """One shell command of ``words``, each quoted (shlex.quote) so that it reaches the
    command exactly as written: a printed setup line pasted into a shell never runs or
    expands anything from a URL, path or name in it."""
    return " ".join(shlex.quote(word) for word in words)


def _package_url(repo: RepositoryBackend, base: str, package_file: str) -> str:
    """The URL of a package file in the pool of the repository served at ``base``."""
    return f"{base}/{repo.pool(Path(repo.fmt.repo_dir)).as_posix()}/{package_file}"


class AptRepository:
    fmt: PackageFormat = DEB

    def prepare(
        self,
        files: list[InputFile],
        root: Path,
        suite: str,
        epoch: int,
        sign_key: str | None,
        gnupghome: str | None,
        names: RepositoryNames,
        drop: frozenset[str] = frozenset(),
    ) -> RepositoryUpdate:
        from gfxpack.repo import apt

        return apt.prepare(
            files,
            root,
            suite,
            epoch,
            sign_key,
            gnupghome,
            names.origin,
            names.label,
            names.codename,
            names.keep_generations,
            names.valid_for_days,
            drop=drop,
        )

    def pool(self, root: Path) -> Path:
        from gfxpack.repo import apt

        return apt.pool_of(root)

    def recover(self, root: Path, note: Callable[[str], None]) -> None:
        from gfxpack.repo import apt

        apt.recover(root)

    def setup_lines(
        self,
        base: str,
        served: bool,
        root: Path,
        suite: str,
        key: Path | None,
        names: RepositoryNames,
    ) -> dict[str, str]:
        fmt = self.fmt
        commands = []
        trust = "trusted=yes"
        if key is not None:
            # Where apt (whose download sandbox may not read OUT) finds the keyring:
            # where the setup package installs it.
            keyring = f"/usr/share/keyrings/{names.repo_id}-archive-keyring.gpg"
            if served:
                commands.append(shell_words("curl", "-fsSLo", keyring, f"{base}/{fmt.key_file}"))
            else:
                commands.append(shell_words("cp", str(key.resolve()), keyring))
            trust = f"signed-by={keyring}"
        # printf, not echo: some shells' echo reads backslashes in its argument.
        entry = shell_words("printf", _LINES, f"deb [{trust}] {base}/{fmt.repo_dir} {suite} main")
        sources = f"/etc/apt/sources.list.d/{names.repo_id}.list"
        commands.append(f"{entry} | {shell_words('tee', sources)}")
        return {fmt.client: " && ".join([*commands, "apt-get update"])}

    def setup_package_lines(self, base: str, package_file: str) -> dict[str, str]:
        url = _package_url(self, base, package_file)
        # apt-get installs a local file only: fetched first, into a new directory (as
        # root, never a name in /tmp that another user could have made first).
        local = f'"$d"/{shlex.quote(package_file)}'
        return {
            self.fmt.client: (
                f"d=$(mktemp -d) && curl -fsSLo {local} {shlex.quote(url)} && "
                f"apt-get install -y {local} && apt-get update"
            )
        }

    def setup_files(self, setup: SetupSource, key: PublicKey) -> list[tuple[str, bytes]]:
        return [
            (f"/etc/apt/sources.list.d/{setup.ident}.sources", setup.sources_text().encode()),
            (setup.keyring_path, key_bytes(self.fmt, key)),
        ]


class RpmMdRepository:
    fmt: PackageFormat = RPM

    def prepare(
        self,
        files: list[InputFile],
        root: Path,
        suite: str,
        epoch: int,
        sign_key: str | None,
        gnupghome: str | None,
        names: RepositoryNames,
        drop: frozenset[str] = frozenset(),
    ) -> RepositoryUpdate:
        from gfxpack.repo import rpmmd

        return rpmmd.prepare(
            files, root, epoch, sign_key, gnupghome, names.keep_generations, drop=drop
        )

    def pool(self, root: Path) -> Path:
        from gfxpack.repo import rpmmd

        return rpmmd.pool_of(root)

    def recover(self, root: Path, note: Callable[[str], None]) -> None:
        from gfxpack.repo import rpmmd

        rpmmd.recover(root, note)

    def setup_lines(
        self,
        base: str,
        served: bool,
        root: Path,
        suite: str,
        key: Path | None,
        names: RepositoryNames,
    ) -> dict[str, str]:
        repo_dir = self.fmt.repo_dir
        key_url = f"{base}/{repo_dir}/{RPM_MD_KEY}" if key is not None else None
        lines = {}
        for client, directory, extra in (
            ("dnf", "/etc/yum.repos.d", ()),
            # zypper refreshes the repository's metadata before each command that reads
            # it (dnf does so when it expires).
            ("zypper", "/etc/zypp/repos.d", ("type=rpm-md", "enabled=1", "autorefresh=1")),
        ):
            section = self._repo_section(base, key_url, names, extra)
            repo_file = f"{directory}/{names.repo_id}.repo"
            lines[client] = f"{section} | {shell_words('tee', repo_file)}"
        # zypper is given the .repo file rather than `zypper addrepo URL`, which
        # percent-encodes its URL again (a %20 of it would reach the server as %2520).
        # It trusts the keys in rpm's database, so the key is imported first: from its
        # URL, or for a repository on this machine from its path (rpm --import reads a
        # file: URL without decoding its %20).
        zypper = [lines["zypper"], shell_words("zypper", "refresh", names.repo_id)]
        if key_url is not None:
            source = key_url if served else str((root / repo_dir / RPM_MD_KEY).resolve())
            zypper.insert(0, shell_words("rpm", "--import", source))
        lines["zypper"] = " && ".join(zypper)
        return lines

    def _repo_section(
        self, base: str, key_url: str | None, names: RepositoryNames, extra: Sequence[str]
    ) -> str:
        """A printf that prints the .repo section of the repository at ``base``."""
        checks = (
            ["gpgcheck=1", "repo_gpgcheck=1", f"gpgkey={key_url}"]
            if key_url is not None
            else ["gpgcheck=0"]
        )
        # Each line of the .repo section an argument of printf, never its format: a '%'
        # of a URL (%2F) reaches the file as it is.
        section = [
            f"[{names.repo_id}]",
            f"name={names.title}",
            f"baseurl={base}/{self.fmt.repo_dir}",
            *extra,
            *checks,
        ]
        return shell_words("printf", _LINES, *section)

    def setup_package_lines(self, base: str, package_file: str) -> dict[str, str]:
        url = _package_url(self, base, package_file)
        # zypper checks the setup package's signature (dnf does not, for a package given
        # as a file or URL): with the key the repository publishes.
        key_url = f"{base}/{self.fmt.repo_dir}/{RPM_MD_KEY}"
        return {
            "dnf": shell_words("dnf", "install", "-y", url),
            "zypper": (
                f"{shell_words('rpm', '--import', key_url)} && "
                f"{shell_words('zypper', 'install', '-y', url)}"
            ),
        }

    def setup_files(self, setup: SetupSource, key: PublicKey) -> list[tuple[str, bytes]]:
        repo = setup.repo_text().encode()
        return [
            (f"/etc/yum.repos.d/{setup.ident}.repo", repo),  # dnf
            (f"/etc/zypp/repos.d/{setup.ident}.repo", repo),  # zypper
            (setup.rpm_key_path, key_bytes(self.fmt, key)),
        ]


# format name -> its repository
BACKENDS: dict[str, RepositoryBackend] = {
    DEB.name: AptRepository(),
    RPM.name: RpmMdRepository(),
}


def backend(fmt: PackageFormat) -> RepositoryBackend:
    """The repository of ``fmt``."""
    return BACKENDS[fmt.name]
