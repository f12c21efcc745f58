"""One object per package format, owning everything that differs between DEB and RPM.

The rest of gfxpack is written once for both: it asks the format how to spell
a name, which package.json keys hold its relations, how to render them, which
architecture field it reads, how its files are named and written, and how a
repository of them is published and read. Only :data:`DEB` and :data:`RPM`
exist; :data:`FORMATS` lists them in the order every output uses.

>>> DEB.spell("amdrocm-core-devel"), RPM.spell("amdrocm-core-devel")
('amdrocm-core-dev', 'amdrocm-core-devel')
>>> DEB.render_atom("python3", ">=", "3.6.8"), RPM.render_atom("python3", ">=", "3.6.8")
('python3 (>= 3.6.8)', 'python3 >= 3.6.8')
>>> format_named("rpm") is RPM
True
"""

from __future__ import annotations

import abc
import filecmp
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gfxpack import relations
from gfxpack._io import Writable
from gfxpack.errors import GfxpackError
from gfxpack.relations import Relation

if TYPE_CHECKING:
    from gfxpack.config import PackageSpec
    from gfxpack.formats import PackageInfo
    from gfxpack.formats.scripts import Alternative
    from gfxpack.inventory import Package
    from gfxpack.repo.inputs import InputFile
    from gfxpack.repo.names import RepositoryNames
    from gfxpack.repo.setup_package import SetupPackage
    from gfxpack.repo.transaction import Transaction
    from gfxpack.repo.trust import PublicKey
    from gfxpack.verify.integrity import Keyring
    from gfxpack.verify.universe import DepIds, Universe


class UnknownFormat(GfxpackError, ValueError):
    """A format name that is neither deb nor rpm."""


class PlannedAlternative(Protocol):
    """One alternative of a relation as the plan holds it (a planned Req)."""

    @property
    def name(self) -> str: ...
    @property
    def op(self) -> str | None: ...
    @property
    def version(self) -> str | None: ...
    @property
    def text(self) -> str | None: ...


class RepositoryUpdate(Protocol):
    """What one run adds to a format's repository, computed and checked before any of it
    is written; then written in three steps, each for every format before the next."""

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


