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
   127.0.0.1, with its own configuration, state, cache and log in a client directory
   beside the root: nothing of the machine's package configuration is read or changed.
   Signatures are not checked here (``gfxpack verify --keyring`` checks them).
   The client, and every script it runs, runs in a sandbox (:mod:`gfxpack.sandbox`):
   the root and the client directory are the only trees it may write, this machine's
   system directories are read-only, its network is its own loopback, on which the
   repository is served. Where the sandbox cannot be made the install is refused;
   ``scripts=False`` (``--no-scripts``, dnf only) installs without running any
   scriptlet, outside the sandbox if need be (rpm installs the files chrooted).
   Interrupted, the root and the client directory are removed, and what killed runs
   left in the temporary directory is removed by the next run (:func:`sweep_stale`).

   - apt: apt-get with dpkg ``--root``; maintainer scripts run chrootless with
     ``DPKG_ROOT`` set, which the DEB scripts honour (a script that does not writes
     into the sandbox's read-only or private trees, never this machine's).
   - dnf: ``dnf --installroot``; zypper: ``zypper --root``. rpm runs scriptlets
     chrooted into the root, so the root gets this machine's ``/bin/sh``,
     ``update-alternatives`` and ``ldconfig`` with the libraries they load
     (:func:`scriptlet_tools`). Both put their cache and log inside the root unless
     named from it (:func:`beside`).
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
import errno
import fcntl
import functools
import http.server
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfxpack.amdgpu import GENERIC, PROCESSORS, processor_problem, sort_targets
from gfxpack.errors import GfxpackError
from gfxpack.file_arch import file_arch
from gfxpack.formats import DEB, RPM, PackageFormat, PackageInfo
from gfxpack.repo.debfile import ARCHITECTURE, PACKAGE_NAME, VERSION, parse_stanzas
from gfxpack.repo.names import COMPONENT, SUITE
from gfxpack.repo.rpmfile import RPM_ARCH, RPM_NAME, RPM_VERSION
from gfxpack.sandbox import URL, Sandbox, SandboxUnavailable, probe
from gfxpack.verify.resolution import select
from gfxpack.verify.rules import arch_of
from gfxpack.verify.system import SystemPackage, read_system
from gfxpack.verify.universe import load, locate, pick_suite

# A root or client directory try-install made holds this file: only such a root is
# replaced by a later run, and only such a directory is removed as stale.
MARKER = ".gfxpack-try-install"
# ... and this one while a run is making it: one a dead run left is stale.
RUNNING = ".gfxpack-try-install-running"
# The temporary roots and client directories, in the temporary directory.
ROOT_PREFIX = "gfxpack-try-install-"
CLIENT_PREFIX = "gfxpack-try-install-client-"
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
    sandboxed: bool = True  # whether the client ran in the sandbox
    scripts: bool = True  # whether the packages' scripts ran (not: --no-scripts)

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
            "sandboxed": self.sandboxed,
            "scripts": self.scripts,
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


