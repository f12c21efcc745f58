"""Trying an install: packages of a repository installed into a throwaway root by the
real client (apt-get, dnf or zypper), then a report of what is there.

``gfxpack try-install`` is :func:`try_install`. In order:

1. The repository is read as ``gfxpack verify`` reads it (its indexes checked against
   Release or repomd.xml), and every requested name must be a package of it or
   provided by one: a typo is one error, with suggestions, before any client runs.
2. The root starts as a machine with the system packages the release depends on
   installed. For each package of the system list (``--system``; by default the
   bundled Debian 12 or Enterprise Linux 9 list that ``gfxpack verify`` assumes) an
   empty *stand-in* is written by gfxpack's own writer: the system package's name,
   version, architecture, Provides and Depends, and no files. dpkg or rpm installs
   the stand-ins first, so the client resolves the release against them as on a real
   machine. :func:`stand_ins` writes them; the report lists them apart.
3. The client installs the packages from the repository, served over HTTP on
   127.0.0.1 (:func:`serve`), with its own configuration, state and cache in a scratch
   directory: nothing of the machine's package configuration is read or changed.
   Signatures are not checked here (``gfxpack verify --keyring`` checks them).

   - apt: apt-get with dpkg ``--root``; maintainer scripts run chrootless with
     ``DPKG_ROOT`` set, which the DEB scripts honour.
   - dnf: ``dnf --installroot``; zypper: ``zypper --root``. rpm runs scriptlets
     chrooted into the root, so the root gets this machine's ``/bin/sh``,
     ``update-alternatives`` and ``ldconfig`` with the libraries they load
     (:func:`scriptlet_tools`).
4. The report: every package installed (stand-ins aside) with the bytes of the regular
   files it owns in the root, the alternatives its scripts registered, and every
   package or file of another GPU arch. A file is of an arch when its path names a
   processor (``blas_lib_gfx1100.kpack``, ``.../arch_content/<provider>/gfx1100/...``,
   ``TensileLibrary_gfx1100-xnack+.co``); the install is held to the archs asked for
   (``--arch``), by default the arch suffixes of the requested packages
   (``amdrocm-core8.2-gfx942``: gfx942). Code for a generic target is of every
   processor it runs on (``gfx9-4-generic``: gfx942 and gfx950).

One module, past 500 lines, because its sections (serving, the clients' configuration,
stand-ins, the root, the report) are the four steps above, in order, sharing one error
(:class:`TrialError`) and one way of running and asking for the tools.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack.amdgpu import (
    BY_NAME,
    GENERIC,
    GENERIC_PROCESSORS,
    PROCESSORS,
    processor_problem,
    sort_targets,
)
from gfxpack.errors import GfxpackError
from gfxpack.formats import DEB, RPM, PackageFormat, PackageInfo
from gfxpack.repo.debfile import ARCHITECTURE, PACKAGE_NAME, VERSION, parse_stanzas
from gfxpack.repo.names import COMPONENT, SUITE
from gfxpack.repo.rpmfile import RPM_ARCH, RPM_NAME, RPM_VERSION
from gfxpack.verify.resolution import select
from gfxpack.verify.rules import arch_of
from gfxpack.verify.system import SystemPackage, read_system
from gfxpack.verify.universe import load, locate, pick_suite

# A root try-install made holds this file: only such a root is replaced by a later run.
MARKER = ".gfxpack-try-install"
# The machine the stand-ins and the clients pretend to be (the bundled lists' arch).
APT_ARCHITECTURE = "amd64"
RPM_RELEASEVER = "9"


class TrialError(GfxpackError):
    """The install could not be tried, or the client failed; the message says which."""


@dataclass(frozen=True, slots=True)
class Client:
    name: str  # apt / dnf / zypper: the --client value
    command: str  # what runs
    fmt: PackageFormat
    # the other tools it needs besides its command, each with the Debian package of it
    tools: tuple[tuple[str, str], ...]


CLIENTS = {
    "apt": Client("apt", "apt-get", DEB, (("dpkg", "dpkg"), ("update-alternatives", "dpkg"))),
    "dnf": Client("dnf", "dnf", RPM, (("rpm", "rpm"), ("ldd", "libc-bin"))),
    "zypper": Client("zypper", "zypper", RPM, (("rpm", "rpm"), ("ldd", "libc-bin"))),
}
# The Debian package of each client's command, for the hint when it is missing.
PROVIDED_BY = {"apt-get": "apt", "dnf": "dnf", "zypper": "zypper"}


@dataclass(frozen=True, slots=True)
class StandIn:
    """An empty package in the root in place of the system package of its name."""

    name: str
    version: str
    provides: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "provides": list(self.provides)}


@dataclass(frozen=True, slots=True)
class Installed:
    name: str
    version: str
    size: int  # bytes of the regular files it owns in the root
    files: int  # how many regular files those are

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "size": self.size, "files": self.files}


@dataclass(frozen=True, slots=True)
class ForeignFile:
    """A file or symlink of ``arch``, not one the install is held to, from ``package``."""

    path: str
    package: str
    arch: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "package": self.package, "arch": self.arch}


@dataclass
class Trial:
    """What one tried install did."""

    client: str
    repository: str
    root: str
    kept: bool  # whether the root is still there
    requested: list[str]
    archs: list[str]  # the archs it is held to (none: not judged)
    system: str  # the system list the stand-ins stand for
    stand_ins: list[StandIn]
    packages: list[Installed]
    # link name under /etc/alternatives -> what it points at (the scripts' registrations)
    alternatives: dict[str, str] = field(default_factory=dict)
    foreign_packages: list[str] = field(default_factory=list)
    foreign_files: list[ForeignFile] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.foreign_packages and not self.foreign_files

    @property
    def total_size(self) -> int:
        return sum(p.size for p in self.packages)

    def other_archs(self) -> list[str]:
        """The archs of what should not be there, in processor order."""
        found = {f.arch for f in self.foreign_files}
        found |= {a for name in self.foreign_packages if (a := arch_of(name))}
        return sort_targets(found)

    def failure(self) -> str:
        """What went wrong, in one line (for a trial that is not ok)."""
        packages, files = len(self.foreign_packages), len(self.foreign_files)
        return (
            f"installing {' '.join(self.requested)} brought {packages} package"
            f"{'s' * (packages != 1)} and {files} file{'s' * (files != 1)} of another arch "
            f"than {', '.join(self.archs)} ({', '.join(self.other_archs())})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "format": CLIENTS[self.client].fmt.name,
            "repository": self.repository,
            "root": self.root,
            "kept": self.kept,
            "requested": self.requested,
            "archs": self.archs,
            "system": self.system,
            "stand_ins": [s.as_dict() for s in self.stand_ins],
            "packages": [p.as_dict() for p in self.packages],
            "total_size": self.total_size,
            "alternatives": self.alternatives,
            "other_arch": {
                "packages": self.foreign_packages,
                "files": [f.as_dict() for f in self.foreign_files],
            },
            "ok": self.ok,
        }


# --- serving a repository -----------------------------------------------------------------


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """An HTTP server for ``directory`` on a free port of 127.0.0.1, in a thread of this
    process; yields its URL and stops it on the way out."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# --- the clients' own configuration -------------------------------------------------------

