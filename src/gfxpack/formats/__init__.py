"""Package formats behind one small interface.

A format is a :class:`PackageFormat` (package_format.py): :data:`DEB` or
:data:`RPM`, owning every DEB/RPM difference, with ``filename(info)`` and
``write(info, out)``; ``info`` is a :class:`PackageInfo`: everything one
package needs, already in that format's spelling. The planner never knows
which format its packages become; the writers are ``deb.py`` and ``rpm.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gfxpack.formats.compress import Compression
from gfxpack.formats.package_format import DEB, FORMATS, RPM, PackageFormat, format_named
from gfxpack.formats.payload import Entry

__all__ = ["DEB", "FORMATS", "RPM", "PackageFormat", "PackageInfo", "format_named"]


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