@dataclass(frozen=True, eq=False)
class PackageFormat(abc.ABC):
    """A package format: its spelling, relation syntax, fields, files and repository."""

    name: str  # deb / rpm: the --format value and the key of JSON outputs
    title: str  # DEB / RPM: as messages write it
    extension: str  # .deb / .rpm
    devel_suffix: str  # -dev / -devel: how the format spells a -devel base
    # package.json key -> the relation list it fills for this format
    relation_keys: Mapping[str, str]
    # relation list -> the field name this format gives it, where it differs
    field_names: Mapping[str, str]
    # the PackageSpec attribute holding the package's architecture in this format
    arch_attribute: str
    # Debian architecture names as libsolv's (RPM) architecture policy knows them
    solv_arches: Mapping[str, str]
    repo_dir: str  # the directory gfxpack repo makes for it: apt / rpm
    client: str  # the package manager its first setup line is for: apt / dnf
    noarch: str  # the architecture of a package for every machine: all / noarch
    # where a signed repository publishes its public key, relative to the repository
    # root, and whether ASCII-armored (rpm's gpgkey=) or binary (apt's signed-by=)
    key_file: str
    armored_key: bool
    # its packages carry their own signature (RPM); else only the repository is signed
    signs_packages: bool
    repo_marker: str  # what marks a repository of it: dists / repodata
    file_lists: str  # the index saying which files packages install: Contents / filelists
    # libsolv prints this format's relation syntax itself (no rendering to remember)
    solv_prints_relations: bool
    parse: Callable[[str], Relation]
    render_relation: Callable[[Relation], str]
    render_atom: Callable[[str, str | None, str | None], str]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.title

    def __reduce__(self) -> str:
        # Pickled (to a build worker) as a reference to the one instance: the module
        # global named like the title (DEB, RPM).
        return self.title

    # -- names and relations ---------------------------------------------------------

    def spell(self, base: str) -> str:
        """A package.json base name as this format spells it."""
        if base.endswith("-devel"):
            return base[: -len("-devel")] + self.devel_suffix
        return base

    def key_of(self, list_name: str) -> str:
        """The package.json key of one of this format's relation lists."""
        return next(key for key, name in self.relation_keys.items() if name == list_name)

    def field_name(self, list_name: str) -> str:
        return self.field_names.get(list_name, list_name)

    @abc.abstractmethod
    def join_alternatives(self, parts: Sequence[str]) -> str:
        """Rendered alternatives as one relation: ``a | b`` or ``(a or b)``."""

    def render(self, dep: Iterable[PlannedAlternative]) -> str:
        """A planned relation in this format's syntax; system atoms stay as written."""
        return self.join_alternatives(
            [
                req.text
                if req.text is not None
                else self.render_atom(req.name, req.op, req.version)
                for req in dep
            ]
        )

    def parse_field(self, text: str) -> tuple[Relation, ...]:
        """A comma-separated relation field (Depends, Provides, ...). RPM rich
        dependencies could hold commas only inside parentheses, which never happens
        in practice, so a plain split is enough."""
        return tuple(
            self.parse(item.strip()) for item in text.replace("\n", " ").split(",") if item.strip()
        )

    def arch(self, spec: PackageSpec) -> str:
        value: str = getattr(spec, self.arch_attribute)
        return value

    def solv_arch(self, arch: str) -> str:
        return self.solv_arches.get(arch, arch)

    def shown_arch(self, solv_arch: str) -> str:
        """A libsolv architecture name as this format writes it."""
        return self._own_arches.get(solv_arch, solv_arch)

    @cached_property
    def _own_arches(self) -> dict[str, str]:
        return {solv: own for own, solv in self.solv_arches.items()}

    # -- files ---------------------------------------------------------------------------

    @abc.abstractmethod
    def filename(self, info: PackageInfo) -> str:
        """The file name of one package."""

    @abc.abstractmethod
    def write(self, info: PackageInfo, out: Writable, scratch: str | None = None) -> None:
        """Write one package to ``out``; what waits for its header beyond a few MiB
        goes to a temporary file in ``scratch`` (default: the system's temporary
        directory, often a small tmpfs: a build passes a directory beside its OUT)."""

    @abc.abstractmethod
    def maintainer_scripts(
        self, alternatives: list[Alternative], prefix: str, rank: int, siblings: list[str]
    ) -> dict[str, str]:
        """The update-alternatives scripts of a Postinstall package."""

    @abc.abstractmethod
    def read_inventory_package(self, path: Path, kind: str | None, download: int) -> Package:
        """One package file as an inventory (diff) entry: its names, relations, files."""

    @abc.abstractmethod
    def sign_package(self, path: Path, key: str, gnupghome: str | None) -> None:
        """Sign the package file at ``path`` in place with gpg's ``key`` (only when
        :attr:`signs_packages`)."""

    @abc.abstractmethod
    def same_package(self, one: Path, other: Path) -> bool:
        """Whether two package files hold the same package, whatever their signatures."""

    # -- repositories --------------------------------------------------------------------

    @abc.abstractmethod
    def prepare_repository(
        self,
        files: list[InputFile],
        root: Path,
        suite: str,
        epoch: int,
        sign_key: str | None,
        gnupghome: str | None,
        names: RepositoryNames,
    ) -> RepositoryUpdate:
        """Everything adding ``files`` to the repository at ``root`` writes, checked (and
        signed), with nothing written yet; its indexes carry ``names`` where the format
        has a place for them."""

    @abc.abstractmethod
    def pool(self, root: Path) -> Path:
        """Where the repository at ``root`` keeps its package files."""

    @abc.abstractmethod
    def recover_repository(self, root: Path, note: Callable[[str], None]) -> None:
        """Undo what an interrupted run left in the repository at ``root`` beyond partial
        files (which every repository leaves alike); ``note`` tells what it restored."""

    def key_path(self, root: Path) -> Path:
        """Where the repository root ``root`` holds the key that signs this format's
        repository."""
        return root / self.key_file

    def key_bytes(self, key: PublicKey) -> bytes:
        """The public key as this format's package manager reads it."""
        return key.armored if self.armored_key else key.binary

    @abc.abstractmethod
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
        url = f"{base}/{self.pool(Path(self.repo_dir)).as_posix()}/{package_file}"
        return self._install_from_url(base, url, package_file)

    @abc.abstractmethod
    def _install_from_url(self, base: str, url: str, package_file: str) -> dict[str, str]: ...

    @abc.abstractmethod
    def setup_files(self, setup: SetupPackage, key: PublicKey) -> list[tuple[str, bytes]]:
        """(path, contents) of what the repository's setup package installs: the
        sources entry and the signing key where this format's package manager reads
        them."""

    @abc.abstractmethod
    def load_repository(
        self, universe: Universe, suite: str | None, deps: DepIds, keyring: Keyring | None
    ) -> str:
        """Read the repository under ``universe.root`` into its pool, its indexes checked
        (and their signatures, against ``keyring`` when given); its label."""


