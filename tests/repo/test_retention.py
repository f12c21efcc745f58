"""repo/retention.py: policies by age, count and stream name; the newest build stays."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gfxpack.repo.inputs import RepoError
from gfxpack.repo.retention import DAY, Retention


@dataclass(frozen=True)
class Built:
    published: int


NOW = 1_000 * DAY
BUILDS = [Built(NOW - days * DAY) for days in (400, 100, 31, 30, 2, 0)]


def test_stream_names_are_rfc0012s_windows() -> None:
    assert Retention.parse("dev") == Retention(days=30)
    assert Retention.parse("nightly") == Retention(builds=120)
    assert Retention.parse("weekly") == Retention(days=364)
    assert Retention.parse("rc") == Retention(days=730)
    assert Retention.parse("stable") == Retention() == Retention.parse("all")


def test_age_keeps_the_window_and_its_edge() -> None:
    assert Retention.parse("30d").expired(BUILDS, NOW) == BUILDS[:3]  # 30 days old stays


def test_count_keeps_the_last_builds() -> None:
    assert Retention.parse("2builds").expired(BUILDS, NOW) == BUILDS[:4]


def test_the_newest_build_always_stays() -> None:
    old = [Built(0), Built(DAY)]
    assert Retention.parse("1d").expired(old, NOW) == old[:1]
    assert Retention(builds=0).expired(old, NOW) == old[:1]
    assert Retention.parse("all").expired(old, NOW) == []


@pytest.mark.parametrize("text", ["0d", "30", "ten days", "-5builds", "1m", ""])
def test_a_policy_it_cannot_read_names_what_it_takes(text: str) -> None:
    with pytest.raises(RepoError, match=r"expected a number of days .* or a stream: dev"):
        Retention.parse(text)
