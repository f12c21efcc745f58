"""Sizes as people read them."""

from __future__ import annotations


def human(size: int) -> str:
    """Binary units, one decimal.

    >>> human(512), human(1536), human(3 * 1024**3)
    ('512 B', '1.5 KiB', '3.0 GiB')
    """
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"