# printf's format that prints each argument on a line of its own.
_LINES = "%s\\n"
# Where a signed rpm-md repository holds the armored key of the signature beside it
# (repodata/repomd.xml.asc), relative to the repository: where zypper and dnf look for
# a key they were not given, and what the printed setup lines import.
RPM_MD_KEY = "repodata/repomd.xml.key"


def shell_words(*words: str) -> str:
    """One shell command of ``words``, each quoted (shlex.quote) so that it reaches the
    command exactly as written: a printed setup line pasted into a shell never runs or
    expands anything from a URL, path or name in it."""
    return " ".join(shlex.quote(word) for word in words)


class _Deb(PackageFormat):
    def join_alternatives(self, parts: Sequence[str]) -> str:
        return " | ".join(parts)

    def filename(self, info: PackageInfo) -> str:
        from gfxpack.formats import deb

        return deb.filename(info)

    def write(self, info: PackageInfo, out: Writable, scratch: str | None = None) -> None:
        from gfxpack.formats import deb

        deb.write(info, out, scratch)

    def maintainer_scripts(
        self, alternatives: list[Alternative], prefix: str, rank: int, siblings: list[str]
    ) -> dict[str, str]:
        from gfxpack.formats import scripts

        return scripts.deb_scripts(alternatives, prefix, rank, siblings)

    def read_inventory_package(self, path: Path, kind: str | None, download: int) -> Package:
        from gfxpack import inventory

        return inventory.read_deb_package(path, kind, download)

    def prepare_repository(
        self,
        files: list[InputFile],
        root: Path,
        suite: str,
        epoch: int,
        sign_key: str | None,
        gnupghome: str | None,
        names: RepositoryNames,
    ) -> RepositoryUpdate:
        from gfxpack.repo import apt

        return apt.prepare(
            files, root, suite, epoch, sign_key, gnupghome, names.origin, names.label
        )

    def pool(self, root: Path) -> Path:
        from gfxpack.repo import apt

        return root / "pool" / apt.COMPONENT

    def recover_repository(self, root: Path, note: Callable[[str], None]) -> None:
        from gfxpack.repo import apt

        apt.recover(root)

    def sign_package(self, path: Path, key: str, gnupghome: str | None) -> None:
        raise GfxpackError(f"{path}: DEB packages are not signed (apt checks the repository)")

    def same_package(self, one: Path, other: Path) -> bool:
        return filecmp.cmp(one, other, shallow=False)

    def setup_lines(
        self,
        base: str,
        served: bool,
        root: Path,
        suite: str,
        key: Path | None,
        names: RepositoryNames,
    ) -> dict[str, str]:
        commands = []
        trust = "trusted=yes"
        if key is not None:
            # Where apt (whose download sandbox may not read OUT) finds the keyring:
            # where the setup package installs it.
            keyring = f"/usr/share/keyrings/{names.repo_id}-archive-keyring.gpg"
            if served:
                commands.append(shell_words("curl", "-fsSLo", keyring, f"{base}/{self.key_file}"))
            else:
                commands.append(shell_words("cp", str(key.resolve()), keyring))
            trust = f"signed-by={keyring}"
        # printf, not echo: some shells' echo reads backslashes in its argument.
        entry = shell_words("printf", _LINES, f"deb [{trust}] {base}/{self.repo_dir} {suite} main")
        sources = f"/etc/apt/sources.list.d/{names.repo_id}.list"
        commands.append(f"{entry} | {shell_words('tee', sources)}")
        return {self.client: " && ".join([*commands, "apt-get update"])}

    def _install_from_url(self, base: str, url: str, package_file: str) -> dict[str, str]:
        # apt-get installs a local file only: fetched first, into a new directory (as
        # root, never a name in /tmp that another user could have made first).
        local = f'"$d"/{shlex.quote(package_file)}'
        return {
            self.client: (
                f"d=$(mktemp -d) && curl -fsSLo {local} {shlex.quote(url)} && "
                f"apt-get install -y {local} && apt-get update"
            )
        }

    def setup_files(self, setup: SetupPackage, key: PublicKey) -> list[tuple[str, bytes]]:
        return [
            (f"/etc/apt/sources.list.d/{setup.ident}.sources", setup.sources_text().encode()),
            (setup.keyring_path, self.key_bytes(key)),
        ]

    def load_repository(
        self, universe: Universe, suite: str | None, deps: DepIds, keyring: Keyring | None
    ) -> str:
        from gfxpack.verify import universe as loader

        return loader.load_apt(universe, suite, deps, keyring)


