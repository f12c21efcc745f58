"""A repository and a system loaded into one libsolv pool.

The rpm-md side is read by libsolv itself (``repo.add_rpmmd``). The ``solv``
wheel on PyPI is built without Debian support, so an apt repository's
``Packages`` stanzas become solvables here: Depends and Pre-Depends are
requirements (``a | b`` an OR), Recommends recommendations, Conflicts and
Breaks conflicts, Provides provisions. Versions then compare by RPM rules,
which agree with Debian's for the numeric ``X.Y.Z-R`` versions (epochs and
``~`` included) that releases use; Debian's special ordering of letters
against ``+`` and ``.`` is not reproduced.

Both indexes are checked against the digests of their ``Release`` or
``repomd.xml`` first, so a half-updated repository is an error, not a
wrong answer. Which files each package installs (``Contents-<arch>.gz``,
``filelists.xml.gz``) is read only when a check asks for it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import xml.etree.ElementTree as ET
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from functools import cached_property, reduce
from pathlib import Path

import solv

from gfxpack.formats import DEB, PackageFormat
from gfxpack.regular_files import read_regular
from gfxpack.relations import InvalidRelation, Relation, render_deb
from gfxpack.repo.debfile import parse_stanzas
from gfxpack.verify.integrity import (
    SHA256_HEX,
    Keyring,
    Listed,
    checked_release,
    checked_repomd,
    cleartext,
    read_repomd,
)
from gfxpack.verify.system import SystemPackage, VerifyError

MACHINE = "x86_64"
_FLAGS = {
    "<": solv.REL_LT,
    "<=": solv.REL_LT | solv.REL_EQ,
    "=": solv.REL_EQ,
    ">=": solv.REL_GT | solv.REL_EQ,
    ">": solv.REL_GT,
}
_FILELISTS_NS = "{http://linux.duke.edu/metadata/filelists}"


def locate(root: Path, fmt: PackageFormat) -> Path | None:
    """The repository of ``fmt`` under ``root``: ``root`` itself or the ``apt``/``rpm``
    directory ``gfxpack repo`` makes."""
    for candidate in (root, root / fmt.repo_dir):
        if (candidate / fmt.repo_marker).is_dir():
            return candidate
    return None


@dataclass
class Universe:
    """One format's repository plus the installed system, ready to solve."""

    fmt: PackageFormat
    root: Path
    label: str
    pool: solv.Pool
    repo: solv.Repo
    system: solv.Repo
    system_label: str
    # solvable id -> file of the package, relative to root (DEB; RPM asks libsolv)
    _locations: dict[int, str] = field(default_factory=dict)
    _contents: list[tuple[Path, Path, Listed]] = field(default_factory=list)
    _filelists: Path | None = None
    # dependency id -> the relation as the format writes it (DEB; libsolv prints RPM syntax)
    dep_text: dict[int, str] = field(default_factory=dict)
    # how the indexes were vouched for (signatures), in words
    trust: str = ""
    # solvable id -> (Size, SHA256) of its Packages stanza (DEB; RPM asks libsolv)
    _listed: dict[int, tuple[str, str]] = field(default_factory=dict)
    # when apt stops accepting the indexes (the Release's Valid-Until), in Unix time
    valid_until: int | None = None

    # solvable id -> ((dependency id, provider ids), ...) of its requirements; the
    # pool never changes once loaded, so each is asked of libsolv once.
    _requirements: dict[int, tuple[tuple[int, tuple[int, ...]], ...]] = field(default_factory=dict)
    _names: dict[int, tuple[str, str]] = field(default_factory=dict)

    def requirements(self, solvable_id: int) -> tuple[tuple[int, tuple[int, ...]], ...]:
        found = self._requirements.get(solvable_id)
        if found is None:
            pool = self.pool
            found = self._requirements[solvable_id] = tuple(
                (dep.id, tuple(p.id for p in pool.whatprovides(dep.id)))
                for dep in pool.id2solvable(solvable_id).lookup_deparray(solv.SOLVABLE_REQUIRES)
            )
        return found

    def name_evr(self, solvable_id: int) -> tuple[str, str]:
        found = self._names.get(solvable_id)
        if found is None:
            solvable = self.pool.id2solvable(solvable_id)
            found = self._names[solvable_id] = (solvable.name, solvable.evr)
        return found

    def nevr(self, solvable_id: int) -> str:
        return "{} ({})".format(*self.name_evr(solvable_id))

    def newest(self, solvables: Iterable[solv.XSolvable]) -> solv.XSolvable:
        """The solvable of the highest version, by the pool's rules (the first of equals).
        The ``solv`` binding compares versions on a solvable, not on the pool."""
        best: solv.XSolvable | None = None
        for solvable in solvables:
            if best is None or solvable.evrcmp(best) > 0:
                best = solvable
        if best is None:
            raise ValueError("no solvables to compare")
        return best

    def show_arch(self, arch: str) -> str:
        return self.fmt.shown_arch(arch)

    def show_dep(self, dep: int) -> str:
        return self.dep_text.get(dep) or self.pool.dep2str(dep)

    def packages(self) -> list[solv.XSolvable]:
        return list(self.repo.solvables_iter())

    def location(self, solvable: solv.XSolvable) -> str:
        # An apt index records each file's location here; libsolv keeps rpm-md's.
        found = self._locations.get(solvable.id)
        if found is None:
            location: str = solvable.lookup_location()[0]
            return location
        return found

    def names_unknown(self, dep: int) -> bool:
        """Whether no package of the repository or the system provides any name the
        dependency mentions, at any version (a missing package, not a version mismatch)."""
        try:
            relations = self.fmt.parse_field(self.show_dep(dep))
        except InvalidRelation:
            return False
        names = [name for relation in relations for name in relation.names()]
        return bool(names) and not any(
            self.pool.whatprovides(self.pool.str2id(name, False)) for name in names
        )

    @property
    def has_file_lists(self) -> bool:
        """Whether the repository says which files its packages install."""
        # An apt repository's Contents, rpm-md's filelists.
        return bool(self._contents) or self._filelists is not None

    def package_files(self) -> Iterator[tuple[str, Listed]]:
        """(path under root, size and sha256 the index gives) of every package file."""
        for solvable in self.repo.solvables_iter():
            where = self.location(solvable)
            # An apt index's Size and SHA256 are recorded here; libsolv keeps rpm-md's.
            listed = self._listed.get(solvable.id)
            if listed is not None:
                size, sha256 = listed
            else:
                checksum = solvable.lookup_checksum(solv.SOLVABLE_CHECKSUM)
                size = str(solvable.lookup_num(solv.SOLVABLE_DOWNLOADSIZE))
                sha256 = checksum.hex() if checksum and checksum.typestr() == "sha256" else ""
            if not size.isdigit() or not size.isascii() or not SHA256_HEX.match(sha256):
                raise VerifyError(
                    f"{self.label}: {solvable.name} ({solvable.evr}) has no size and sha256 "
                    "in the index"
                )
            yield where, Listed(sha256, int(size))

    @cached_property
    def files(self) -> dict[int, frozenset[str]]:
        """Solvable id -> the paths it installs, for packages with any (directories
        excepted: RPM lets packages share them)."""
        files = {}
        # Only the loaded format's list is read: the other is empty.
        deb_files, rpm_files = self._deb_files, self._rpm_files
        for solvable in self.repo.solvables_iter():
            # Contents lists paths by package name: a name's versions share one set.
            paths = deb_files.get(solvable.name) or rpm_files.get(
                (solvable.name, solvable.evr, solvable.arch)
            )
            if paths:
                files[solvable.id] = paths
        return files

    @cached_property
    def _deb_files(self) -> dict[str, frozenset[str]]:
        owners: dict[str, set[str]] = defaultdict(set)
        for contents, release, listed in self._contents:
            data = _verified(contents, release, "sha256", listed.sha256, "digest", listed.size)
            # Read line by line: the text is many times the compressed size.
            text = io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(data)), "utf-8")
            try:
                for line in text:
                    path, _, locations = line.rstrip("\n").rpartition(" ")
                    for location in locations.split(","):
                        owners[location.rpartition("/")[2]].add("/" + path.strip())
            except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
                raise VerifyError(f"{contents}: not a gzip-compressed UTF-8 text: {e}") from None
        return {name: frozenset(paths) for name, paths in owners.items()}

    @cached_property
    def _rpm_files(self) -> dict[tuple[str, str, str], frozenset[str]]:
        if self._filelists is None:
            return {}
        try:
            return self._read_filelists(self._filelists)
        except (OSError, EOFError, zlib.error, ET.ParseError, LookupError, ValueError) as e:
            raise VerifyError(f"{self._filelists}: not a readable filelists: {e}") from None

    @staticmethod
    def _read_filelists(filelists: Path) -> dict[tuple[str, str, str], frozenset[str]]:
        files: dict[tuple[str, str, str], frozenset[str]] = {}
        with gzip.open(filelists) as stream:
            for _, element in ET.iterparse(stream):
                if element.tag != f"{_FILELISTS_NS}package":
                    continue
                version = element.find(f"{_FILELISTS_NS}version")
                name, arch = element.get("name"), element.get("arch")
                if version is None or name is None or arch is None:
                    raise VerifyError(f"{filelists}: a package without name, arch or version")
                epoch, ver, rel = (version.get(k) for k in ("epoch", "ver", "rel"))
                evr = f"{epoch + ':' if epoch not in (None, '0') else ''}{ver}-{rel}"
                files[name, evr, arch] = frozenset(
                    f.text
                    for f in element.iter(f"{_FILELISTS_NS}file")
                    if f.text is not None and f.get("type") != "dir"
                )
                element.clear()
        return files


