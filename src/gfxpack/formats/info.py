"""What one package needs to be written, already in its format's spelling."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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
    # preinst, postinst, prerm, postrm; RPM also transfiletriggerin (see triggers)
    scripts: Mapping[str, str] = field(default_factory=dict)
    # File triggers: DEB, the lines of the triggers control member; RPM, the path
    # prefixes of the %transfiletriggerin scriptlet (scripts["transfiletriggerin"]).
    triggers: tuple[str, ...] = ()
    # DEB: further control fields, in order (a debug package's Auto-Built-Package and
    # Build-Ids, formats/debug_symbols.py); RPM has no such fields.
    control_fields: tuple[tuple[str, str], ...] = ()
    mtime: int = 0  # SOURCE_DATE_EPOCH
    compression: Compression = field(default_factory=Compression)
    # RPM %changelog entries (time, author and version, text), newest first; empty: one
    # is generated from the version and the maintainer.
    changelog: tuple[tuple[int, str, str], ...] = ()

    @property
    def full_version(self) -> str:
        return f"{self.version}-{self.release}"
