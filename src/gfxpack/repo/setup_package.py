"""The repository setup package: one small package per format that configures the
package manager for a published repository and installs its signing key.

    deb:  /etc/apt/sources.list.d/ID.sources (deb822, Signed-By: the keyring)
          /usr/share/keyrings/ID-archive-keyring.gpg
    rpm:  /etc/yum.repos.d/ID.repo and /etc/zypp/repos.d/ID.repo
          (gpgcheck=1, repo_gpgcheck=1, gpgkey= the installed key)
          /etc/pki/rpm-gpg/RPM-GPG-KEY-ID

where ID is the repository id (--repo-id), by default the package's own name.

Installing it and then the wanted package is the whole user story. The packages
are written into a directory with an ``index.json``, as a build's are, and
published with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from gfxpack import build_index
from gfxpack._io import atomic_write
from gfxpack.build_index import BuildIndex, IndexedFile
from gfxpack.formats import PackageInfo
from gfxpack.formats.package_format import PackageFormat
from gfxpack.formats.payload import Entry, EntryKind
from gfxpack.repo.apt import check_suite
from gfxpack.repo.backends import backend
from gfxpack.repo.debfile import PACKAGE_NAME, VERSION
from gfxpack.repo.inputs import RepoError, digest
from gfxpack.repo.names import DEFAULT_NAMES, REPO_ID, REPO_NAME, RepositoryNames, check_name
from gfxpack.repo.package_signatures import packages_unchecked
from gfxpack.repo.rpmfile import RPM_NAME, RPM_VERSION
from gfxpack.repo.trust import PublicKey

# What a base URL may hold as it is: RFC 3986's unreserved characters, percent-escapes
# and what a scheme, user, host, port and path are spelled with. Anything else is
# percent-encoded: quotes, '$', ';', spaces and control characters mean something to
# a shell, to apt's sources.list or to a .repo file (whose baseurl ',' splits), and
# '?' or '#' have no place in a repository root, below which apt and dnf add paths.
_URL_CHARACTERS = re.compile(r"(?:[A-Za-z0-9._~/:@+=-]|%[0-9A-Fa-f]{2})*\Z")
_SCHEMES = ("http", "https", "file")
# Longer names or versions make file names (NAME_VERSION-1_all.deb) longer than a
# filesystem allows.
_LONGEST = 100


def _url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as the root of a published repository, or None."""
    scheme, separator, _ = url.partition("://")
    if scheme not in _SCHEMES or not separator:
        return "not one of those schemes"
    if not _URL_CHARACTERS.match(url):
        return (
            "characters other than letters, digits and -._~/:@+= must be "
            "percent-encoded (%20 for a space)"
        )
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number below 65536
    except ValueError:
        return "its port is not a number from 0 to 65535"
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            return "a file:// URL names a local path (file:///srv/repo), no host"
    elif not parts.hostname:
        return f"a {scheme}:// URL needs a host"
    return None


def check_base_url(url: str) -> None:
    """``url`` can be the repository root the printed setup lines and the setup package
    name; otherwise one error saying why."""
    problem = _url_problem(url)
    if problem:
        raise RepoError(
            f"--base-url {url!r}: an http://, https:// or file:// URL of the published "
            f"repository root is expected ({problem})"
        )


def check_setup_package(name: str, version: str) -> None:
    """``name`` and ``version`` make a setup package both formats can carry: Debian's and
    RPM's package name and version grammars (what gfxpack repo checks every package
    against), and no '+' in the name, which also names the apt sources file (apt ignores
    a file in sources.list.d with one)."""
    if not (
        len(name) <= _LONGEST
        and PACKAGE_NAME.match(name)
        and RPM_NAME.match(name)
        and "+" not in name
    ):
        raise RepoError(
            f"--setup-package {name!r}: a package name of lower-case letters, digits, "
            f"'.' and '-', starting with a letter or digit, at most {_LONGEST} characters, "
            "is expected"
        )
    if not (len(version) <= _LONGEST and VERSION.match(version) and RPM_VERSION.match(version)):
        raise RepoError(
            f"--setup-version {version!r}: a version of letters, digits, '.', '+' and '~', "
            f"starting with a digit, at most {_LONGEST} characters, is expected (such as 1.1)"
        )