def load(
    root: Path,
    fmt: PackageFormat,
    system: tuple[str, list[SystemPackage]],
    suite: str | None = None,
    keyring: Keyring | None = None,
) -> Universe:
    """The repository of ``fmt`` under ``root`` and ``system`` in a fresh pool; its
    signatures are checked against ``keyring`` when given."""
    located = locate(root, fmt)
    if located is None:
        marker = f"{fmt.repo_marker}/"
        raise VerifyError(
            f"{root}: no {fmt} repository here (no {marker}, and no {fmt.repo_dir}/{marker})"
        )
    pool = solv.Pool()
    pool.setarch(MACHINE)
    installed = pool.add_repo("@System")
    pool.installed = installed
    repo = pool.add_repo(str(located))
    universe = Universe(fmt, located, str(located), pool, repo, installed, system[0])
    # What libsolv cannot print in the format's own syntax is remembered as rendered.
    deps = DepIds(pool, {} if fmt.solv_prints_relations else universe.dep_text)
    for package in system[1]:
        solvable = installed.add_solvable()
        _describe(solvable, pool, package.name, package.version, fmt.solv_arch(package.arch))
        for relation in package.provides:
            solvable.add_provides(deps.of(relation))
        for relation in package.depends:
            solvable.add_requires(deps.of(relation))
    universe.label = _LOADERS[fmt.name](universe, suite, deps, keyring)
    installed.internalize()
    repo.internalize()
    pool.addfileprovides()
    pool.createwhatprovides()
    return universe


