"""Installing packages into an image's root, over the base's files, with the real
client in try-install's sandbox.

The steps are try-install's (:mod:`gfxpack.trial`), on a root that already holds a
base: apt-get with dpkg ``--root`` (maintainer scripts chrootless, ``DPKG_ROOT``
set) or dnf ``--installroot`` (scriptlets chrooted), the client's configuration,
state, cache and log in a client directory beside the root. apt reads the repository
in place with its file method (bound read-only at :data:`REPOSITORY` in the sandbox):
an image installs once per arch, and a server started and every package copied for
each install cost more than the arch's own files do. dnf reads it from the sandbox's
own loopback, as try-install's clients do. The base's own package database says what is installed:
the client resolves the release against it. A system package the release needs and
the base lacks is refused, unless stand-ins are allowed (empty packages of its name,
as try-install installs; an image holding them lacks those files).

Then the package database is asked, in the sandbox, which files each package owns.
"""

from __future__ import annotations

import base64
import datetime
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gfxpack.formats import DEB, PackageFormat
from gfxpack.image import ImageError
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.sandbox import URL, Sandbox
from gfxpack.trial import (
    CLIENTS,
    DPKG_OPTIONS,
    apt_options,
    dnf_options,
    dpkg_database,
    repo_section,
    scriptlet_tools,
    stand_ins,
)
from gfxpack.verify.system import SystemPackage

# What a failed tool's output shows of its last lines.
SHOWN_LINES = 25
# Where apt sees the repository in the sandbox.
REPOSITORY = Path("/srv/gfxpack-repository")


@dataclass(frozen=True, slots=True)
class Installed:
    """A package in the root's database, with the paths it owns ('/path')."""

    name: str
    version: str
    paths: tuple[str, ...]


