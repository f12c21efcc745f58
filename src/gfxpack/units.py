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


def decimal(size: int) -> str:
    """Decimal units, one decimal, as pip and PyPI show a download's size.

    >>> decimal(512), decimal(5_900), decimal(154_400_000)
    ('512 B', '5.9 kB', '154.4 MB')
    """
    if size < 1000:
        return f"{size} B"
    value = float(size)
    for unit in ("kB", "MB", "GB"):
        value /= 1000
        if value < 1000 or unit == "GB":
            break
    return f"{value:.1f} {unit}"
