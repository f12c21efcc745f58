"""Retention: which builds of a release stream's repository stay, by age or count, and
RFC0012's streams by name (TheRock's repository plan)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gfxpack.repo.inputs import RepoError

DAY = 86_400

# RFC0012's streams and their retention.
STREAM_RETENTION = {
    "dev": "30d",
    "nightly": "120builds",
    "weekly": "52w",
    "rc": "2y",
    "stable": "all",
}
_POLICY = re.compile(r"(?P<count>[1-9][0-9]{0,8})(?P<unit>d|w|y|builds)\Z")
_UNIT_DAYS = {"d": 1, "w": 7, "y": 365}


class Dated(Protocol):
    @property
    def published(self) -> int: ...


_B = TypeVar("_B", bound=Dated)


@dataclass(frozen=True, slots=True)
class Retention:
    """Which builds stay: those of the last ``days`` days, or the last ``builds``
    builds; neither set keeps all."""

    days: int | None = None
    builds: int | None = None

    @classmethod
    def parse(cls, text: str) -> Retention:
        """``30d``, ``52w``, ``2y`` (days), ``120builds``, ``all``, or a stream's name."""
        policy = STREAM_RETENTION.get(text, text)
        if policy == "all":
            return cls()
        match = _POLICY.match(policy)
        if match is None:
            raise RepoError(
                f"--retain {text!r}: expected a number of days (30d), weeks (52w) or years "
                f"(2y), a number of builds (120builds), all, or a stream: "
                f"{', '.join(f'{k} ({v})' for k, v in STREAM_RETENTION.items())}"
            )
        count, unit = int(match["count"]), match["unit"]
        if unit == "builds":
            return cls(builds=count)
        return cls(days=count * _UNIT_DAYS[unit])

    def expired(self, builds: Sequence[_B], now: int) -> list[_B]:
        """The builds (oldest first) this policy removes at ``now``; never the newest."""
        older = list(builds[:-1])
        if self.builds is not None:
            return older[: max(0, len(builds) - self.builds)]
        if self.days is not None:
            return [b for b in older if b.published < now - self.days * DAY]
        return []
