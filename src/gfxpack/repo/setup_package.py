"""The repository setup package: one small package per format that configures the
package manager for a published repository and installs its signing key.

    deb:  /etc/apt/sources.list.d/NAME.sources (deb822, Signed-By: the keyring)
          /usr/share/keyrings/NAME-archive-keyring.gpg
    rpm:  /etc/yum.repos.d/NAME.repo and /etc/zypp/repos.d/NAME.repo
          (gpgcheck=1, repo_gpgcheck=1, gpgkey= the installed key)
          /etc/pki/rpm-gpg/RPM-GPG-KEY-NAME

Installing it and then the wanted package is the whole user story. The packages
are written into a directory with an ``index.json``, as a build's are, and
published with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gfxpack._io import atomic_write, write_atomically
from gfxpack.formats import PackageInfo
from gfxpack.formats.package_format import PackageFormat
from gfxpack.formats.payload import Entry, EntryKind
from gfxpack.outdir import INDEX
from gfxpack.repo.inputs import RepoError, digest
from gfxpack.repo.trust import PublicKey

_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]*")
_URL = re.compile(r"(https?|file)://[^\s\[\]]+")


def check_base_url(url: str) -> None:
    if not _URL.fullmatch(url):
        raise RepoError(
            f"--base-url {url!r}: an http://, https:// or file:// URL of the published "
            "repository root is expected"
        )


@dataclass(frozen=True, slots=True)
class SetupPackage:
    name: str  # the package name, also the repository id and the files' names
    base_url: str  # where OUT is served: BASE/apt and BASE/rpm
    suite: str
    version: str = "1.0"

    def check(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise RepoError(
                f"--setup-package {self.name!r}: a package name of lower-case letters, "
                "digits and +.- is expected"
            )
        check_base_url(self.base_url)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/")

    @property
    def keyring_path(self) -> str:
        return f"/usr/share/keyrings/{self.name}-archive-keyring.gpg"

    @property
    def rpm_key_path(self) -> str:
        return f"/etc/pki/rpm-gpg/RPM-GPG-KEY-{self.name}"

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
            f"[{self.name}]\n"
            f"name={self.name}\n"
            f"baseurl={self.url}/rpm\n"
            "type=rpm-md\n"
            "enabled=1\n"
            "gpgcheck=1\n"
            "repo_gpgcheck=1\n"
            f"gpgkey=file://{self.rpm_key_path}\n"
        )

    def info(self, fmt: PackageFormat, key: PublicKey, mtime: int) -> PackageInfo:
        files = [
            Entry(path, EntryKind.FILE, 0o644, size=len(data), data=data, mtime=mtime)
            for path, data in fmt.setup_files(self, key)
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
        listed.append({"file": path.name, "size": size, "sha256": sha256})
    write_atomically(out / INDEX, (json.dumps({"files": listed}, indent=2) + "\n").encode())


def setup_lines(
    out: Path,
    base_url: str | None,
    suite: str,
    keys: Mapping[PackageFormat, Path],
    setup: SetupPackage | None,
    setup_files: Mapping[PackageFormat, Path],
    formats: Iterable[PackageFormat],
) -> dict[PackageFormat, str]:
    """format -> one shell command line that makes the repository at ``out`` usable on a
    machine (run as root): the setup package's install when there is one, else the
    sources entry written with the published key (``keys``)."""
    base = base_url.rstrip("/") if base_url else f"file://{out.resolve()}"
    lines = {}
    for fmt in formats:
        if setup is not None and fmt in setup_files:
            lines[fmt] = fmt.setup_package_line(base, setup_files[fmt].name)
        else:
            name = setup.name if setup else "gfxpack"
            lines[fmt] = fmt.setup_line(base, bool(base_url), out, suite, keys.get(fmt), name)
    return lines