def run(
    box: Sandbox,
    command: Sequence[str],
    what: str,
    serve: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """``command`` in ``box``, with ``env`` added to its environment; its stdout. A
    failure is one ImageError: ``what`` failed, with the last lines of the tool's
    output below it."""
    inside = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/root"),
        "LC_ALL": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
        **(env or {}),
    }
    result = subprocess.run(
        box.command(command, inside, serve, cwd),
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0:
        output = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        shown = "\n".join(f"  {line}" for line in output[-SHOWN_LINES:])
        raise ImageError(f"{what} failed ({command[0]} exit status {result.returncode}):\n{shown}")
    return result.stdout


def database(fmt: PackageFormat, root: Path, box: Sandbox) -> dict[str, Installed]:
    """name -> every package installed in ``root``'s database (none: an empty root)."""
    if fmt is DEB:
        if not (root / "var/lib/dpkg/status").is_file():
            return {}
        command = [
            *("dpkg-query", f"--root={root}", "-W"),
            "-f=${Package}\t${Version}\t${db:Status-Abbrev}\n${db-fsys:Files}",
        ]
    else:
        command = ["rpm", "--root", str(root), "-qa", "--qf", "%{NAME}\t%{EVR}\t\n[%{FILENAMES}\n]"]
    found: dict[str, Installed] = {}
    name, version, paths = "", "", []
    for line in [*run(box, command, "listing the packages in the root").splitlines(), "\t\t"]:
        if line.lstrip().startswith("/"):
            paths.append(line.strip())
            continue
        if not line:
            continue
        if name:
            found[name] = Installed(name, version, tuple(paths))
        name, version, state = [*line.split("\t"), "", ""][:3]
        paths = []
        if state.strip() not in ("ii", ""):  # dpkg lists removed packages too
            name = ""
    return found


def missing_system(
    system: Sequence[SystemPackage], present: dict[str, Installed]
) -> list[SystemPackage]:
    """The system packages of the list that the base does not have."""
    seen: set[str] = set()
    missing = []
    for package in system:
        if package.name not in present and package.name not in seen:
            missing.append(package)
        seen.add(package.name)
    return missing


def install(
    client: str,
    root: Path,
    home: Path,
    repository: Path,
    suite: str,
    components: Sequence[str],
    names: Sequence[str],
    standing_in: Sequence[SystemPackage],
    indexes: Path | None = None,
    epoch: int = 0,
    keys: bytes | None = None,
) -> None:
    """Install ``names`` from ``repository`` into ``root`` (which holds the base) with
    ``client``; empty stand-ins of ``standing_in`` first. apt fetches the indexes into
    ``home``, or with ``indexes`` reads those an earlier install fetched (its lists
    directory, read-only in the sandbox), and fetches none. dnf runs
    with the wall clock stopped at ``epoch`` (:func:`frozen_clock`). With ``keys`` (an
    OpenPGP keyring, binary or armored) the client checks the repository's signatures
    against them (apt's signed-by; dnf's gpgcheck, every package's signature); without,
    none."""
    chosen = CLIENTS[client]
    # apt reads the repository at a fixed path: a file: URI of the path itself would be
    # percent-decoded twice by apt, and a space or % in it would name another file.
    readable = (repository,) if indexes is None else (repository, indexes)
    box = Sandbox((root, home), readable, ((repository, REPOSITORY),))
    made = stand_ins(chosen.fmt, standing_in, home / "stand-ins", "the system list")
    if chosen.fmt is DEB:
        status = dpkg_database(root)
        if made:
            dpkg = ["dpkg", f"--root={root}", "--force-depends", *DPKG_OPTIONS]
            run(box, [*dpkg, "-i", *map(str, made)], "installing the stand-ins with dpkg",
                env=without_syncs({}))  # fmt: skip
        options = apt_options(home, status, root)
        if indexes is not None:
            options.append(f"-oDir::State::lists={indexes}")
        own = without_syncs({"APT_CONFIG": str(own_apt_config(home))})
        trust = "trusted=yes"
        if keys is not None:
            # apt reads an armored keyring only by its .asc name.
            keyring = home / ("keyring.asc" if keys.lstrip().startswith(ARMOR) else "keyring.gpg")
            keyring.write_bytes(keys)
            trust = f"signed-by={keyring}"
        # apt's file method reads the repository, bound read-only into the sandbox, in
        # place: no server to start and no copy of each package in the client
        # directory, for every arch's install.
        line = f"deb [{trust}] file:{REPOSITORY} {suite} {' '.join(components)}"
        (home / "sources.list").write_text(line + "\n", encoding="utf-8")
        steps = [(["update"], f"apt-get update from {repository}")] if indexes is None else []
        for command, what in (*steps, (["-y", "install", *names], "apt-get install")):
            run(box, ["apt-get", *options, "-q", *command], what, env=own)
        return
    clock = without_syncs(frozen_clock(epoch))
    run(box, ["rpm", "--root", str(root), "--initdb"], "making the rpm database", env=clock)
    if not (root / "bin/sh").exists():
        scriptlet_tools(root)  # the base has no shell for rpm's chrooted scriptlets
    if made:
        command = ["rpm", "--root", str(root), "-i", "--nodeps", "--noscripts", *map(str, made)]
        run(box, command, "installing the stand-ins with rpm", env=clock)
    options = dnf_options(home / "dnf", root, from_root=True)
    section = repo_section("image", URL)
    if keys is not None:
        keyring = home / "keyring.asc"
        keyring.write_bytes(keys if keys.lstrip().startswith(ARMOR) else armored(keys))
        # rpm imports the keys itself: dnf's import judges them by the frozen clock,
        # before they were made, and refuses them.
        command = ["rpm", "--root", str(root), "--import", str(keyring)]
        run(box, command, "importing the --keyring keys with rpm", env=clock)
        # repomd.xml's signature was checked before (Keyring, gpgv): dnf's check would
        # judge it by the frozen clock, before the signature was made.
        section = (
            f"[image]\nname=image\nbaseurl={URL}\nenabled=1\nmetadata_expire=0\n"
            f"gpgcheck=1\nrepo_gpgcheck=0\ngpgkey=file://{keyring}\n"
        )
    (home / "dnf/repos.d/image.repo").write_text(section, encoding="utf-8")
    command = ["dnf", *options, "install", *names]
    run(box, command, "dnf install", serve=repository, cwd=root, env=clock)


def own_apt_config(home: Path) -> Path:
    """apt's configuration file for an image's installs (APT_CONFIG, which apt reads
    first): it points apt's configuration directory and main file at empty ones under
    ``home``, so nothing of this machine's /etc/apt/apt.conf(.d) applies. Its hooks
    (debconf's dpkg-preconfigure, a PackageKit notice, a Docker image's cache cleaning)
    are about this machine, would cost every arch's install a start-up of their own,
    and would make the image depend on the machine it was built on."""
    parts = home / "apt.conf.d"
    parts.mkdir(exist_ok=True)
    (parts / "empty.conf").write_text("", encoding="utf-8")
    config = home / "apt.conf"
    config.write_text(
        f'Dir::Etc::parts "{parts}";\nDir::Etc::main "{parts / "empty.conf"}";\n',
        encoding="utf-8",
    )
    return config


# libeatmydata (Debian's libeatmydata1, Fedora's libeatmydata), where each
# distribution puts it.
NO_SYNC_LIBRARIES = (
    "/usr/lib/x86_64-linux-gnu/libeatmydata.so.1",
    "/usr/lib/x86_64-linux-gnu/libeatmydata.so",
    "/usr/lib64/libeatmydata.so.1",
    "/usr/lib64/libeatmydata.so",
)


def without_syncs(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with libeatmydata preloaded, where it is installed: fsync and its kin
    return at once in the client and the scripts it runs. The root is scratch, read
    into layers and removed, so durability buys nothing, and dpkg syncs its database
    some twenty times a package: about half of an arch's install on a busy disk.
    Without it the same files are written, more slowly."""
    library = next((path for path in NO_SYNC_LIBRARIES if os.path.exists(path)), None)
    if library is None:
        return dict(env)
    preload = " ".join(p for p in (env.get("LD_PRELOAD", ""), library) if p)
    return {**env, "LD_PRELOAD": preload}


def components(repository: Path, suite: str) -> list[str]:
    """The components the suite's Release names (gfxpack repo writes one, main)."""
    release = repository / "dists" / suite / "Release"
    try:
        stanzas = parse_stanzas(release.read_text("utf-8")) if release.is_file() else []
    except (OSError, UnicodeDecodeError) as e:
        raise ImageError(f"{release}: cannot read: {e}") from None
    named = stanzas[0].get("Components", "").split() if stanzas else []
    return [c for c in named if c.replace("-", "").replace("_", "").isalnum()] or ["main"]


ARMOR = b"-----BEGIN PGP PUBLIC KEY BLOCK-----"


def armored(keys: bytes) -> bytes:
    """A binary OpenPGP keyring as ASCII armor (RFC 4880 section 6), which dnf's gpgkey
    takes: base64 in 64-column lines and the CRC-24 of the bytes."""
    crc = 0xB704CE
    for byte in keys:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    text = base64.b64encode(keys).decode("ascii")
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    checksum = base64.b64encode((crc & 0xFFFFFF).to_bytes(3, "big")).decode("ascii")
    body = "\n".join(
        [ARMOR.decode(), "", *lines, f"={checksum}", "-----END PGP PUBLIC KEY BLOCK-----"]
    )
    return (body + "\n").encode("ascii")


# libfaketime (Debian's faketime; Fedora's libfaketime), where each distribution puts it.
FAKETIME_LIBRARIES = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib64/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
)


def frozen_clock(epoch: int) -> dict[str, str]:
    """The environment that stops the wall clock at ``epoch`` for a client (libfaketime;
    the monotonic clock keeps running, so timeouts still work): rpm writes each
    package's install time and transaction id into its database, which would make
    the top layer differ from build to build."""
    library = next((path for path in FAKETIME_LIBRARIES if os.path.exists(path)), None)
    if library is None:
        raise ImageError(
            "libfaketime not found: dnf's rpm writes install times into the rpm database, "
            "which gfxpack image freezes at SOURCE_DATE_EPOCH with it (install it with "
            "apt-get install faketime, or dnf install libfaketime)"
        )
    stamp = datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    return {
        "LD_PRELOAD": library,
        "FAKETIME": stamp,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "TZ": "UTC",
    }
