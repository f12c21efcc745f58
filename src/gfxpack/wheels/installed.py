"""Check an installed Python environment: does every library with device code find it?

A bare ``pip install jax-rocm7-pjrt`` from a split index installs the host wheel
alone, and pip says nothing: the extra that brings the device code was not named.
The libraries import, then fail on the GPU. This module finds, in a virtual
environment's site-packages, every installed distribution's libraries (the files its
RECORD lists) that carry HIP device code, and asks of each what a device finds
(:func:`gfxpack.fatbin.libraries.check_library`): the code objects of a split library
through its kpack archives, as the runtime looks for them, or an unsplit library's
inline code objects.

The environment is read, never run: its Python is not started (a venv to check may
be anyone's), RECORD paths outside site-packages are not followed (scripts and
headers carry no libraries; a path that leaves the directory is the RECORD's
mistake, not a file to open), nor is a library whose real path leaves it.
"""

from __future__ import annotations

import csv
import email.parser
import email.policy
import io
import os
import posixpath
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidName, canonicalize_name

from gfxpack import kpack
from gfxpack.amdgpu import owner_of
from gfxpack.fatbin.libraries import LibraryReport, check_library, forms_of, is_elf
from gfxpack.regular_files import UnreadableFile, printable, read_small_file
from gfxpack.wheels.archive import WheelError

# The largest RECORD and METADATA read: a RECORD lists every file of the distribution
# (torch's is under 2 MB), METADATA's header is a few kilobytes before the long
# description.
MAX_RECORD = 64 << 20
MAX_METADATA = 16 << 20


@dataclass(frozen=True)
class Distribution:
    """One installed distribution: its dist-info and the files its RECORD lists."""

    name: str  # as its METADATA spells it (else its dist-info directory)
    version: str
    site: Path
    dist_info: Path
    extras: tuple[str, ...]  # Provides-Extra of its METADATA

    def device_extra(self, target: str) -> str | None:
        """The extra that brings the device code of ``target``'s processor, if offered:
        its owner's (a gfx1250-strict device's code is in ``device-gfx1250``)."""
        extra = f"device-{owner_of(target.partition(':')[0])}"
        return extra if extra in self.extras else None


@dataclass(frozen=True)
class Checked:
    distribution: Distribution
    report: LibraryReport

    def hint(self) -> str:
        """For a split library that found no archive: the install line that fixes it."""
        report = self.report
        extra = self.distribution.device_extra(report.arch)
        if report.found or not report.split or extra is None:
            return ""
        if not _is_name(self.distribution.name):
            return ""  # only a valid name goes into a line to paste
        return f"pip install '{self.distribution.name}[{extra}]'"


def site_directories(venv: Path) -> list[Path]:
    """The site-packages directories of the virtual environment ``venv``
    (``lib/python3.X/site-packages``); WheelError when it is not one."""
    shown = printable(str(venv))
    if not os.path.isfile(venv / "pyvenv.cfg"):
        raise WheelError(f"{shown}: not a virtual environment (no pyvenv.cfg)")
    lib = venv / "lib"
    try:
        names = sorted(os.listdir(lib)) if not os.path.islink(lib) else []
    except OSError:
        names = []
    sites = [
        lib / name / "site-packages"
        for name in names
        if name.startswith("python")
        and _is_directory(lib / name)
        and _is_directory(lib / name / "site-packages")
    ]
    if not sites:
        raise WheelError(f"{shown}: no lib/python3.*/site-packages directory")
    return sites


def _is_directory(path: Path) -> bool:
    """A directory, not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def distributions(site: Path) -> list[Distribution]:
    """Every distribution installed in ``site``, by name."""
    try:
        names = sorted(os.listdir(site))
    except OSError as e:
        raise WheelError(f"{printable(str(site))}: cannot read: {e.strerror or e}") from None
    found = []
    for name in names:
        dist_info = site / name
        if not name.endswith(".dist-info") or not _is_directory(dist_info):
            continue
        project, _, version = name.removesuffix(".dist-info").partition("-")
        project, extras = _metadata(dist_info, project)
        found.append(Distribution(project, version, site, dist_info, extras))
    return found


def _read(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a regular file (no symlink); None when it is absent."""
    try:
        return read_small_file(path, limit, path.name, follow_symlinks=False)
    except UnreadableFile as e:
        if e.missing:
            return None
        raise WheelError(str(e)) from None


def _metadata(dist_info: Path, fallback: str) -> tuple[str, tuple[str, ...]]:
    """The Name (``fallback``, the dist-info's, when it has none) and the Provides-Extra
    of a METADATA header; the body (the long description) is not parsed."""
    data = _read(dist_info / "METADATA", MAX_METADATA) or b""
    header = data.split(b"\n\n", 1)[0]
    parsed = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(header)
    name = printable(str(parsed.get("Name", "")).strip())
    extras = tuple(
        printable(str(extra).strip()) for extra in parsed.get_all("Provides-Extra") or []
    )
    return (name if _is_name(name) else printable(fallback)), extras


def _is_name(text: str) -> bool:
    try:
        canonicalize_name(text, validate=True)
    except InvalidName:
        return False
    return True


def installed_files(distribution: Distribution) -> list[Path]:
    """The files of ``distribution`` inside its site-packages, as its RECORD lists them."""
    record = distribution.dist_info / "RECORD"
    data = _read(record, MAX_RECORD)
    if data is None:
        raise WheelError(f"{printable(str(record))}: missing; pip writes one for every install")
    site = os.path.realpath(distribution.site)
    files = []
    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error) as e:
        raise WheelError(f"{printable(str(record))}: not a RECORD: {e}") from None
    for row in rows:
        if not row or not row[0]:
            continue
        relative = posixpath.normpath(row[0])
        if relative.startswith(("/", "../")) or relative == "..":
            continue  # outside site-packages: scripts, headers, data
        path = distribution.site / relative
        if not os.path.realpath(path).startswith(site + os.sep):
            continue  # through a symlink out of site-packages
        files.append(path)
    return sorted(set(files))


def check_environment(
    venv: Path,
    targets: list[str],
    distribution: str | None = None,
    environ: Mapping[str, str] | None = None,
    max_object_size: int = kpack.DEFAULT_MAX_OBJECT_SIZE,
) -> list[Checked]:
    """One report per installed library with device code and per target, in the order
    of the distributions and of their files (paths relative to site-packages). With
    ``distribution``, that one only: WheelError when it is not installed."""
    for target in targets:
        forms_of(target)  # a bad --arch is one error, not a miss per library
    installed = [d for site in site_directories(venv) for d in distributions(site)]
    if distribution is not None:
        wanted = canonicalize_name(distribution)
        installed = [d for d in installed if canonicalize_name(d.name) == wanted]
        if not installed:
            raise WheelError(f"{distribution}: not installed in {printable(str(venv))}")
    checked = []
    for dist in installed:
        site = Path(os.path.abspath(dist.site))
        for path in installed_files(dist):
            if not is_elf(path):
                continue
            shown = printable(path.relative_to(dist.site).as_posix())
            for target in targets:
                report = check_library(path, target, shown, environ, max_object_size, site)
                if report is None:
                    break  # no device code: the same for every target
                checked.append(Checked(dist, report))
    return checked