# dpkg's options for a throwaway root: maintainer scripts run from this machine with
# DPKG_ROOT set (chrootless), and no syncs (which make an install survive a power cut).
DPKG_OPTIONS = ("--force-script-chrootless", "--force-unsafe-io")
DPKG_DIRECTORIES = (
    "var/lib/dpkg/info",
    "var/lib/dpkg/updates",
    "var/lib/dpkg/alternatives",
    "etc/alternatives",
)


def dpkg_database(root: Path) -> Path:
    """An empty dpkg database under ``root`` (for ``dpkg --root``); its status file."""
    for directory in DPKG_DIRECTORIES:
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "var/lib/dpkg/available").touch()
    status = root / "var/lib/dpkg/status"
    status.touch()
    return status


def apt_options(home: Path, status: Path, dpkg_root: Path | None = None) -> list[str]:
    """``-o`` options for apt-get with its own sources list (``home/sources.list``), keys,
    preferences, state, cache and dpkg ``status``: nothing of the machine's apt sources,
    keys or state is read or changed. The directories are made under ``home``. With
    ``dpkg_root``, dpkg installs into it and runs maintainer scripts chrootless."""
    for directory in (
        "state/lists/partial",
        "cache/archives/partial",
        "log",
        "sourceparts",
        "trustedparts",
        "preferencesparts",
    ):
        (home / directory).mkdir(parents=True, exist_ok=True)
    options: dict[str, str | Path] = {
        "Dir::Etc::sourcelist": home / "sources.list",
        "Dir::Etc::sourceparts": home / "sourceparts",
        "Dir::Etc::trusted": home / "trusted.gpg",
        "Dir::Etc::trustedparts": home / "trustedparts",
        "Dir::Etc::preferencesparts": home / "preferencesparts",
        "Dir::State": home / "state",
        "Dir::State::status": status,
        "Dir::Cache": home / "cache",
        "Dir::Log": home / "log",
        "APT::Architecture": APT_ARCHITECTURE,
        "APT::Sandbox::User": "root",
        "Acquire::Languages": "none",
        "Acquire::http::Proxy": "DIRECT",
        "Debug::NoLocking": "1",
    }
    flags = [f"-o{key}={value}" for key, value in options.items()]
    if dpkg_root is not None:
        flags += [f"-oDPkg::Options::={o}" for o in (f"--root={dpkg_root}", *DPKG_OPTIONS)]
    return flags


