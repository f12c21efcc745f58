"""One object per package format, owning everything that differs between DEB and RPM.

The rest of gfxpack is written once for both: it asks the format how to spell
a name, which package.json keys hold its relations, how to render them, which
architecture field it reads, and how its files are named and written. Only
:data:`DEB` and :data:`RPM` exist; :data:`FORMATS` lists them in the order every
output uses. What a format means to a layer above (its repository: repo/backends.py;
reading a repository back: verify/universe.py; its inventory entry: inventory.py;
signing: sign.py; maintainer scripts: alternatives.py; try-install's stand-ins:
trial/stand_ins.py) lives there, looked up by :attr:`PackageFormat.name`: this module
imports nothing above formats/.

>>> DEB.spell("amdrocm-core-devel"), RPM.spell("amdrocm-core-devel")
('amdrocm-core-dev', 'amdrocm-core-devel')
>>> DEB.render_atom("python3", ">=", "3.6.8"), RPM.render_atom("python3", ">=", "3.6.8")
('python3 (>= 3.6.8)', 'python3 >= 3.6.8')
>>> format_named("rpm") is RPM
True
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from gfxpack import relations
from gfxpack._io import Writable
from gfxpack.errors import GfxpackError
from gfxpack.relations import Relation

if TYPE_CHECKING:
    from gfxpack.formats.info import PackageInfo


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


@dataclass(frozen=True, eq=False)
class PackageFormat(abc.ABC):
    """A package format: its spelling, relation syntax, fields and files."""

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

    def arch(self, spec: object) -> str:
        """The architecture a package.json spec (a config.PackageSpec) gives this format."""
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


class _Deb(PackageFormat):
    def join_alternatives(self, parts: Sequence[str]) -> str:
        return " | ".join(parts)

    def filename(self, info: PackageInfo) -> str:
        from gfxpack.formats import deb

        return deb.filename(info)

    def write(self, info: PackageInfo, out: Writable, scratch: str | None = None) -> None:
        from gfxpack.formats import deb

        deb.write(info, out, scratch)


class _Rpm(PackageFormat):
    def join_alternatives(self, parts: Sequence[str]) -> str:
        return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"

    def filename(self, info: PackageInfo) -> str:
        from gfxpack.formats import rpm

        return rpm.filename(info)

    def write(self, info: PackageInfo, out: Writable, scratch: str | None = None) -> None:
        from gfxpack.formats import rpm

        rpm.write(info, out, scratch)


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