def dnf_options(home: Path, root: Path, scripts: bool = True, from_root: bool = False) -> list[str]:
    """dnf's options for its own configuration, repository files (``home/repos.d``), cache
    and log, installing into ``root``; without ``scripts``, no scriptlet or trigger
    runs. dnf puts the cache and log inside the root unless ``from_root`` names them
    from it (:func:`beside`): then dnf must run in ``root`` (its working directory)."""
    for directory in ("repos.d", "cache", "log"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    conf = home / "dnf.conf"
    conf.write_text("[main]\nplugins=False\n", encoding="utf-8")
    cache, log = (beside(root, home / d) if from_root else str(home / d) for d in ("cache", "log"))
    return [
        *("-c", str(conf), "--installroot", str(root)),
        f"--setopt=reposdir={home / 'repos.d'}",
        f"--setopt=cachedir={cache}",
        f"--setopt=logdir={log}",
        f"--releasever={RPM_RELEASEVER}",
        "--disableplugin=*",
        *([] if scripts else ["--setopt=tsflags=noscripts,notriggers"]),
        "-y",
    ]


def zypper_options(home: Path, root: Path, from_root: bool = False) -> list[str]:
    """zypper's options for its own repository files (``home/repos.d``) and caches,
    installing into ``root``; ``from_root`` as for :func:`dnf_options`. (Its log goes
    where ``ZYPP_LOGFILE`` says: :func:`zypper_environment`.)"""
    for directory in ("repos.d", "cache"):
        (home / directory).mkdir(parents=True, exist_ok=True)
    cache = beside(root, home / "cache") if from_root else str(home / "cache")
    return [
        *("--non-interactive", "--root", str(root)),
        *("--reposd-dir", str(home / "repos.d"), "--cache-dir", cache),
    ]


def zypper_environment(home: Path) -> dict[str, str]:
    """zypper's log in ``home`` (by default it appends to this machine's
    /var/log/zypper.log, whatever ``--root`` says)."""
    return {"ZYPP_LOGFILE": str(home / "zypper.log")}


def beside(root: Path, directory: Path) -> str:
    """``directory`` as a path the client reaches from ``root``: dnf and zypper put their
    cache and log directories inside the install root (they prefix the root to them), so
    a client directory beside the root is named from the root with ``..``. dnf also
    uses the path as given (hawkey's log), so it runs in the root, where both readings
    lead to the same place.

    >>> beside(Path("/tmp/r"), Path("/tmp/gfxpack-try-install-client-1/cache"))
    '../gfxpack-try-install-client-1/cache'
    """
    return os.path.relpath(os.path.realpath(directory), os.path.realpath(root))


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


def _run(
    command: Sequence[str],
    what: str,
    env: dict[str, str] | None = None,
    sandbox: Sandbox | None = None,
    serve: Path | None = None,
    cwd: Path | None = None,
) -> str:
    """Run a tool in ``cwd``, in ``sandbox`` when there is one (serving ``serve`` on
    :data:`gfxpack.sandbox.URL` there); its stdout. A failure is one TrialError: ``what``
    failed, the command's last lines of output below it."""
    environment = {"LC_ALL": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive", **(env or {})}
    if sandbox is None:
        environment = {**os.environ, **environment}
        argv = list(command)
    else:
        # Nothing of this environment goes in but the PATH the tools were found on, and
        # HOME: Debian's rpm keeps its database under the root at $HOME/.rpmdb.
        inside = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": os.environ.get("HOME", "/root"),
            **environment,
        }
        argv = sandbox.command(command, inside, serve, cwd)
        cwd = None
    result = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        stdin=subprocess.DEVNULL,
        env=environment,
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


def _fresh_root(root: Path, replace: bool) -> int:
    """``root`` as an empty directory holding the marker, claimed (:func:`_claim`); an
    earlier root is replaced. The descriptor holding the claim."""
    try:
        if replace:
            shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrialError(f"{root}: cannot make the root: {e.strerror}") from None
    return _claim(root, "a throwaway root of gfxpack try-install; a later run into it replaces it")


def _claim(directory: Path, what: str) -> int:
    """Lock ``directory`` for as long as this process lives (the lock goes with it, even
    when it is killed), then write the marker saying ``what`` it is and :data:`RUNNING`:
    a later run removes a directory holding RUNNING as stale only when it can take the
    lock (:func:`sweep_stale`). The descriptor holding the lock (:func:`_release`)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise TrialError(f"{directory}: cannot open: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (directory / MARKER).write_text(what + "\n", encoding="utf-8")
        (directory / RUNNING).write_text(f"{os.getpid()}\n", encoding="utf-8")
    except OSError as e:
        os.close(fd)
        busy = e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
        reason = "another try-install is using it" if busy else e.strerror
        raise TrialError(f"{directory}: cannot claim it: {reason}") from None
    return fd


def _release(directory: Path, fd: int) -> None:
    """The run is over: ``directory`` (a kept root) is no longer stale when left."""
    with contextlib.suppress(OSError):
        (directory / RUNNING).unlink()
    os.close(fd)


def sweep_stale(directory: Path | None = None) -> list[Path]:
    """Remove what killed runs left in the temporary directory (or ``directory``): each
    ``gfxpack-try-install-*`` directory of this user that holds :data:`RUNNING` and whose
    lock no live run holds (a root kept by ``--keep`` holds no RUNNING). The directories
    removed."""
    base = Path(tempfile.gettempdir() if directory is None else directory)
    removed = []
    for path in sorted(base.glob(ROOT_PREFIX + "*")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # not a directory, or a symlink: not one a run made
        try:
            if os.fstat(fd).st_uid != os.geteuid():
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # RUNNING is written once the lock is held: with the lock now ours, RUNNING
            # means its run is gone; none, that the run is starting or was kept.
            if stat.S_ISREG((path / RUNNING).lstat().st_mode):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        except OSError:
            continue  # a live run holds it, or it is no longer there
        finally:
            os.close(fd)
    return removed


def _discard(root: Path, keep_directory: bool) -> None:
    """Remove ``root`` (an interrupted install's), or only what is in it when the
    directory itself was there before."""
    if not keep_directory:
        shutil.rmtree(root, ignore_errors=True)
        return
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


@contextlib.contextmanager
def _terminated_as_exit() -> Iterator[None]:
    """While in effect, SIGTERM ends this process as Ctrl-C (SIGINT) does, by an
    exception, so that the finally blocks removing the root and the client directory
    run (SIGTERM's default ends it at once); the exit status is 128 + 15."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers are the main thread's
        return

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    scripts: bool = True,
) -> Trial:
    """Install ``packages`` from ``repo`` (gfxpack repo's output, or one apt or rpm-md
    repository) into ``root`` with ``client`` (apt, dnf or zypper; default
    :func:`default_client`) and report what is there. Without ``root`` a temporary
    directory is used and removed afterwards, unless ``keep``.

    The client runs in a sandbox (:mod:`gfxpack.sandbox`) where the root and its own
    client directory are the only trees it may write; where that sandbox cannot be
    made, the install is refused, unless ``scripts`` is false (dnf only), which runs
    no scriptlet. Interrupted (SIGINT, SIGTERM), the root and the client directory are
    removed; what killed runs left in the temporary directory is removed first."""
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
    sandboxed = _sandboxed(chosen, scripts)
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

    sweep_stale()
    temporary = root is None
    existed = root is not None and root.is_dir()
    with _terminated_as_exit(), contextlib.ExitStack() as cleanup:
        where = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX)) if root is None else root
        try:
            home = Path(tempfile.mkdtemp(prefix=CLIENT_PREFIX))
            cleanup.callback(shutil.rmtree, home, ignore_errors=True)
            cleanup.callback(
                _release, home, _claim(home, "the client directory of a gfxpack try-install")
            )
            cleanup.callback(_release, where, _fresh_root(where, replace))
            where = where.resolve()
            # The repository is bound (and served) where it is, not through a symlink.
            repository = repository.resolve()
            box = Sandbox((where, home), (repository,)) if sandboxed else None
            made = _write_stand_ins(fmt, infos, home / "stand-ins")
            if fmt is DEB:
                _apt_install(home, where, made, repository, apt_suite, packages, box)
            else:
                _rpm_install(chosen, home, where, made, repository, packages, box, scripts)
            trial = _report(chosen, universe.label, where, listed, packages, held, box)
        except (KeyboardInterrupt, SystemExit):
            _discard(where, keep_directory=existed)  # half made: nothing of it stays
            raise
        finally:
            if temporary and not keep:
                shutil.rmtree(where, ignore_errors=True)
    trial.kept = keep or not temporary
    trial.sandboxed, trial.scripts = sandboxed, scripts
    return trial


