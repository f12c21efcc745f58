"""SOURCE_DATE_EPOCH: the one timestamp of a reproducible build or repository.

``build`` stamps every package with it (files, headers, changelogs) and
``repo`` dates its Release with it; both read it here, so a bad value is the
same one-line error in either command.
"""

from __future__ import annotations

from collections.abc import Mapping

from gfxpack.errors import GfxpackError

# cpio (newc) and rpm headers store times as unsigned 32-bit numbers.
LATEST = 2**32 - 1


class InvalidEpoch(GfxpackError, ValueError):
    """SOURCE_DATE_EPOCH is set but is not a usable number of seconds."""


def source_date_epoch(environ: Mapping[str, str], default: int) -> int:
    """The environment's SOURCE_DATE_EPOCH, or ``default`` when it is unset or empty."""
    value = environ.get("SOURCE_DATE_EPOCH")
    if value is None or value == "":
        return default
    if not (value.isascii() and value.isdigit()) or int(value) > LATEST:
        raise InvalidEpoch(
            f"SOURCE_DATE_EPOCH={value!r}: expected seconds since 1970 "
            f"(0 to {LATEST}), e.g. 1704067200"
        )
    return int(value)
