"""RPM %changelog entries from a file written the way a spec file's %changelog is:

    * Tue Dec 01 2026 ROCm Release <release@example.com> - 8.2.1-1
    - Fix the gfx942 kernels of hipBLAS
    - Add gfx950

Each entry is a ``*`` line (weekday, month, day, year, then the author and
version) followed by its text; a leading ``%changelog`` line is allowed. rpm
keeps the date at noon UTC, as rpmbuild does.

The file is checked whole when it is read, as package.json is: the author line is
one line of printable text and the entry text may add newlines and tabs
(gfxpack.text_fields), and the year is one rpmbuild accepts and an RPM header
holds (:data:`FIRST_YEAR` to :data:`LAST_YEAR`).
"""

from __future__ import annotations

import calendar
import time
from pathlib import Path

from gfxpack.errors import GfxpackError
from gfxpack.regular_files import UnreadableFile, read_small_text
from gfxpack.text_fields import LINE, TEXT, escaped

ChangelogEntry = tuple[int, str, str]  # (time, author and version line, text)
_MAX_SIZE = 1 << 20
# rpmbuild refuses an earlier changelog year (and one from 3000 on); an RPM header
# keeps the time as unsigned 32-bit seconds, which end on 7 February 2106.
FIRST_YEAR = 1990
LAST_YEAR = 2105
_HEADING = "'* Www Mmm DD YYYY Name <email> - version-release'"


class ChangelogError(GfxpackError):
    """A changelog file that cannot be read; the message names the file and line."""


def parse_changelog(path: Path) -> tuple[ChangelogEntry, ...]:
    """The entries of ``path``, newest first as written."""
    shown = escaped(str(path))
    try:
        text = read_small_text(path, _MAX_SIZE, "changelog")
    except UnreadableFile as e:
        raise ChangelogError(f"{shown}: {e.problem}") from None
    entries: list[tuple[int, int, str, list[str]]] = []
    # Lines end at "\n" alone (a spec file's rule; "\r\n" is taken too): every other
    # control character is refused below, not treated as a line break.
    for number, line in enumerate(text.removesuffix("\n").split("\n"), start=1):
        line = line.removesuffix("\r")
        problem = TEXT.problem(line)
        if problem is not None:
            raise ChangelogError(f"{shown}:{number}: {problem}")
        if line.startswith("* "):
            entries.append((number, *_heading(shown, number, line), []))
        elif not entries:
            if line.strip() and line.strip() != "%changelog":
                raise ChangelogError(f"{shown}:{number}: expected an entry line {_HEADING}")
        else:
            entries[-1][3].append(line)
    if not entries:
        raise ChangelogError(f"{shown}: no changelog entry ('* Www Mmm DD YYYY ...' lines)")
    parsed = []
    for number, when, author, lines in entries:
        body = "\n".join(lines).strip()
        problem = TEXT.problem(body)
        if problem is not None:
            raise ChangelogError(f"{shown}:{number}: the entry's text: {problem}")
        parsed.append((when, author, body))
    return tuple(parsed)


def _heading(shown: str, number: int, line: str) -> tuple[int, str]:
    words = line[2:].split()
    try:
        date = time.strptime(" ".join(words[:4]), "%a %b %d %Y")
    except ValueError:
        date = None
    author = " ".join(words[4:])
    if date is None or not author:
        raise ChangelogError(f"{shown}:{number}: expected {_HEADING}, got {line[:80]!r}")
    if not FIRST_YEAR <= date.tm_year <= LAST_YEAR:
        raise ChangelogError(
            f"{shown}:{number}: the year {date.tm_year} is not allowed; expected a year from "
            f"{FIRST_YEAR} to {LAST_YEAR} (what rpmbuild accepts and an RPM header holds)"
        )
    problem = LINE.problem(author)
    if problem is not None:
        raise ChangelogError(f"{shown}:{number}: the author: {problem}")
    return calendar.timegm(date) + 12 * 3600, author