def _describe(
    solvable: solv.XSolvable, pool: solv.Pool, name: str, version: str, arch: str
) -> None:
    solvable.name, solvable.evr, solvable.arch = name, version, arch
    solvable.add_provides(pool.rel2id(solvable.nameid, solvable.evrid, solv.REL_EQ))


class DepIds:
    """libsolv dependency ids for relations, memoised (releases repeat the same ones)."""

    def __init__(self, pool: solv.Pool, texts: dict[int, str]) -> None:
        self.pool = pool
        self.memo: dict[Relation, int] = {}
        self.texts = texts
        self.fields: dict[str, tuple[int, ...]] = {}

    def of_field(self, text: str) -> tuple[int, ...]:
        """Ids of a whole Debian relation field, memoised by its text: big repositories
        repeat fields verbatim (every device of a package has the same Depends)."""
        ids = self.fields.get(text)
        if ids is None:
            ids = self.fields[text] = tuple(self.of(r) for r in DEB.parse_field(text))
        return ids

    def of(self, relation: Relation) -> int:
        dep = self.memo.get(relation)
        if dep is None:
            pool = self.pool
            if relation.opaque is not None:
                dep = pool.parserpmrichdep(relation.opaque)
            else:
                atoms = [
                    pool.rel2id(pool.str2id(a.name), pool.str2id(a.version), _FLAGS[a.op])
                    if a.op
                    else pool.str2id(a.name)
                    for a in relation.atoms
                ]
                dep = reduce(lambda left, right: pool.rel2id(left, right, solv.REL_OR), atoms)
            self.memo[relation] = dep
            self.texts[dep] = render_deb(relation)
        return dep


