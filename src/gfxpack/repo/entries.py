"""What each published package contributes to its repository's indexes, kept in the
pool's record (``.gfxpack-pool.json``) beside its size, sha256 and stamp.

Adding a build to a repository then reads only the new packages: the entries of the
packages already published come from the record, never from their pool files. The apt
side keeps each .deb's Packages stanza and paths (repo/apt.py); the rpm-md side keeps
each .rpm's primary, filelists and other XML, as createrepo_c writes them, and its
NEVRA under ``rpmmd`` (here). A record an older gfxpack wrote, without them, has each
missing entry read from its pool file once and stored by the run's record.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import createrepo_c as cr

# The key of a pool record's entry under which an .rpm's repodata is kept.
RPMMD = "rpmmd"
KINDS = ("primary", "filelists", "other")


@dataclass(frozen=True, slots=True)
class RpmEntry:
    """One .rpm's share of the repodata: a snippet of each XML file, and its NEVRA."""

    nevra: str
    primary: str
    filelists: str
    other: str

    def chunk(self, kind: str) -> str:
        """Its snippet of the ``kind`` XML file (one of KINDS)."""
        text: str = getattr(self, kind)
        return text

    def as_json(self) -> dict[str, str]:
        return {"nevra": self.nevra, **{kind: self.chunk(kind) for kind in KINDS}}


def rpm_entry(package: cr.Package) -> RpmEntry:
    """The entry of a package createrepo_c read."""
    # Imported here: createrepo_c is slow to import, and apt's side (which verify, why
    # and diff load) needs only retained().
    import createrepo_c as cr

    return RpmEntry(
        str(package.nevra()),
        cr.xml_dump_primary(package),
        cr.xml_dump_filelists(package),
        cr.xml_dump_other(package),
    )


def _from_record(entry: dict[str, Any]) -> RpmEntry | None:
    kept = entry.get(RPMMD)
    if not isinstance(kept, dict) or not all(
        isinstance(kept.get(key), str) for key in ("nevra", *KINDS)
    ):
        return None
    return RpmEntry(kept["nevra"], kept["primary"], kept["filelists"], kept["other"])


def rpm_entries(
    record: dict[str, dict[str, Any]], pool: Path, read: Callable[[Path, str], cr.Package]
) -> dict[str, RpmEntry]:
    """The entry of every package of ``record`` (the record of ``pool``): kept in the
    record, else read from its pool file with ``read(path, name)`` and kept there."""
    entries = {}
    for name, entry in record.items():
        kept = _from_record(entry)
        if kept is None:
            kept = rpm_entry(read(pool / name, name))
            entry[RPMMD] = kept.as_json()
        entries[name] = kept
    return entries


def new_rpm_entry(entry: dict[str, Any], package: cr.Package) -> RpmEntry:
    """The entry of a package being added, kept in its record ``entry``."""
    made = rpm_entry(package)
    entry[RPMMD] = made.as_json()
    return made


def retained(record: dict[str, dict[str, Any]], drop: Collection[str]) -> dict[str, dict[str, Any]]:
    """``record`` without the files named in ``drop``: what the indexes a prune, a
    removal or a promotion writes are made from."""
    return {name: entry for name, entry in record.items() if name not in drop}