def _sandboxed(client: Client, scripts: bool) -> bool:
    """Whether the client runs in the sandbox: always, when it can be made; else the
    install is refused, unless ``scripts`` is off (dnf, whose rpm runs chrooted)."""
    if not scripts and client.name != "dnf":
        why = "dpkg runs every maintainer script" if client.fmt is DEB else "zypper cannot"
        raise TrialError(
            f"--no-scripts: only dnf installs without running the packages' scripts ({why}); "
            "use --client dnf"
        )
    try:
        probe()
    except SandboxUnavailable as e:
        if not scripts:
            return False
        raise TrialError(
            f"{e}; try-install runs the packages' scripts only in that sandbox, so it did "
            "not install (--client dnf --no-scripts installs without running them)"
        ) from None
    return True


def _apt_install(
    home: Path,
    root: Path,
    made: list[Path],
    repository: Path,
    suite: str,
    names: Sequence[str],
    box: Sandbox | None,
) -> None:
    if box is None:  # _sandboxed refuses apt without one: dpkg --root is not chrooted
        raise TrialError("apt-get installs only in the sandbox")
    status = dpkg_database(root)
    if made:
        # The stand-ins' own dependencies may be system packages the list leaves out.
        dpkg = ["dpkg", f"--root={root}", "--force-depends", *DPKG_OPTIONS]
        _run([*dpkg, "-i", *map(str, made)], "installing the stand-ins with dpkg", sandbox=box)
    options = apt_options(home, status, root)
    line = f"deb [trusted=yes] {URL} {suite} {' '.join(_components(repository, suite))}"
    (home / "sources.list").write_text(line + "\n")
    for command, what in (
        (["update"], f"apt-get update from {repository}"),
        (["-y", "install", *names], "apt-get install"),
    ):
        _run(["apt-get", *options, "-q", *command], what, sandbox=box, serve=repository)


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
    box: Sandbox | None,
    scripts: bool,
) -> None:
    _run(["rpm", "--root", str(root), "--initdb"], "making the rpm database", sandbox=box)
    scriptlet_tools(root)
    if made:
        # The stand-ins' own dependencies may be system packages the list leaves out.
        command = ["rpm", "--root", str(root), "-i", "--nodeps", "--noscripts", *map(str, made)]
        _run(command, "installing the stand-ins with rpm", sandbox=box)
    env: dict[str, str] = {}
    if client.name == "dnf":
        options = dnf_options(home / "dnf", root, scripts, from_root=True)
        reposdir = home / "dnf/repos.d"
    else:
        options = zypper_options(home / "zypper", root, from_root=True)
        reposdir = home / "zypper/repos.d"
        env = zypper_environment(home / "zypper")
    command = [client.command, *options, "install", *names]
    what = f"{client.command} install"
    with contextlib.ExitStack() as stack:
        # In the sandbox the repository is served on its own loopback; without one (dnf
        # --no-scripts), from this process.
        url = URL if box is not None else stack.enter_context(serve(repository))
        (reposdir / "try-install.repo").write_text(repo_section("try-install", url))
        served = repository if box is not None else None
        # In the root, as beside() says.
        _run(command, what, env, sandbox=box, serve=served, cwd=root)