# --- apt ----------------------------------------------------------------------------------


def _verified(
    path: Path, index: Path, algorithm: str, digest: str, term: str, size: int | None = None
) -> bytes:
    """The bytes of ``path``, which ``index`` (Release or repomd.xml) lists with ``digest``
    (and ``size``); ``term`` is what that index calls its digests."""
    if algorithm not in ("sha256", "sha512", "sha384", "sha224", "sha1", "md5"):
        raise VerifyError(f"{index}: unknown {term} type {algorithm!r} for {path.name}")
    try:
        if size is not None and path.stat().st_size != size:
            raise VerifyError(f"{path}: not the {size} bytes {index} lists")
        # Regular files only: a FIFO would hang the read, a device never end it.
        data = read_regular(path)
    except OSError as e:
        raise VerifyError(f"{path}: {e.strerror} ({index} lists it)") from None
    if hashlib.new(algorithm, data).hexdigest() != digest:
        raise VerifyError(
            f"{path}: does not match the {term} {index} lists "
            "(a half-updated repository? publish it again)"
        )
    return data


def pick_suite(dists: Path, suite: str | None) -> str:
    """The suite of ``dists`` to read: ``suite``, which must be there, else the only one."""
    suites = sorted(
        d.name for d in dists.iterdir() if (d / "Release").is_file() or (d / "InRelease").is_file()
    )
    if suite is not None:
        if suite not in suites:
            raise VerifyError(f"{dists}: no suite {suite!r} (there are: {', '.join(suites)})")
        return suite
    if len(suites) != 1:
        raise VerifyError(
            f"{dists}: {len(suites)} suites ({', '.join(suites) or 'none'}); "
            "choose one with --suite"
        )
    return suites[0]


def load_apt(universe: Universe, suite: str | None, deps: DepIds, keyring: Keyring | None) -> str:
    """Read the apt repository of one suite (verified against its Release); its label."""
    dists = universe.root / "dists"
    suite = pick_suite(dists, suite)
    release = dists / suite / "Release"
    digests, universe.trust = checked_release(dists / suite, keyring)
    universe.valid_until = _valid_until(dists / suite)
    seen: set[str] = set()
    for name in sorted({n.rsplit("/", 1)[0] for n in digests if "/binary-" in n}):
        # Each binary-<arch> lists the arch-all packages again: read those once.
        for suffix, decompress in (("", bytes), (".xz", lzma.decompress), (".gz", gzip.decompress)):
            listed = f"{name}/Packages{suffix}"
            packages = dists / suite / listed
            if listed in digests and packages.exists():
                entry = digests[listed]
                data = _verified(packages, release, "sha256", entry.sha256, "digest", entry.size)
                try:
                    text = decompress(data).decode("utf-8")
                except (lzma.LZMAError, OSError, EOFError, zlib.error) as e:
                    raise VerifyError(f"{packages}: cannot decompress: {e}") from None
                except UnicodeDecodeError as e:
                    raise VerifyError(f"{packages}: not UTF-8 ({e.reason})") from None
                break
        else:
            raise VerifyError(f"{dists / suite / name}: no Packages index that {release} lists")
        for stanza in parse_stanzas(text):
            filename = stanza.get("Filename", "")  # _add_deb rejects a stanza without one
            if filename in seen:
                continue
            seen.add(filename)
            _add_deb(universe, stanza, deps, packages)
    universe._contents = [
        (dists / suite / n, release, digests[n])
        for n in sorted(digests)
        if "/Contents-" in n and (dists / suite / n).exists()
    ]
    return f"{universe.root} (suite {suite})"


