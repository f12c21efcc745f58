"""What a run over a repository did, as named values: ``gfxpack repo`` and the stream
commands print them, and their ``--json`` is made from them alone
(docs/reference/json.md shows each shape).

A run (repo/run.py) reports a plain JSON object; :meth:`RunResult.from_run` is its one
reader, and ``as_json`` each value's one writer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class FormatSummary:
    """What one run did to one format's repository."""

    format: str  # deb or rpm
    added: tuple[str, ...]  # package files this run published there
    packages: int  # package files its indexes name now
    signed: bool  # whether its indexes are signed
    suite: str | None = None  # apt's suite (None: the format has none)
    debug: str | None = None  # where its debug-symbol packages are, when it has some
    pruned: tuple[str, ...] | None = None  # builds --retain removed (repo --retain only)
    # Package manager -> the line that points a machine at it (repo, stream promote).
    setup: Mapping[str, str] | None = None

    @classmethod
    def from_run(cls, summary: Mapping[str, Any]) -> FormatSummary:
        return cls(
            format=summary["format"],
            added=tuple(summary["added"]),
            packages=summary["packages"],
            signed=bool(summary.get("signed")),
            suite=summary.get("suite"),
            debug=summary.get("debug"),
        )

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "format": self.format,
            "added": list(self.added),
            "packages": self.packages,
        }
        if self.suite is not None:
            document["suite"] = self.suite
        document["signed"] = self.signed
        if self.debug is not None:
            document["debug"] = self.debug
        if self.pruned is not None:
            document["pruned"] = list(self.pruned)
        if self.setup is not None:
            document["setup"] = dict(self.setup)
        return document

    def details(self) -> list[str]:
        """What the one-line summary says in parentheses."""
        details = [f"suite {self.suite}"] if self.suite is not None else []
        details += ["signed"] if self.signed else []
        details += [f"debug symbols in {self.debug}"] if self.debug else []
        details += [f"pruned {', '.join(self.pruned)}"] if self.pruned else []
        return details


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What a run did: builds and package files removed from the indexes, pool files
    deleted, kept packages a forced removal left uninstallable, and each format
    published (see FormatSummary). With ``dry_run``: what it would do."""

    removed_versions: tuple[str, ...] = ()
    removed_files: tuple[str, ...] = ()
    deleted_files: tuple[str, ...] = ()
    uninstallable: tuple[str, ...] = ()
    formats: tuple[FormatSummary, ...] = ()
    # A refresh (stream refresh) says until when apt's Release is valid: seconds since
    # the epoch, None for no end.
    refresh: bool = False
    valid_until: int | None = None

    @classmethod
    def from_run(cls, result: Mapping[str, Any]) -> RunResult:
        """The result :func:`gfxpack.repo.run.apply` reports."""
        return cls(
            removed_versions=tuple(result["removed_versions"]),
            removed_files=tuple(result["removed_files"]),
            deleted_files=tuple(result["deleted_files"]),
            uninstallable=tuple(result["uninstallable"]),
            formats=tuple(FormatSummary.from_run(s) for s in result["formats"]),
        )

    @property
    def published(self) -> tuple[str, ...]:
        """The formats whose indexes this run wrote."""
        return tuple(summary.format for summary in self.formats)

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "removed_versions": list(self.removed_versions),
            "removed_files": list(self.removed_files),
            "deleted_files": list(self.deleted_files),
            "uninstallable": list(self.uninstallable),
            "formats": [summary.as_json() for summary in self.formats],
        }
        if self.refresh:
            document["valid_until"] = self.valid_until
        return document


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishResult:
    """What ``gfxpack repo`` did: each format published (its ``--json`` is the list of
    their summaries) and the builds its retention removed."""

    formats: tuple[FormatSummary, ...]
    removed_versions: tuple[str, ...] = ()

    def as_json(self) -> list[dict[str, Any]]:
        return [summary.as_json() for summary in self.formats]
