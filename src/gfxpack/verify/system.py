"""The installed packages a resolution starts from (``gfxpack verify --system``).

A system is a list of deb822 stanzas: ``Package``, ``Version``, optional
``Architecture``, ``Provides`` and ``Depends``, with relations in the syntax of
the format being verified. A dpkg status file is one as it stands (stanzas
whose ``Status`` is not installed are skipped); the bundled files describe a
Debian 12 and an Enterprise Linux 9 machine with the system packages the example
release and TheRock's package.json depend on (with g++ installed, as a developer's
machine has).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from gfxpack.errors import GfxpackError
from gfxpack.formats import PackageFormat
from gfxpack.regular_files import UnreadableFile, read_small_text
from gfxpack.relations import InvalidRelation, Relation
from gfxpack.repo.debfile import parse_stanzas

# A dpkg status file of a large workstation is a few MiB.
MAX_SYSTEM_BYTES = 64 << 20


class VerifyError(GfxpackError):
    pass


@dataclass(frozen=True, slots=True)
class SystemPackage:
    name: str
    version: str
    arch: str
    provides: tuple[Relation, ...]
    depends: tuple[Relation, ...]


def bundled(fmt: PackageFormat) -> str:
    """The text of the bundled system list for ``fmt``."""
    return resources.files("gfxpack.verify").joinpath(f"system-{fmt}.txt").read_text("utf-8")


def read_system(path: Path | None, fmt: PackageFormat) -> tuple[str, list[SystemPackage]]:
    """(description, packages) of ``path``, or of the bundled list when ``path`` is None."""
    if path is None:
        label, text = f"bundled {fmt} system list", bundled(fmt)
    else:
        label = str(path)
        try:
            # A FIFO is refused, never opened: reading one would wait for a writer forever.
            text = read_small_text(path, MAX_SYSTEM_BYTES, "system list")
        except UnreadableFile as e:
            raise VerifyError(str(e)) from None
    packages = []
    for number, stanza in enumerate(parse_stanzas(text), start=1):
        status = stanza.get("Status")
        if status is not None and not status.endswith(" installed"):
            continue
        name, version = stanza.get("Package"), stanza.get("Version")
        if not name or not version:
            raise VerifyError(
                f"{label}: stanza {number}{f' ({name})' if name else ''}: expected "
                "'Package:' and 'Version:' fields (deb822, like a dpkg status file)"
            )
        relations = {}
        for field in ("Provides", "Depends", "Pre-Depends"):
            try:
                relations[field] = fmt.parse_field(stanza.get(field, ""))
            except InvalidRelation as e:
                raise VerifyError(f"{label}: package {name}: {field}: {e}") from None
        arch = stanza.get("Architecture", "all")
        packages.append(
            SystemPackage(
                name,
                version,
                arch,
                relations["Provides"],
                relations["Depends"] + relations["Pre-Depends"],
            )
        )
    return label, packages
