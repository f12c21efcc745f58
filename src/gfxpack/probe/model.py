"""What ``gfxpack probe`` says about one library: the values its checks return.

A :class:`Rule` is one runtime's search rule as the table in :mod:`gfxpack.probe.rules`
states it, with the upstream source it comes from and, where the source does not
settle a point, what probe assumes. A :class:`Finding` is one library checked for
one device: ``found`` (the file the runtime would use), ``missing`` (what it looks
for and where) or ``shadowed`` (another arch's file where this arch's should be, or
this arch's file where the runtime does not look).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from gfxpack.errors import GfxpackError


class ProbeError(GfxpackError, ValueError):
    """A root or device probe cannot check (one line naming it)."""


class Status(enum.Enum):
    FOUND = "found"
    MISSING = "missing"
    SHADOWED = "shadowed"


@dataclass(frozen=True)
class Rule:
    """One family's search rule, as the runtime's own source states it."""

    family: str  # the key findings name: kpack, tensile, miopen, rocfft, aotriton, hipdnn
    title: str  # the libraries it covers
    looks_for: str  # the files, with <arch> for the device's processor
    search: str  # where and in which order the runtime looks
    source: str  # the upstream source of the rule
    assumed: str = ""  # what probe assumes where no source settles it

    def as_json(self) -> dict[str, str]:
        return {
            "family": self.family,
            "title": self.title,
            "looks_for": self.looks_for,
            "search": self.search,
            "source": self.source,
            "assumed": self.assumed,
        }


@dataclass(frozen=True)
class Finding:
    """One library of the root checked for one device."""

    library: str  # as shown: relative to the root, what it is in parentheses
    family: str  # the Rule's key
    device: str  # the target id checked
    status: Status
    file: str = ""  # found: the file used; shadowed: the file in the way or out of reach
    detail: str = ""  # missing: what it looks for and where; shadowed: why it does not count
    assumed: str = ""  # the part of the rule this answer rests on that no source settles

    def line(self) -> str:
        """``found    lib/x (what it is): gfx942: ...``: one line, as the terminal shows it."""
        what = self.file if self.status is Status.FOUND else self.detail
        if self.status is Status.SHADOWED and self.file:
            what = f"{self.file}: {self.detail}"
        assumed = f"; rule assumed: {self.assumed}" if self.assumed else ""
        return f"{self.status.value:<8} {self.library}: {self.device}: {what}{assumed}"

    def as_json(self, rule: Rule) -> dict[str, Any]:
        return {
            "library": self.library,
            "family": self.family,
            "device": self.device,
            "status": self.status.value,
            "file": self.file or None,
            "detail": self.detail or None,
            "rule": rule.search,
            "source": rule.source,
            "assumed": self.assumed or None,
        }


@dataclass
class ProbeReport:
    """Every library of a root checked for every device."""

    root: str
    devices: list[str]
    findings: list[Finding] = field(default_factory=list)

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if f.status is not Status.FOUND]

    @property
    def ok(self) -> bool:
        return bool(self.findings) and not self.failed

    def summary(self) -> str:
        """The last line: what was checked and how it went."""
        counts = ", ".join(
            f"{sum(1 for f in self.findings if f.status is s)} {s.value}" for s in Status
        )
        return (
            f"{len(self.findings)} check(s) of {self.root} for {', '.join(self.devices)}: {counts}"
        )

    def error(self) -> str | None:
        """Why the probe fails, or None when every library finds its data."""
        if self.ok:
            return None
        return (
            f"{len(self.failed)} of {len(self.findings)} check(s) of {self.root} do not find "
            f"the data for {', '.join(self.devices)} (missing or shadowed)"
        )
