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
from gfxpack.repo.names import COMPONENT, RepositoryNames
from gfxpack.repo.trust import RPM_MD_KEY, PublicKey, key_bytes

if TYPE_CHECKING:
    from gfxpack.repo.options import PublishOptions
    from gfxpack.repo.state import PackageEntry, Piece, State


class Indexes(Protocol):
    """A publish's indexes of one format, written and signed under temporary names."""

    @property
    def paths(self) -> list[str]:
        """The content-named files of this generation (repo/generations.py)."""

    def on_disk(self) -> list[str]:
        """The content-named files the top file now in place names."""

    def commit(self) -> None:
        """Move the indexes into place, the top file last."""

    def stale(self, kept: Sequence[tuple[int, list[str]]]) -> list[Path]:
        """The content-named files no kept generation names."""

    def summary(self) -> dict[str, Any]:
        """What the summary of the publish says of them."""


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

    def read_package(
        self, path: Path, name: str, size: int, sha256: str, epoch: int | None = None
    ) -> PackageEntry:
        """The entry of the package file at ``path``, published as ``name``; a time the
        index records of the file is clamped to ``epoch`` (the run's
        SOURCE_DATE_EPOCH) when given."""

    def pieces(self, entries: Sequence[PackageEntry]) -> dict[str, Piece]:
        """The pieces of the indexes that ``entries`` (added in one run) make."""

    def compose(self, state: State, root: Path, options: PublishOptions, work: Path) -> Indexes:
        """The indexes of every live package of the format in ``state`` for the
        repository at ``root``, written under ``work`` and signed; nothing else is
        written."""

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
        *,
        package_gpgcheck: bool = True,
    ) -> dict[str, str]:
        """Package manager -> one shell command line (run as root) that points it at the
        repository published under ``root``, served at ``base`` (``served``: a --base-url,
        else ``base`` is ``root`` as a file:// URL), checked with the published ``key``
        (None: unsigned; each package too, where the format signs its packages, unless
        not ``package_gpgcheck``); what it writes is named by ``names``."""

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

    def read_package(
        self, path: Path, name: str, size: int, sha256: str, epoch: int | None = None
    ) -> PackageEntry:
        from gfxpack.repo import apt

        return apt.read_package(path, name, size, sha256)  # Packages holds no file time

    def pieces(self, entries: Sequence[PackageEntry]) -> dict[str, Piece]:
        from gfxpack.repo import apt

        return apt.pieces(entries)

    def compose(self, state: State, root: Path, options: PublishOptions, work: Path) -> Indexes:
        from gfxpack.repo import apt

        return apt.compose(state, root, options, work)

    def pool(self, root: Path) -> Path:
        return root / "pool" / COMPONENT

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
        *,
        package_gpgcheck: bool = True,
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

    def read_package(
        self, path: Path, name: str, size: int, sha256: str, epoch: int | None = None
    ) -> PackageEntry:
        from gfxpack.repo import rpmmd

        return rpmmd.read_package(path, name, size, sha256, epoch)

    def pieces(self, entries: Sequence[PackageEntry]) -> dict[str, Piece]:
        from gfxpack.repo import rpmmd

        return rpmmd.pieces(entries)

    def compose(self, state: State, root: Path, options: PublishOptions, work: Path) -> Indexes:
        from gfxpack.repo import rpmmd

        return rpmmd.compose(state, root, options, work)

    def pool(self, root: Path) -> Path:
        return root / "Packages"

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
        *,
        package_gpgcheck: bool = True,
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
            section = self._repo_section(base, key_url, names, extra, package_gpgcheck)
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
        self,
        base: str,
        key_url: str | None,
        names: RepositoryNames,
        extra: Sequence[str],
        package_gpgcheck: bool,
    ) -> str:
        """A printf that prints the .repo section of the repository at ``base``."""
        checks = (
            [f"gpgcheck={int(package_gpgcheck)}", "repo_gpgcheck=1", f"gpgkey={key_url}"]
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