# --- the report ---------------------------------------------------------------------------


def file_archs(path: str) -> set[str]:
    """The processor or generic target a path belongs to (:func:`gfxpack.file_arch.file_arch`,
    the answer split routes by), as a set.

    >>> sorted(file_archs("/opt/rocm/core-8.2/lib/TensileLibrary_gfx1100-xnack+.co"))
    ['gfx1100']
    >>> file_archs("/opt/rocm/.kpack/blas_lib_gfx942:xnack+.kpack"), file_archs("/gfxpack/gfx11")
    ({'gfx942'}, set())
    >>> file_archs("/opt/rocm/lib/rocblas/library/Kernels_gfx9-4-generic.co")
    {'gfx9-4-generic'}
    """
    arch = file_arch(path)
    return {arch} if arch else set()


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
    box: Sandbox | None,
) -> Trial:
    label, system = listed
    standing = {p.name for p in system}
    owned = _owned_files(client.fmt, root, box)
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


def _owned_files(
    fmt: PackageFormat, root: Path, box: Sandbox | None
) -> dict[tuple[str, str], list[str]]:
    """(name, version) -> the paths of every package installed in ``root``, as its package
    database lists them (read in the sandbox: the packages could write the database)."""
    if fmt is DEB:
        command = [
            *("dpkg-query", f"--root={root}", "-W"),
            "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n${db-fsys:Files}",
        ]
    else:
        command = ["rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\t%{EVR}\t\n[%{FILENAMES}\n]"]
    owned: dict[tuple[str, str], list[str]] = {}
    paths: list[str] = []
    for line in _run(command, "listing the installed packages", sandbox=box).splitlines():
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
