"""RPM %changelog entries from a file written the way a spec file's %changelog is:

    * Tue Dec 01 2026 ROCm Release <release@example.com> - 8.2.1-1
    - Fix the gfx942 kernels of hipBLAS
    - Add gfx950

Each entry is a ``*`` line (weekday, month, day, year, then the author and
version) followed by its text; a leading ``%changelog`` line is allowed. rpm
keeps the date at noon UTC, as rpmbuild does.
"""

from __future__ import annotations

import calendar
import time
from pathlib import Path

from gfxpack.errors import GfxpackError

Entry = tuple[int, str, str]  # (time, author and version line, text)
_MAX_SIZE = 1 << 20


class ChangelogError(GfxpackError):
    """A changelog file that cannot be read; the message names the file and line."""


def parse_changelog(path: Path) -> tuple[Entry, ...]:
    """The entries of ``path``, newest first as written."""
    try:
        with open(path, "rb") as file:
            raw = file.read(_MAX_SIZE + 1)
    except OSError as e:
        raise ChangelogError(f"{path}: cannot read the changelog ({e.strerror})") from None
    if len(raw) > _MAX_SIZE:
        raise ChangelogError(f"{path}: a changelog of at most 1 MiB is expected")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ChangelogError(f"{path}: the changelog is not UTF-8 text") from None
    entries: list[tuple[int, str, list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("* "):
            entries.append((*_heading(path, number, line), []))
        elif not entries:
            if line.strip() and line.strip() != "%changelog":
                raise ChangelogError(
                    f"{path}:{number}: expected an entry line "
                    "'* Www Mmm DD YYYY Name <email> - version-release'"
                )
        else:
            entries[-1][2].append(line)
    if not entries:
        raise ChangelogError(f"{path}: no changelog entry ('* Www Mmm DD YYYY ...' lines)")
    return tuple((when, author, "\n".join(lines).strip()) for when, author, lines in entries)


def _heading(path: Path, number: int, line: str) -> tuple[int, str]:
    words = line[2:].split()
    try:
        date = time.strptime(" ".join(words[:4]), "%a %b %d %Y")
    except ValueError:
        date = None
    author = " ".join(words[4:])
    if date is None or not author:
        raise ChangelogError(
            f"{path}:{number}: expected '* Www Mmm DD YYYY Name <email> - version-release', "
            f"got {line[:80]!r}"
        )
    return calendar.timegm(date) + 12 * 3600, author