def _valid_until(dist: Path) -> int | None:
    """The Valid-Until of the Release in ``dist`` (InRelease's when there is no Release,
    checked_release having made sure they agree), in Unix time; None without one."""
    release, inrelease = dist / "Release", dist / "InRelease"
    try:
        if release.is_file():
            where, data = release, release.read_bytes()
        else:
            where, data = inrelease, cleartext(inrelease.read_bytes(), inrelease)
    except OSError as e:
        raise VerifyError(f"{dist}: cannot read: {e.strerror}") from None
    stanzas = parse_stanzas(data.decode("utf-8", errors="replace"))
    text = stanzas[0].get("Valid-Until") if stanzas else None
    if text is None:
        return None
    try:
        return int(parsedate_to_datetime(text).timestamp())
    except (TypeError, ValueError, IndexError, OverflowError):
        raise VerifyError(f"{where}: Valid-Until {text!r} is not a date") from None


def _add_deb(universe: Universe, stanza: dict[str, str], deps: DepIds, index: Path) -> None:
    name, version = stanza.get("Package"), stanza.get("Version")
    if not name or not version or not stanza.get("Filename"):
        raise VerifyError(
            f"{index}: a stanza without Package, Version or Filename ({name or 'unnamed'})"
        )
    solvable = universe.repo.add_solvable()
    _describe(
        solvable, universe.pool, name, version, DEB.solv_arch(stanza.get("Architecture", "all"))
    )
    universe._locations[solvable.id] = stanza["Filename"]
    universe._listed[solvable.id] = (stanza.get("Size", ""), stanza.get("SHA256", ""))
    adders = (
        (("Depends", "Pre-Depends"), solvable.add_requires),
        (("Recommends",), solvable.add_recommends),
        (("Conflicts", "Breaks"), solvable.add_conflicts),
        (("Provides",), solvable.add_provides),
    )
    for fields, add in adders:
        for field_name in fields:
            text = stanza.get(field_name)
            if not text:
                continue
            try:
                ids = deps.of_field(text)
            except InvalidRelation as e:
                raise VerifyError(f"{index}: package {name}: {field_name}: {e}") from None
            for dep in ids:
                add(dep)


# --- rpm-md -------------------------------------------------------------------------------


def load_rpmmd(universe: Universe, keyring: Keyring | None) -> None:
    """Read the rpm-md repository (verified against repomd.xml) with libsolv."""
    repomd_path = universe.root / "repodata" / "repomd.xml"
    universe.trust = checked_repomd(repomd_path.parent, keyring)
    try:
        records = read_repomd(read_regular(repomd_path), repomd_path)
    except OSError as e:
        raise VerifyError(f"{repomd_path}: cannot read: {e.strerror}") from None
    if "primary" not in records:
        raise VerifyError(f"{repomd_path}: lists no primary metadata")
    paths = {}
    for kind in ("primary", "filelists"):
        record = records.get(kind)
        if record is None:
            continue
        path = universe.root / record.location
        _verified(path, repomd_path, record.algorithm, record.digest, "checksum")
        paths[kind] = path
    stream = solv.xfopen(str(paths["primary"]))
    try:
        if not universe.repo.add_rpmmd(stream, None, 0):
            raise VerifyError(f"{paths['primary']}: libsolv cannot read it: {universe.pool.errstr}")
    finally:
        stream.close()
    universe._filelists = paths.get("filelists")


def _load_rpmmd_labelled(
    universe: Universe, suite: str | None, deps: DepIds, keyring: Keyring | None
) -> str:
    """:func:`load_rpmmd` as a repository loader: rpm-md has no suites; its label is
    the universe's."""
    load_rpmmd(universe, keyring)
    return universe.label


# format name -> how its repository is read into a universe: its label
_LOADERS: dict[str, Callable[[Universe, str | None, DepIds, Keyring | None], str]] = {
    "deb": load_apt,
    "rpm": _load_rpmmd_labelled,
}
