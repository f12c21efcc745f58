"""Package formats behind one small interface.

A format is a module with ``filename(info) -> str`` and ``write(info, out)``;
``info`` is a :class:`PackageInfo`: everything one package needs, already in
that format's spelling. The planner never knows which format its packages
become; the DEB/RPM differences live in ``deb.py`` and ``rpm.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType

from gfxpack.formats.compress import Compression
from gfxpack.formats.payload import Entry


@dataclass(frozen=True, slots=True)
class PackageInfo:
    name: str
    version: str  # upstream version: 8.2.0
    release: str  # DEB revision / RPM Release: 1
    arch: str  # amd64 / x86_64
    summary: str
    description: str = ""
    maintainer: str = ""
    homepage: str = ""
    license: str = ""
    group: str = ""
    vendor: str = ""
    section: str = ""
    priority: str = ""
    depends: tuple[str, ...] = ()
    recommends: tuple[str, ...] = ()
    suggests: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()  # RPM: Obsoletes
    entries: tuple[Entry, ...] = ()  # files, symlinks and directories, sorted by path
    prefix: str = "/opt/rocm/core"
    scripts: Mapping[str, str] = field(default_factory=dict)  # preinst, postinst, prerm, postrm
    mtime: int = 0  # SOURCE_DATE_EPOCH
    compression: Compression = field(default_factory=Compression)
    # RPM %changelog entries (time, author and version, text), newest first; empty: one
    # is generated from the version and the maintainer.
    changelog: tuple[tuple[int, str, str], ...] = ()

    @property
    def full_version(self) -> str:
        return f"{self.version}-{self.release}"


def writer(fmt: str) -> ModuleType:
    """The module writing ``fmt`` ("deb" or "rpm")."""
    from gfxpack.formats import deb, rpm

    return {"deb": deb, "rpm": rpm}[fmt]


FORMATS = ("deb", "rpm")