class _Rpm(PackageFormat):
    def join_alternatives(self, parts: Sequence[str]) -> str:
        return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"

    def filename(self, info: PackageInfo) -> str:
        from gfxpack.formats import rpm

        return rpm.filename(info)

    def write(self, info: PackageInfo, out: Writable, scratch: str | None = None) -> None:
        from gfxpack.formats import rpm

        rpm.write(info, out, scratch)

    def maintainer_scripts(
        self, alternatives: list[Alternative], prefix: str, rank: int, siblings: list[str]
    ) -> dict[str, str]:
        from gfxpack.formats import scripts

        return scripts.rpm_scripts(alternatives, prefix, rank, siblings)

    def read_inventory_package(self, path: Path, kind: str | None, download: int) -> Package:
        from gfxpack import inventory

        return inventory.read_rpm_package(path, kind, download)

    def prepare_repository(
        self,
        files: list[InputFile],
        root: Path,
        suite: str,
        epoch: int,
        sign_key: str | None,
        gnupghome: str | None,
        names: RepositoryNames,
    ) -> RepositoryUpdate:
        from gfxpack.repo import rpmmd

        return rpmmd.prepare(files, root, epoch, sign_key, gnupghome)

    def pool(self, root: Path) -> Path:
        return root / "Packages"

    def recover_repository(self, root: Path, note: Callable[[str], None]) -> None:
        from gfxpack.repo import rpmmd

        rpmmd.recover(root, note)

    def sign_package(self, path: Path, key: str, gnupghome: str | None) -> None:
        from gfxpack.formats import rpmsign

        rpmsign.sign_rpm(path, key, gnupghome)

    def same_package(self, one: Path, other: Path) -> bool:
        from gfxpack.formats import rpmsign

        return rpmsign.same_contents(one, other)

    def setup_lines(
        self,
        base: str,
        served: bool,
        root: Path,
        suite: str,
        key: Path | None,
        names: RepositoryNames,
    ) -> dict[str, str]:
        key_url = f"{base}/{self.repo_dir}/{RPM_MD_KEY}" if key is not None else None
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
            source = key_url if served else str((root / self.repo_dir / RPM_MD_KEY).resolve())
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
            f"baseurl={base}/{self.repo_dir}",
            *extra,
            *checks,
        ]
        return shell_words("printf", _LINES, *section)

    def _install_from_url(self, base: str, url: str, package_file: str) -> dict[str, str]:
        # zypper checks the setup package's signature (dnf does not, for a package given
        # as a file or URL): with the key the repository publishes.
        key_url = f"{base}/{self.repo_dir}/{RPM_MD_KEY}"
        return {
            "dnf": shell_words("dnf", "install", "-y", url),
            "zypper": (
                f"{shell_words('rpm', '--import', key_url)} && "
                f"{shell_words('zypper', 'install', '-y', url)}"
            ),
        }

    def setup_files(self, setup: SetupPackage, key: PublicKey) -> list[tuple[str, bytes]]:
        repo = setup.repo_text().encode()
        return [
            (f"/etc/yum.repos.d/{setup.ident}.repo", repo),  # dnf
            (f"/etc/zypp/repos.d/{setup.ident}.repo", repo),  # zypper
            (setup.rpm_key_path, self.key_bytes(key)),
        ]

    def load_repository(
        self, universe: Universe, suite: str | None, deps: DepIds, keyring: Keyring | None
    ) -> str:
        from gfxpack.verify import universe as loader

        loader.load_rpmmd(universe, keyring)
        return universe.label