def repo_section(name: str, url: str) -> str:
    """A dnf/zypper .repo section for an unsigned repository (signatures are verify's)."""
    return (
        f"[{name}]\nname={name}\nbaseurl={url}\nenabled=1\nmetadata_expire=0\n"
        "gpgcheck=0\nrepo_gpgcheck=0\n"
    )


def dnf_options(home: Path, root: Path) -> list[str]:
    """dnf's options for its own configuration, repository files (``home/repos.d``), cache
    and log, installing into ``root``."""
    for directory in ("repos.d", "cache", "log"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    conf = home / "dnf.conf"
    conf.write_text("[main]\nplugins=False\n", encoding="utf-8")
    return [
        *("-c", str(conf), "--installroot", str(root)),
        f"--setopt=reposdir={home / 'repos.d'}",
        f"--setopt=cachedir={home / 'cache'}",
        f"--setopt=logdir={home / 'log'}",
        f"--releasever={RPM_RELEASEVER}",
        "--disableplugin=*",
        "-y",
    ]


def zypper_options(home: Path, root: Path) -> list[str]:
    """zypper's options for its own repository files (``home/repos.d``) and caches,
    installing into ``root``."""
    for directory in ("repos.d", "cache"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    return [
        *("--non-interactive", "--root", str(root)),
        *("--reposd-dir", str(home / "repos.d"), "--cache-dir", str(home / "cache")),
    ]


# What rpm's scriptlets run, copied from this machine into the root they run chrooted in:
# where to find each here, and where it goes there.
SCRIPTLET_TOOLS = (
    (("dash", "sh"), "bin/sh"),
    (("update-alternatives",), "usr/sbin/update-alternatives"),
    (("ldconfig",), "sbin/ldconfig"),
)
# update-alternatives' state and log, /opt (which the filesystem package owns), scratch
SCRIPTLET_DIRECTORIES = (
    "etc/alternatives",
    "var/lib/dpkg/alternatives",
    "var/lib/alternatives",
    "var/log",
    "var/tmp",
    "tmp",
    "opt",
)


def scriptlet_sources() -> list[tuple[str, str]]:
    """(this machine's path, the path in the root) of each tool rpm's scriptlets run;
    one missing is an error naming it."""
    found = []
    for names, target in SCRIPTLET_TOOLS:
        source = next((path for name in names if (path := _which(name))), None)
        if source is None:
            tools = ", ".join(names[0] for names, _ in SCRIPTLET_TOOLS)
            raise TrialError(
                f"{names[0]} not found: rpm runs the scriptlets with this machine's {tools} "
                f"(and ldd to find their libraries); install it with {_installer()} "
                f"{_SCRIPTLET_PACKAGES[names[0]]}"
            )
        found.append((source, target))
    return found


# The Debian package of each tool, for the hint when it is missing.
_SCRIPTLET_PACKAGES = {"dash": "dash", "update-alternatives": "dpkg", "ldconfig": "libc-bin"}


def scriptlet_tools(root: Path) -> list[str]:
    """Copy a shell, update-alternatives and ldconfig (and the libraries they load) from
    this machine into ``root``, with the directories they keep their state in, so that
    rpm can run scriptlets chrooted into it; the tools copied."""
    copied = []
    for source, target in scriptlet_sources():
        for path in (source, *_libraries(source)):
            destination = root / (target if path == source else path.lstrip("/"))
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.realpath(path), destination)
        copied.append(source)
    for directory in SCRIPTLET_DIRECTORIES:
        (root / directory).mkdir(parents=True, exist_ok=True)
    return copied


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def _libraries(binary: str) -> list[str]:
    """The shared libraries ldd says ``binary`` loads, the dynamic loader included."""
    result = subprocess.run(
        ["ldd", binary], capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
    )
    found = []
    for line in result.stdout.splitlines():
        words = line.split()
        path = words[2] if "=>" in words and len(words) > 2 else words[0] if words else ""
        if path.startswith("/"):
            found.append(path)
    return found


# --- stand-ins ----------------------------------------------------------------------------

# What the package managers accept as a package's name, version and architecture.
_GRAMMARS = {
    DEB: (PACKAGE_NAME, VERSION, VERSION, ARCHITECTURE),
    RPM: (RPM_NAME, RPM_VERSION, RPM_VERSION, RPM_ARCH),
}


def stand_ins(
    fmt: PackageFormat, packages: Sequence[SystemPackage], out: Path, label: str = "system list"
) -> list[Path]:
    """Write an empty package of ``fmt`` into ``out`` for each system package: its name,
    version, architecture, Provides and Depends, no files; the files written."""
    return _write_stand_ins(fmt, _stand_in_infos(fmt, packages, label), out)


def _stand_in_infos(
    fmt: PackageFormat, packages: Sequence[SystemPackage], label: str
) -> list[PackageInfo]:
    return [_stand_in_info(fmt, package, label) for package in _unique(packages)]


def _unique(packages: Sequence[SystemPackage]) -> list[SystemPackage]:
    """The first package of each name: one a dpkg status lists for two architectures
    (multiarch) stands in once."""
    first: dict[str, SystemPackage] = {}
    for package in packages:
        first.setdefault(package.name, package)
    return list(first.values())


def _write_stand_ins(fmt: PackageFormat, infos: Sequence[PackageInfo], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for info in infos:
        path = out / fmt.filename(info)
        with open(path, "xb") as file:
            fmt.write(info, file)
        written.append(path)
    return written


def _stand_in_info(fmt: PackageFormat, package: SystemPackage, label: str) -> PackageInfo:
    # Without a revision (Debian) or release (RPM), V is written V-0: dpkg reads a missing
    # revision as 0, and rpm compares releases only when both sides have one.
    version, _, release = package.version.rpartition("-")
    if not version:
        version, release = package.version, "0"
    arch = fmt.noarch if package.arch in ("all", "noarch") else package.arch
    name_ok, version_ok, release_ok, arch_ok = _GRAMMARS[fmt]
    for what, value, grammar in (
        ("name", package.name, name_ok),
        ("version", version, version_ok),
        ("release", release, release_ok),
        ("architecture", arch, arch_ok),
    ):
        if not grammar.match(value):
            raise TrialError(
                f"{label}: package {package.name!r}: {what} {value!r} is not one "
                f"{'dpkg' if fmt is DEB else 'rpm'} accepts, so no stand-in can be made for it"
            )
    return PackageInfo(
        name=package.name,
        version=version,
        release=release,
        arch=arch,
        summary=f"stand-in for the system package {package.name} (gfxpack try-install)",
        description="An empty package in place of the system package of its name, so that "
        "packages depending on it install into a throwaway root.",
        maintainer="gfxpack try-install <try-install@localhost>",
        license="MIT",
        provides=tuple(fmt.render_relation(r) for r in package.provides),
        depends=tuple(fmt.render_relation(r) for r in package.depends),
        prefix="/",
    )


# --- running the tools --------------------------------------------------------------------


def _run(command: Sequence[str], what: str, env: dict[str, str] | None = None) -> str:
    """Run a tool; its stdout. A failure is one TrialError: ``what`` failed, the command's
    last lines of output below it."""
    environment = {**os.environ, "LC_ALL": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
    result = subprocess.run(
        list(command),
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        stdin=subprocess.DEVNULL,
        env={**environment, **(env or {})},
    )
    if result.returncode != 0:
        output = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        shown = "\n".join(f"  {line}" for line in output[-25:])
        raise TrialError(f"{what} failed ({command[0]} exit status {result.returncode}):\n{shown}")
    return result.stdout


def _require(tool: str, package: str) -> None:
    if _which(tool) is None:
        raise TrialError(f"{tool} not found: install it with {_installer()} {package}")


def _installer() -> str:
    """How this machine installs a package."""
    for manager in ("apt-get", "dnf", "zypper"):
        if _which(manager):
            return f"{manager} install"
    return "your package manager:"


# --- the root -----------------------------------------------------------------------------


def _existing_root(root: Path) -> bool:
    """Whether ``root`` is there and is a root try-install made (to be replaced); refused
    when it is anything but a new or empty directory or such a root."""
    try:
        info = root.lstat()
    except FileNotFoundError:
        return False
    except OSError as e:
        raise TrialError(f"{root}: cannot read: {e.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a directory"
        raise TrialError(f"{root}: is {kind}; give a new or empty directory as --root")
    try:
        if not any(root.iterdir()):
            return False
        marker = (root / MARKER).lstat()
    except FileNotFoundError:
        marker = None
    except OSError as e:
        raise TrialError(f"{root}: cannot read: {e.strerror}") from None
    if marker is None or not stat.S_ISREG(marker.st_mode):
        raise TrialError(
            f"{root}: exists and holds files try-install did not make; give a new or "
            "empty directory as --root"
        )
    return True


def _fresh_root(root: Path, replace: bool) -> None:
    """``root`` as an empty directory holding the marker; an earlier root is replaced."""
    try:
        if replace:
            shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
        (root / MARKER).write_text(
            "a throwaway root of gfxpack try-install; a later run into it replaces it\n",
            encoding="utf-8",
        )
    except OSError as e:
        raise TrialError(f"{root}: cannot make the root: {e.strerror}") from None


# --- trying ---------------------------------------------------------------------------------


def default_client(repo: Path) -> str:
    """dnf for a repository with an rpm-md side, else apt."""
    return "dnf" if locate(repo, RPM) is not None or locate(repo, DEB) is None else "apt"


def held_archs(requested: Sequence[str], archs: Sequence[str]) -> list[str]:
    """The processors an install of ``requested`` is held to: ``archs`` (checked against
    the processor table, features dropped), else the arch suffixes of the names."""
    chosen = []
    for arch in archs:
        problem = processor_problem(arch, features=True)
        if problem:
            raise TrialError(f"--arch: {problem}")
        chosen.append(arch.split(":")[0])
    if not archs:
        chosen = [a for name in requested if (a := arch_of(name)) in PROCESSORS]
    return sorted(set(chosen), key=chosen.index)


def try_install(
    repo: Path,
    packages: Sequence[str],
    client: str | None = None,
    root: Path | None = None,
    keep: bool = False,
    system: Path | None = None,
    archs: Sequence[str] = (),
    suite: str | None = None,
) -> Trial:
    """Install ``packages`` from ``repo`` (gfxpack repo's output, or one apt or rpm-md
    repository) into ``root`` with ``client`` (apt, dnf or zypper; default
    :func:`default_client`) and report what is there. Without ``root`` a temporary
    directory is used and removed afterwards, unless ``keep``."""
    if not packages:
        raise TrialError("name at least one package to install")
    if not Path(repo).is_dir():
        raise TrialError(f"{repo}: not a directory (give the --out directory of gfxpack repo)")
    chosen = CLIENTS.get(client or default_client(repo))
    if chosen is None:
        raise TrialError(f"unknown client {client!r} (choose one of: {', '.join(CLIENTS)})")
    fmt = chosen.fmt
    held = held_archs(packages, archs)
    _require(chosen.command, PROVIDED_BY[chosen.command])
    for tool, package in chosen.tools:
        _require(tool, package)
    if fmt is RPM:
        scriptlet_sources()
    if os.geteuid() != 0:
        raise TrialError(
            f"try-install needs root: {chosen.command} installs as root and "
            f"{'dpkg' if fmt is DEB else 'rpm'} runs the packages' scripts in the new root "
            "(run it with sudo, or in a container)"
        )
    replace = root is not None and _existing_root(root)
    listed = read_system(system, fmt)
    infos = _stand_in_infos(fmt, listed[1], listed[0])
    universe = load(repo, fmt, listed, suite)
    for name in packages:
        select(universe, name)  # one error naming it (with suggestions) when it is not there
    repository = universe.root
    apt_suite = pick_suite(repository / "dists", suite) if fmt is DEB else ""
    if fmt is DEB and not SUITE.match(apt_suite):
        raise TrialError(f"{repository / 'dists' / apt_suite}: not a suite name apt reads")

    temporary = root is None
    where = Path(tempfile.mkdtemp(prefix="gfxpack-try-install-")) if root is None else root
    try:
        _fresh_root(where, replace)
        where = where.resolve()
        with tempfile.TemporaryDirectory(prefix="gfxpack-try-install-client-") as scratch:
            home = Path(scratch)
            made = _write_stand_ins(fmt, infos, home / "stand-ins")
            if fmt is DEB:
                _apt_install(home, where, made, repository, apt_suite, packages)
            else:
                _rpm_install(chosen, home, where, made, repository, packages)
        trial = _report(chosen, universe.label, where, listed, packages, held)
        trial.kept = keep or not temporary
    finally:
        if temporary and not keep:
            shutil.rmtree(where, ignore_errors=True)
    return trial


def _apt_install(
    home: Path, root: Path, made: list[Path], repository: Path, suite: str, names: Sequence[str]
) -> None:
    status = dpkg_database(root)
    if made:
        # The stand-ins' own dependencies may be system packages the list leaves out.
        dpkg = ["dpkg", f"--root={root}", "--force-depends", *DPKG_OPTIONS]
        _run([*dpkg, "-i", *map(str, made)], "installing the stand-ins with dpkg")
    options = apt_options(home, status, root)
    with serve(repository) as url:
        line = f"deb [trusted=yes] {url} {suite} {' '.join(_components(repository, suite))}"
        (home / "sources.list").write_text(line + "\n")
        _run(["apt-get", *options, "-q", "update"], f"apt-get update from {repository}")
        _run(["apt-get", *options, "-q", "-y", "install", *names], "apt-get install")


def _components(repository: Path, suite: str) -> list[str]:
    """The components the suite's Release names (gfxpack repo writes one, main)."""
    release = repository / "dists" / suite / "Release"
    try:
        stanzas = parse_stanzas(release.read_text("utf-8")) if release.is_file() else []
    except (OSError, UnicodeDecodeError) as e:
        raise TrialError(f"{release}: cannot read: {e}") from None
    named = stanzas[0].get("Components", "").split() if stanzas else []
    return [c for c in named if SUITE.match(c)] or [COMPONENT]


def _rpm_install(
    client: Client,
    home: Path,
    root: Path,
    made: list[Path],
    repository: Path,
    names: Sequence[str],
) -> None:
    _run(["rpm", "--root", str(root), "--initdb"], "making the rpm database")
    scriptlet_tools(root)
    if made:
        # The stand-ins' own dependencies may be system packages the list leaves out.
        command = ["rpm", "--root", str(root), "-i", "--nodeps", *map(str, made)]
        _run(command, "installing the stand-ins with rpm")
    if client.name == "dnf":
        options = dnf_options(home / "dnf", root)
        reposdir = home / "dnf/repos.d"
    else:
        options = zypper_options(home / "zypper", root)
        reposdir = home / "zypper/repos.d"
    with serve(repository) as url:
        (reposdir / "try-install.repo").write_text(repo_section("try-install", url))
        _run([client.command, *options, "install", *names], f"{client.command} install")


# --- the report ---------------------------------------------------------------------------

_PROCESSOR_TOKEN = re.compile(r"(?<![0-9a-z])gfx[0-9a-z]+(?:(?:-[0-9]+)*-generic)?(?![0-9a-z])")


def file_archs(path: str) -> set[str]:
    """The processors and generic targets a path names.

    >>> sorted(file_archs("/opt/rocm/core-8.2/lib/TensileLibrary_gfx1100-xnack+.co"))
    ['gfx1100']
    >>> file_archs("/opt/rocm/.kpack/blas_lib_gfx942:xnack+.kpack"), file_archs("/gfxpack/gfx11")
    ({'gfx942'}, set())
    >>> file_archs("/opt/rocm/lib/rocblas/library/Kernels_gfx9-4-generic.co")
    {'gfx9-4-generic'}
    """
    return {
        token
        for token in _PROCESSOR_TOKEN.findall(path.lower())
        if token in BY_NAME or token in GENERIC_PROCESSORS
    }


def other_archs(path: str, held: Sequence[str]) -> list[str]:
    """The archs ``path`` names that are not ``held`` (a generic target is held when a
    processor it runs on is), in processor order.

    >>> other_archs("/x/blas_lib_gfx1100.kpack", ["gfx942"])
    ['gfx1100']
    >>> other_archs("/x/a_gfx9-4-generic.co", ["gfx942"]), other_archs("/x/a_gfx942.co", ["gfx942"])
    ([], [])
    """
    runs_on = {GENERIC.get(arch) for arch in held}
    return sort_targets(a for a in file_archs(path) if a not in held and a not in runs_on)


def _report(
    client: Client,
    repository: str,
    root: Path,
    listed: tuple[str, list[SystemPackage]],
    requested: Sequence[str],
    held: list[str],
) -> Trial:
    label, system = listed
    standing = {p.name for p in system}
    owned = _owned_files(client.fmt, root)
    sizes = _file_sizes(root)
    packages, foreign_packages, foreign_files = [], [], []
    for (name, version), paths in sorted(owned.items()):
        if name in standing:
            continue
        mine = [size for p in paths if (size := sizes.get(p)) is not None]
        packages.append(Installed(name, version, sum(mine), len(mine)))
        if not held:
            continue
        arch = arch_of(name)
        if arch in PROCESSORS and arch not in held:
            foreign_packages.append(name)
        for path in sorted(paths):
            if path in sizes:
                foreign_files += [ForeignFile(path, name, a) for a in other_archs(path, held)]
    return Trial(
        client=client.name,
        repository=repository,
        root=str(root),
        kept=True,
        requested=list(requested),
        archs=held,
        system=label,
        stand_ins=[
            StandIn(p.name, p.version, tuple(client.fmt.render_relation(r) for r in p.provides))
            for p in _unique(system)
        ],
        packages=packages,
        alternatives=_alternatives(root),
        foreign_packages=foreign_packages,
        foreign_files=foreign_files,
    )


def _owned_files(fmt: PackageFormat, root: Path) -> dict[tuple[str, str], list[str]]:
    """(name, version) -> the paths of every package installed in ``root``, as its package
    database lists them."""
    if fmt is DEB:
        command = [
            *("dpkg-query", f"--root={root}", "-W"),
            "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n${db-fsys:Files}",
        ]
    else:
        command = ["rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\t%{EVR}\t\n[%{FILENAMES}\n]"]
    owned: dict[tuple[str, str], list[str]] = {}
    paths: list[str] = []
    for line in _run(command, "listing the installed packages").splitlines():
        if line.lstrip().startswith("/"):
            paths.append(line.strip())
        elif line:
            name, version, state = [*line.split("\t"), "", ""][:3]
            # A Debian package is installed when its state is "ii"; rpm lists only those.
            paths = owned.setdefault((name, version), []) if state.strip() in ("ii", "") else []
    return owned


def _file_sizes(root: Path) -> dict[str, int | None]:
    """'/path' -> size of every regular file under ``root`` (None: a symlink or another
    entry that is not a directory), found without following any symlink (a link in
    the root may point at this machine's files)."""
    sizes: dict[str, int | None] = {}
    pending = [(str(root), "")]
    while pending:
        directory, relative = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                path = f"{relative}/{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, path))
                elif entry.is_file(follow_symlinks=False):
                    sizes[path] = entry.stat(follow_symlinks=False).st_size
                else:
                    sizes[path] = None
    return sizes


def _alternatives(root: Path) -> dict[str, str]:
    """The links under the root's /etc/alternatives and where they point."""
    directory = root / "etc/alternatives"
    if not directory.is_dir() or directory.is_symlink():
        return {}
    with os.scandir(directory) as entries:
        return {
            entry.name: os.readlink(entry.path)
            for entry in sorted(entries, key=lambda e: e.name)
            if entry.is_symlink()
        }
