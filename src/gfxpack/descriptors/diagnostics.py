"""Diagnostics: every problem the loader meets, as data (spec descriptors.md section 12).

Loading is total: nothing raises; each problem becomes a :class:`Diagnostic`
with a severity, a stable code, the path (or root) and the message text, and
is also sent to the ``gfxpack.descriptors`` logger.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

LOG = logging.getLogger("gfxpack.descriptors")
LOG.addHandler(logging.NullHandler())  # a library logs; the application decides what shows
PREFIX = "descriptor loader: "


class Level(IntEnum):
    """How serious a diagnostic is (logging's levels); ``--level`` filters by it."""

    INFO = 20
    WARN = 30
    ERROR = 40

    @classmethod
    def parse(cls, text: str) -> Level:
        return {"info": cls.INFO, "warn": cls.WARN, "warning": cls.WARN, "error": cls.ERROR}[
            text.lower()
        ]


# Where a diagnostic points: a path (kept as text), or nowhere in particular.
PathText = str | os.PathLike[str] | None


@dataclass(slots=True)  # not frozen: one is made per file loaded, and frozen costs
class Diagnostic:
    severity: Level
    code: str
    path: str | None
    message: str

    def line(self) -> str:
        return f"{PREFIX}{self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity.name,
            "code": self.code,
            "path": self.path,
            "message": self.message,
        }


class Diagnostics:
    """An ordered list of diagnostics, logged as they arrive."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, severity: Level, code: str, path: PathText, message: str) -> None:
        diagnostic = Diagnostic(severity, code, str(path) if path is not None else None, message)
        self.items.append(diagnostic)
        if LOG.isEnabledFor(severity):
            LOG.log(int(severity), "%s [%s]", diagnostic.line(), code)

    def info(self, code: str, path: PathText, message: str) -> None:
        self.add(Level.INFO, code, path, message)

    def warn(self, code: str, path: PathText, message: str) -> None:
        self.add(Level.WARN, code, path, message)

    def error(self, code: str, path: PathText, message: str) -> None:
        self.add(Level.ERROR, code, path, message)

    def at_least(self, severity: Level) -> list[Diagnostic]:
        return [d for d in self.items if d.severity >= severity]