DEB: PackageFormat = _Deb(
    name="deb",
    title="DEB",
    extension=".deb",
    devel_suffix="-dev",
    relation_keys={
        "DEBDepends": "depends",
        "DEBRecommends": "recommends",
        "DEBSuggests": "suggests",
        "Provides": "provides",
        "Conflicts": "conflicts",
        "Replaces": "replaces",
    },
    field_names={},
    arch_attribute="architecture",
    solv_arches={"amd64": "x86_64", "all": "noarch", "arm64": "aarch64", "i386": "i686"},
    repo_dir="apt",
    client="apt",
    noarch="all",
    key_file="gfxpack-archive-keyring.gpg",
    armored_key=False,
    signs_packages=False,
    repo_marker="dists",
    file_lists="Contents",
    solv_prints_relations=False,
    parse=relations.parse_deb,
    render_relation=relations.render_deb,
    render_atom=relations.deb_atom,
)
RPM: PackageFormat = _Rpm(
    name="rpm",
    title="RPM",
    extension=".rpm",
    devel_suffix="-devel",
    relation_keys={
        "RPMRequires": "depends",
        "RPMRecommends": "recommends",
        "RPMSuggests": "suggests",
        "Provides": "provides",
        "Conflicts": "conflicts",
        "Obsoletes": "replaces",
    },
    field_names={"depends": "requires", "replaces": "obsoletes"},
    arch_attribute="build_arch",
    solv_arches={},
    repo_dir="rpm",
    client="dnf",
    noarch="noarch",
    key_file="rpm/RPM-GPG-KEY-gfxpack",
    armored_key=True,
    signs_packages=True,
    repo_marker="repodata",
    file_lists="filelists",
    solv_prints_relations=True,
    parse=relations.parse_rpm,
    render_relation=relations.render_rpm,
    render_atom=relations.rpm_atom,
)
FORMATS: tuple[PackageFormat, ...] = (DEB, RPM)


def format_named(name: str) -> PackageFormat:
    """The format a user named (deb or rpm)."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise UnknownFormat(f"format {name!r}: expected one of {', '.join(f.name for f in FORMATS)}")


def format_of_file(name: str) -> PackageFormat:
    """The format of a package file, by its extension."""
    for fmt in FORMATS:
        if name.endswith(fmt.extension):
            return fmt
    raise UnknownFormat(
        f"{name}: not a package file (expected {' or '.join(f.extension for f in FORMATS)})"
    )
