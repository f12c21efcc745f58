"""A static Python package index of a directory of wheels (spec/wheels.md rule 6).

The index is a directory any web server serves:

    OUT/simple/index.html            PEP 503 project list
    OUT/simple/index.json            PEP 691 project list
    OUT/simple/<project>/index.html  PEP 503 links: ``#sha256=``, ``data-requires-python``,
                                     ``data-dist-info-metadata``, ``data-core-metadata``
                                     (PEP 658/714)
    OUT/simple/<project>/index.json  PEP 691 JSON, api-version 1.1 (PEP 700: versions, size)
    OUT/files/<wheel>                the wheels, and ``<wheel>.metadata`` (their METADATA)

pip and uv ask for JSON (``Accept: application/vnd.pypi.simple.v1+json``) and take
HTML otherwise; the server picks the file. nginx::

    map $http_accept $simple_index {
        default index.html;
        "~application/vnd\\.pypi\\.simple\\.v1\\+json" index.json;
    }
    location /simple/ {
        index $simple_index;
        types { application/vnd.pypi.simple.v1+json json; text/html html; }
    }

Apache: ``AddType application/vnd.pypi.simple.v1+json .json``, and
``RewriteCond %{HTTP_ACCEPT} application/vnd\\.pypi\\.simple\\.v1\\+json`` with
``RewriteRule ^(simple/.*/)$ $1index.json``. Served as plain files only, the HTML
pages answer every client.

Before anything is written every wheel is read (names, tags, METADATA and RECORD, as
splitting checks them) and the set is checked: each ``device-*`` extra of a host
wheel resolves, for every platform the host is built for, to a wheel in the set;
host and device versions agree; no two distributions install the same path (each
scheme compared where installers put it); no two files are one distribution, version
and build for a shared tag; installing a split distribution with a device extra brings
every split distribution it installs with that arch (:mod:`gfxpack.wheels.closure`).
Each failure is one line, and nothing is written: the index is built in a hidden
sibling of OUT and renamed onto it when complete. An OUT already there must be an
earlier index: it grows (its wheels and the new ones checked and paged as one set),
or with ``force`` is replaced. Every URL written is percent-encoded.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import stat
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from gfxpack._io import DIRECTORY_MODE, FILE_MODE, replace_directory
from gfxpack.errors import GfxpackError
from gfxpack.plan.targets import target_order
from gfxpack.regular_files import printable
from gfxpack.wheels.archive import DEFAULT_MAX_WHEEL_SIZE, OUTPUT_ERRNOS, WheelError, read_wheel
from gfxpack.wheels.closure import DEVICE_EXTRA, chain_problems, device_extras, unresolved
from gfxpack.wheels.metadata import (
    DEVICE_ALL,
    CoreFields,
    WheelName,
    check_identity,
    core_fields,
)

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
API_VERSION = "1.1"  # PEP 700: versions, files[].size
_CHUNK = 1 << 20


class IndexRefused(GfxpackError):
    """A set of wheels that must not be published; one line per problem."""


@dataclass
class IndexedWheel:
    """One wheel of the index: what its name, METADATA and RECORD say."""

    path: Path
    name: WheelName
    metadata: CoreFields  # as installers read it: real wheels fail strict validation
    metadata_bytes: bytes
    installs: list[str] = field(default_factory=list)  # installed paths (scheme/path)
    sha256: str = ""
    size: int = 0

    @property
    def filename(self) -> str:
        return self.path.name


@dataclass
class IndexReport:
    out: Path
    projects: dict[str, list[str]]  # project: its files
    added: list[str] = field(default_factory=list)  # files this run published
    installs: dict[str, list[str]] = field(default_factory=dict)  # split project: its arches
    unresolved: list[str] = field(default_factory=list)  # requirements nothing provides
    notes: list[str] = field(default_factory=list)


# Where installers put each scheme, relative to the environment's prefix (sysconfig's
# venv and posix_prefix layouts): purelib and platlib are site-packages, scripts bin/,
# headers a directory named for the distribution, data the prefix itself. A data file
# can therefore land in site-packages or bin/ as well: compared there, not apart.
SITE_PACKAGES = "lib/python*/site-packages"
HEADERS = "include/site/python*"
SCHEMES = ("purelib", "platlib", "scripts", "headers", "data")
_DATA_IN_SITE_PACKAGES = re.compile(r"(?:lib|lib64)/python[^/]*/(?:site|dist)-packages/")
_DATA_IN_HEADERS = re.compile(r"include/site/python[^/]*/")


def installed_path(member: str, dist_info: str, project: NormalizedName) -> str | None:
    """Where a wheel member installs, relative to the environment (see SCHEMES above);
    None for the distribution's own ``.dist-info`` (named for it, so never another's).
    A scheme installers do not know, or a ``.data`` directory not the wheel's own (pip
    installs it as data, ``installer`` as a plain file), is refused."""
    top, _, rest = member.partition("/")
    if top == dist_info:
        return None
    if not top.endswith(".data"):
        return f"{SITE_PACKAGES}/{member}"
    own = dist_info.removesuffix(".dist-info") + ".data"
    scheme, _, path = rest.partition("/")
    if top != own:
        raise WheelError(
            f"member {printable(member)!r}: a .data directory that is not the wheel's own "
            f"({own}); installers disagree where it goes"
        )
    if scheme not in SCHEMES or not path:
        raise WheelError(
            f"member {printable(member)!r}: installs into the scheme {printable(scheme)!r}; "
            f"installers know {', '.join(SCHEMES)}"
        )
    if scheme in ("purelib", "platlib"):
        return f"{SITE_PACKAGES}/{path}"
    if scheme == "scripts":
        return f"bin/{path}"
    if scheme == "headers":
        return f"{HEADERS}/{project}/{path}"
    if site := _DATA_IN_SITE_PACKAGES.match(path):
        return f"{SITE_PACKAGES}/{path[site.end() :]}"
    if headers := _DATA_IN_HEADERS.match(path):
        owner, _, inside = path[headers.end() :].partition("/")
        return f"{HEADERS}/{canonicalize_name(owner)}/{inside}"
    return path


def _read(path: Path, scratch: Path, max_size: int) -> IndexedWheel:
    """One wheel, read and checked as splitting checks it (every member against RECORD)."""
    name = WheelName(path.name)
    unpacked = read_wheel(path, scratch / "wheel", max_size)
    try:
        shown = printable(path.name)
        data = unpacked.info_files.get("METADATA")
        if data is None:
            raise WheelError(f"{shown}: no {unpacked.dist_info}/METADATA")
        check_identity(shown, data, name)
        metadata = core_fields(data)
        installs = []
        for member in unpacked.members:
            try:
                where = installed_path(member.path, unpacked.dist_info, name.name)
            except WheelError as e:
                raise WheelError(f"{shown}: {e}") from None
            if where is not None:
                installs.append(where)
        return IndexedWheel(path, name, metadata, data, installs)
    finally:
        shutil.rmtree(scratch / "wheel", ignore_errors=True)


def _extras(wheel: IndexedWheel) -> dict[str, list[Requirement]]:
    """Each ``device-*`` extra of ``wheel`` and the requirements it adds."""
    found: dict[str, list[Requirement]] = {}
    for extra in wheel.metadata.provides_extra or []:
        if not extra.startswith(DEVICE_EXTRA):
            continue
        found[extra] = [
            r
            for r in wheel.metadata.requires_dist or []
            if r.marker is not None
            # B[device-<arch>] passes the extra on to a dependency: the chains' gate
            and not r.extras
            and r.marker.evaluate({"extra": extra})
            # an unconditional requirement is every install's, not the extra's
            and not r.marker.evaluate({"extra": ""})
        ]
    return found


def _pinned(specifier: SpecifierSet) -> str | None:
    """The version ``==V`` pins, or None when the specifier is not one exact pin."""
    pins = [s for s in specifier if s.operator in ("==", "===") and "*" not in s.version]
    return pins[0].version if len(pins) == 1 and len(specifier) == 1 else None


def check(wheels: list[IndexedWheel], source: str) -> list[str]:
    """Every problem of publishing ``wheels`` together, one line each (rule 6)."""
    problems: list[str] = []
    by_name: dict[NormalizedName, list[IndexedWheel]] = defaultdict(list)
    for wheel in wheels:
        by_name[wheel.name.name].append(wheel)
    for wheel in wheels:
        version = wheel.name.version
        for extra, requirements in sorted(_extras(wheel).items()):
            label = f"{wheel.filename}: extra {extra}"
            if not requirements:
                problems.append(f"{label} requires nothing; expected a device wheel")
            for requirement in requirements:
                problems += _extra_problems(label, version, wheel, requirement, by_name, source)
        # A device wheel pins its host: host and device versions must agree.
        for requirement in wheel.metadata.requires_dist or []:
            target = canonicalize_name(requirement.name)
            pin = _pinned(requirement.specifier)
            hosts = [w for w in by_name.get(target, []) if _extras(w)]
            is_device = wheel.name.name.startswith(f"{target}-device-")
            if (
                is_device
                and requirement.marker is None
                and hosts
                and pin
                and Version(pin) != version
            ):
                problems.append(
                    f"{wheel.filename}: requires {requirement}, but it is version {version}; "
                    "host and device versions must agree"
                )
    problems += _twins(wheels)
    problems += _collisions(by_name)
    return problems


def _twins(wheels: list[IndexedWheel]) -> list[str]:
    """Two files of one distribution, version and build tag that share a tag: an
    installer would pick either (PyPI refuses the second). Names and versions are
    compared normalized, so ``Foo_Bar-1.0`` and ``foo.bar-1.0.0`` are one."""
    problems = []
    groups: dict[tuple[NormalizedName, Version, tuple[()] | tuple[int, str]], list[IndexedWheel]]
    groups = defaultdict(list)
    for wheel in wheels:
        groups[(wheel.name.name, wheel.name.version, wheel.name.build)].append(wheel)
    for (name, version, _build), group in sorted(groups.items(), key=lambda g: str(g[0])):
        for number, first in enumerate(group):
            for second in group[number + 1 :]:
                shared = first.name.tags & second.name.tags
                if shared:
                    problems.append(
                        f"{first.filename} and {second.filename} are both {name} {version} "
                        f"for {sorted(map(str, shared))[0]}; an installer would pick either"
                    )
    return problems


def _extra_problems(
    label: str,
    version: Version,
    host: IndexedWheel,
    requirement: Requirement,
    by_name: dict[NormalizedName, list[IndexedWheel]],
    source: str,
) -> list[str]:
    wanted = canonicalize_name(requirement.name)
    pin = _pinned(requirement.specifier)
    if pin is None or Version(pin) != version:
        return [
            f"{label} requires {requirement.name}{requirement.specifier}; a device wheel must "
            f"be pinned to the host's version (=={version})"
        ]
    candidates = by_name.get(wanted, [])
    same = [w for w in candidates if w.name.version == version]
    if not same:
        if candidates:
            others = ", ".join(sorted({str(w.name.version) for w in candidates}))
            return [
                f"{label} requires {wanted}=={version}, but {source} has it only as "
                f"version {others}; host and device versions must agree"
            ]
        return [f"{label} requires {wanted}=={version}: no such wheel in {source}"]
    covered = {p for w in same for p in w.name.platforms}
    return [
        f"{label} requires {wanted}=={version}: no such wheel for platform {platform} in {source}"
        for platform in host.name.platforms
        if platform not in covered and "any" not in covered
    ]


def _collisions(by_name: dict[NormalizedName, list[IndexedWheel]]) -> list[str]:
    """A path two distributions install (one line per pair of distributions)."""
    owners: dict[str, dict[NormalizedName, str]] = defaultdict(dict)
    for name, wheels in by_name.items():
        for wheel in wheels:
            for path in wheel.installs:
                owners[path].setdefault(name, wheel.filename)
    clashes: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for path, names in owners.items():
        if len(names) > 1:
            clashes[tuple(sorted(names.values()))].append(path)
    return [
        f"{' and '.join(files)} both install {printable(sorted(paths)[0])}"
        + (f" (and {len(paths) - 1} more paths)" if len(paths) > 1 else "")
        for files, paths in sorted(clashes.items())
    ]


def _copy(source: Path, target: Path) -> tuple[str, int]:
    """Copy a wheel without following a symlink; its sha256 (hex) and size."""
    digest = hashlib.sha256()
    size = 0
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as reading, open(target, "xb") as writing:
        if not stat.S_ISREG(os.fstat(reading.fileno()).st_mode):
            raise WheelError(f"{printable(str(source))}: not a regular file")
        os.fchmod(writing.fileno(), FILE_MODE)
        while chunk := reading.read(_CHUNK):
            digest.update(chunk)
            writing.write(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _wheel_paths(wheels_dir: Path) -> list[Path]:
    shown = printable(str(wheels_dir))
    try:
        entries = sorted(os.scandir(wheels_dir), key=lambda e: e.name)
    except OSError as e:
        raise IndexRefused(
            f"{shown}: cannot read the wheels directory: {e.strerror or e}"
        ) from None
    paths = []
    for entry in entries:
        if not entry.name.endswith(".whl"):
            continue
        if not entry.is_file(follow_symlinks=False):
            raise IndexRefused(
                f"{printable(entry.path)}: not a regular file (a symlink, a directory or a "
                "device); give the wheel itself"
            )
        paths.append(Path(entry.path))
    if not paths:
        raise IndexRefused(f"{shown}: no .whl files")
    return paths


def _not_an_index(out: Path) -> str | None:
    """What in ``out`` an index written here never holds (None: it holds only what one
    does), so that --force replaces an earlier index and deletes nothing else."""
    if out.is_symlink() or not out.is_dir():
        return "not a directory"
    pages = {"index.html", "index.json"}
    for entry in sorted(os.scandir(out), key=lambda e: e.name):
        if entry.name not in ("files", "simple") or not entry.is_dir(follow_symlinks=False):
            return entry.name
        for inner in sorted(os.scandir(entry.path), key=lambda e: e.name):
            where = f"{entry.name}/{inner.name}"
            if entry.name == "files":
                expected = inner.name.endswith((".whl", ".whl.metadata"))
                if not expected or not inner.is_file(follow_symlinks=False):
                    return where
            elif inner.name in pages:
                if not inner.is_file(follow_symlinks=False):
                    return where
            elif not inner.is_dir(follow_symlinks=False):
                return where
            else:
                for page in os.scandir(inner.path):
                    if page.name not in pages or not page.is_file(follow_symlinks=False):
                        return f"{where}/{page.name}"
    return None


def build_index(
    wheels_dir: Path,
    out: Path,
    force: bool = False,
    max_wheel_size: int = DEFAULT_MAX_WHEEL_SIZE,
    mirror_deps: Path | None = None,
    self_contained: bool = False,
) -> IndexReport:
    """Check the wheels of ``wheels_dir`` as a set and write their index to ``out``
    (see the module docstring); IndexRefused with one line per problem, nothing written.
    An ``out`` that is an earlier index grows: its wheels and the new ones are checked
    as one set and every page is written again (``force``: replaced by the new wheels
    alone); any other ``out`` is refused. ``mirror_deps``: a directory of wheels
    whose distributions the split wheels require (transitively) and the index lacks
    are published too. ``self_contained``: a requirement nothing in the index
    provides is an error, not a warning in the report."""
    shown_out = printable(str(out))
    if out.name in ("", ".", ".."):
        raise IndexRefused(f"{shown_out}: expected the name of a directory to create")
    adding = False
    if os.path.lexists(out):
        if (foreign := _not_an_index(out)) is not None:
            raise IndexRefused(
                f"{shown_out}: not an index gfxpack wrote ({printable(foreign)}); "
                + ("--force replaces" if force else "index adds wheels to")
                + " only an earlier index"
            )
        adding = not force
    paths = _wheel_paths(wheels_dir)
    mirror = _wheel_paths(mirror_deps) if mirror_deps is not None else []
    try:
        temporary = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as e:
        raise IndexRefused(f"{shown_out}: cannot write beside it: {e.strerror or e}") from None
    try:
        os.chmod(temporary, DIRECTORY_MODE)
        files = temporary / "files"
        files.mkdir(mode=DIRECTORY_MODE)
        gathered = _Gathered(files, temporary, max_wheel_size)
        if adding:
            for path in sorted((out / "files").glob("*.whl")):
                gathered.take(path, published=True)
        for path in paths:
            gathered.take(path)
        if mirror and not gathered.problems:
            _mirror(gathered, mirror)
        problems = gathered.problems
        by_name = _by_name(gathered.wheels)
        if not problems:
            problems = check(gathered.wheels, printable(str(wheels_dir)))
            problems += chain_problems(gathered.wheels, by_name)
        missing = [
            f"{wheel.filename}: requires {requirement}, which nothing in the index provides"
            for wheel, requirement in unresolved(gathered.wheels, by_name)
        ]
        if self_contained:
            problems += [f"{line} (--self-contained)" for line in missing]
        if problems:
            raise IndexRefused("\n".join(problems))
        installs = install_lines(gathered.wheels)
        projects = _write_pages(temporary, gathered.wheels, installs)
        try:
            replace_directory(temporary, out, force or adding)
        except OSError as e:
            raise IndexRefused(f"{shown_out}: cannot replace: {e.strerror or e}") from None
    except OSError as e:
        raise IndexRefused(f"{shown_out}: cannot write the index: {e.strerror or e}") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return IndexReport(
        out,
        projects,
        added=gathered.added,
        installs=installs,
        unresolved=missing,
        notes=gathered.notes,
    )


def _by_name(wheels: list[IndexedWheel]) -> dict[NormalizedName, list[IndexedWheel]]:
    by_name: dict[NormalizedName, list[IndexedWheel]] = defaultdict(list)
    for wheel in wheels:
        by_name[wheel.name.name].append(wheel)
    return by_name


class _Gathered:
    """The wheels of the index being made: each copied into it, then read from the copy
    (a wheel changed meanwhile cannot be checked as one file and served as another)."""

    def __init__(self, files: Path, scratch: Path, max_wheel_size: int) -> None:
        self.files, self.scratch, self.max_wheel_size = files, scratch, max_wheel_size
        self.wheels: list[IndexedWheel] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.added: list[str] = []
        self.published: dict[str, str] = {}  # file name: sha256 of those taken

    def take(self, path: Path, published: bool = False) -> None:
        shown = printable(str(path))
        if path.name in self.published:
            try:
                digest = _sha256(path)
            except OSError as e:
                self.problems.append(f"{shown}: cannot read: {e.strerror or e}")
                return
            if digest != self.published[path.name]:
                self.problems.append(
                    f"{shown}: the index has another file of this name; a published file "
                    "never changes (give it another version or build tag)"
                )
            return  # the same file: published already
        try:
            digest, size = _copy(path, self.files / path.name)
            wheel = _read(self.files / path.name, self.scratch, self.max_wheel_size)
        except WheelError as e:
            # Named as the user gave it, not as the copy being read.
            copy = printable(str(self.files / path.name))
            self.problems.append(str(e).replace(copy, shown))
            return
        except OSError as e:
            if e.errno in OUTPUT_ERRNOS:
                raise  # the index's own place refused the copy: named as OUT
            self.problems.append(f"{shown}: cannot read: {e.strerror or e}")
            return
        wheel.sha256, wheel.size = digest, size
        self.wheels.append(wheel)
        self.published[path.name] = digest
        if not published:
            self.added.append(path.name)
        self.notes += [
            f"{path.name}: METADATA: {problem} (installers accept it)"
            for problem in wheel.metadata.problems
        ]


def _mirror(gathered: _Gathered, mirror: list[Path]) -> None:
    """Take from ``mirror`` every wheel a requirement nothing in the index provides
    admits (by its file name's distribution and version), until none is left."""
    names = {}
    for path in mirror:
        try:
            names[path] = WheelName(path.name)
        except WheelError as e:
            gathered.problems.append(str(e))
    while not gathered.problems:
        misses = unresolved(gathered.wheels, _by_name(gathered.wheels))
        taken = [
            path
            for path, name in names.items()
            if path.name not in gathered.published
            and any(
                canonicalize_name(r.name) == name.name
                and r.specifier.contains(name.version, prereleases=True)
                for _wheel, r in misses
            )
        ]
        if not taken:
            return
        for path in taken:
            gathered.take(path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as reading:
        while chunk := reading.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def install_lines(wheels: list[IndexedWheel]) -> dict[str, list[str]]:
    """For each split distribution (one offering device extras), the arches its newest
    version offers an extra for, in target order: a bare install gets the host alone."""
    lines: dict[str, list[str]] = {}
    for name, group in sorted(_by_name(wheels).items()):
        newest = max(group, key=lambda w: w.name.version)
        extras = device_extras(newest) - {DEVICE_ALL}
        if extras:
            arches = [e.removeprefix(DEVICE_EXTRA) for e in extras]
            lines[name] = sorted(arches, key=target_order)
    return lines


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, FILE_MODE)


def describe(name: str, arches: list[str]) -> str:
    """What a split project's page says: a bare install gets no device code."""
    return (
        f"Install {name} for one GPU by naming its extra: pip install '{name}[device-<arch>]' "
        f"(arch: {', '.join(arches)}), or [device-all] for every arch. A bare "
        f"'pip install {name}' installs the host code alone, with no device code for any GPU."
    )


def _write_pages(
    root: Path, wheels: list[IndexedWheel], installs: dict[str, list[str]]
) -> dict[str, list[str]]:
    """The HTML and JSON pages of every project, the ``.metadata`` files beside the wheels."""
    simple = root / "simple"
    simple.mkdir(mode=DIRECTORY_MODE)
    by_name: dict[str, list[IndexedWheel]] = defaultdict(list)
    for wheel in wheels:
        by_name[wheel.name.name].append(wheel)
    for wheel in wheels:
        (root / "files" / f"{wheel.filename}.metadata").write_bytes(wheel.metadata_bytes)
        os.chmod(root / "files" / f"{wheel.filename}.metadata", FILE_MODE)
    names = sorted(by_name)
    _write(simple / "index.html", _page("Simple index", [(f"{quote(n)}/", n, {}) for n in names]))
    _write(
        simple / "index.json",
        _json({"meta": {"api-version": API_VERSION}, "projects": [{"name": n} for n in names]}),
    )
    for name in names:
        project = simple / name
        project.mkdir(mode=DIRECTORY_MODE)
        ordered = sorted(by_name[name], key=lambda w: (w.name.version, w.filename))
        links, entries = [], []
        for wheel in ordered:
            core = hashlib.sha256(wheel.metadata_bytes).hexdigest()
            attributes = {"data-dist-info-metadata": f"sha256={core}"}
            attributes["data-core-metadata"] = f"sha256={core}"
            requires = wheel.metadata.requires_python
            # Percent-encoded: a local version's "+" read raw is a space to some servers.
            url = f"../../files/{quote(wheel.filename)}"
            entry: dict[str, Any] = {
                "filename": wheel.filename,
                "url": url,
                "hashes": {"sha256": wheel.sha256},
                "size": wheel.size,
                "core-metadata": {"sha256": core},
                "dist-info-metadata": {"sha256": core},
            }
            if requires is not None:
                attributes["data-requires-python"] = str(requires)
                entry["requires-python"] = str(requires)
            href = f"{url}#sha256={wheel.sha256}"
            links.append((href, wheel.filename, attributes))
            entries.append(entry)
        versions = sorted({w.name.version for w in ordered})
        description = describe(name, installs[name]) if name in installs else None
        _write(project / "index.html", _page(f"Links for {name}", links, description))
        document: dict[str, Any] = {
            "meta": {"api-version": API_VERSION},
            "name": name,
            "versions": [str(v) for v in versions],
            "files": entries,
        }
        if description is not None:  # PEP 691: a leading "_" is the index's own key
            document["_description"] = description
        _write(project / "index.json", _json(document))
    return {name: [w.filename for w in by_name[name]] for name in names}


def _page(
    title: str, links: list[tuple[str, str, dict[str, str]]], description: str | None = None
) -> str:
    lines = [
        "<!DOCTYPE html>",
        '<html><head><meta name="pypi:repository-version" content="1.1">',
        f"<title>{html.escape(title)}</title></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if description is not None:  # clients read the links only; people read this
        lines.append(f"<p>{html.escape(description)}</p>")
    for href, text, attributes in links:
        extra = "".join(f' {key}="{html.escape(value)}"' for key, value in attributes.items())
        lines.append(f'<a href="{html.escape(href)}"{extra}>{html.escape(text)}</a><br>')
    return "\n".join([*lines, "</body></html>", ""])


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