@dataclass(frozen=True, slots=True)
class SetupPackage:
    name: str  # the package name
    base_url: str  # where OUT is served: BASE/apt and BASE/rpm
    suite: str
    version: str = "1.0"
    repo_id: str | None = None  # what names the files it installs; None: ``name``
    repo_name: str | None = None  # the name dnf and zypper show; None: the id
    # gpgcheck=1: dnf and zypper check each package's signature; False for a repository
    # that takes unsigned packages (repo/package_signatures.py)
    package_gpgcheck: bool = True

    def check(self) -> None:
        """Every value is one a package manager reads as given; otherwise one error
        naming the option."""
        check_setup_package(self.name, self.version)
        check_base_url(self.base_url)
        check_suite(self.suite)
        check_name("--repo-id", self.ident, REPO_ID)
        check_name("--repo-name", self.title, REPO_NAME)

    @property
    def ident(self) -> str:
        """The repository id: the .repo section and the installed files' names."""
        return self.repo_id if self.repo_id is not None else self.name

    @property
    def title(self) -> str:
        return self.repo_name if self.repo_name is not None else self.ident

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/")

    @property
    def keyring_path(self) -> str:
        return f"/usr/share/keyrings/{self.ident}-archive-keyring.gpg"

    @property
    def rpm_key_path(self) -> str:
        return f"/etc/pki/rpm-gpg/RPM-GPG-KEY-{self.ident}"

    def sources_text(self) -> str:
        """The deb822 sources entry apt reads from /etc/apt/sources.list.d/."""
        return (
            "Types: deb\n"
            f"URIs: {self.url}/apt\n"
            f"Suites: {self.suite}\n"
            "Components: main\n"
            f"Signed-By: {self.keyring_path}\n"
        )

    def repo_text(self) -> str:
        """The .repo section dnf (/etc/yum.repos.d) and zypper (/etc/zypp/repos.d) read."""
        return (
            f"[{self.ident}]\n"
            f"name={self.title}\n"
            f"baseurl={self.url}/rpm\n"
            "type=rpm-md\n"
            "enabled=1\n"
            f"gpgcheck={int(self.package_gpgcheck)}\n"
            "repo_gpgcheck=1\n"
            f"gpgkey=file://{self.rpm_key_path}\n"
        )

    def info(self, fmt: PackageFormat, key: PublicKey, mtime: int) -> PackageInfo:
        files = [
            Entry(path, EntryKind.FILE, 0o644, size=len(data), data=data, mtime=mtime)
            for path, data in backend(fmt).setup_files(self, key)
        ]
        return PackageInfo(
            name=self.name,
            version=self.version,
            release="1",
            arch=fmt.noarch,
            summary="Package repository configuration and its signing key",
            description=(
                "Configures the package manager to install from\n"
                f"{self.url}\n"
                "and installs the OpenPGP key that signs that repository."
            ),
            homepage=self.url,
            maintainer="gfxpack <gfxpack@localhost>",
            license="MIT",
            group="System Environment/Base",
            section="admin",
            priority="optional",
            # Files only: the directories are the system's (dpkg's writer adds them to
            # the archive; an RPM must not own /etc).
            entries=tuple(sorted(files, key=lambda e: e.path)),
            prefix="/",
            mtime=mtime,
        )


def write_setup_packages(
    setup: SetupPackage,
    key: PublicKey,
    formats: Iterable[PackageFormat],
    out: Path,
    mtime: int,
) -> dict[PackageFormat, Path]:
    """Write the setup package of each of ``formats`` into ``out``; format -> its file."""
    setup.check()
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for fmt in formats:
        info = setup.info(fmt, key, mtime)
        path = out / fmt.filename(info)
        with atomic_write(path) as file:
            fmt.write(info, file)
        written[fmt] = path
    return written


def write_index(out: Path, files: Iterable[Path]) -> None:
    """An index.json for ``files`` (in ``out``), as a build writes: gfxpack repo's input."""
    listed = []
    for path in files:
        size, sha256 = digest(path)
        listed.append(IndexedFile(file=path.name, size=size, sha256=sha256))
    build_index.write(out, BuildIndex(files=tuple(listed)))


def setup_lines(
    out: Path,
    base_url: str | None,
    suite: str,
    keys: Mapping[PackageFormat, Path],
    setup_files: Mapping[PackageFormat, Path],
    formats: Iterable[PackageFormat],
    names: RepositoryNames = DEFAULT_NAMES,
    package_gpgcheck: bool | None = None,
) -> dict[PackageFormat, dict[str, str]]:
    """format -> package manager -> one shell command line that makes the repository at
    ``out`` usable on a machine (run as root): the install of the setup package in
    ``setup_files`` when there is one, else the sources entry written with the
    published key (``keys``), named by ``names``, checking each package's signature
    unless ``package_gpgcheck`` is False (None: unless the repository took unsigned
    packages, repo/package_signatures.py). Every value in a line is checked
    (:func:`check_base_url`, :meth:`RepositoryNames.check`) and quoted."""
    if base_url is not None:
        check_base_url(base_url)
    check_suite(suite)
    names.check()
    # OUT as a URL: percent-encoded, so that a space in it is no field separator to apt.
    base = base_url.rstrip("/") if base_url else out.resolve().as_uri()
    if package_gpgcheck is None:
        package_gpgcheck = not packages_unchecked(out)
    lines = {}
    for fmt in formats:
        if fmt in setup_files:
            lines[fmt] = backend(fmt).setup_package_lines(base, setup_files[fmt].name)
        else:
            lines[fmt] = backend(fmt).setup_lines(
                base,
                bool(base_url),
                out,
                suite,
                keys.get(fmt),
                names,
                package_gpgcheck=package_gpgcheck,
            )
    return lines
