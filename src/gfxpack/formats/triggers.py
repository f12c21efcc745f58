"""File triggers as package.json declares them: checked here, spelled per format.

A base that registers the ``/opt/rocm`` compatibility links (``Postinstall``) can
ask to register them again whenever another package installs files under a path,
as upstream does (TheRock#7451): so every link whose target arrived later appears,
once per transaction, not once per package.

- DEB: ``DEBTriggers`` lines go verbatim into the ``triggers`` control member
  (deb-triggers(5)), e.g. ``interest-noawait {prefix}``; dpkg then calls the
  postinst with ``triggered``.
- RPM: ``RPMTransFileTriggerIn`` paths are the prefixes of a
  ``%transfiletriggerin`` scriptlet, which rpm runs once after the transaction.

``{prefix}`` at the start of a path stands for the release's install prefix
(``/opt/rocm/core-10.1``), which the file cannot know.

>>> deb_trigger_problem("interest-noawait {prefix}") is None
True
>>> deb_trigger_problem("interest-noawait {prefix}x")[-15:]
"got '{prefix}x'"
>>> with_prefix("{prefix}/lib", "/opt/rocm/core-10.1")
'/opt/rocm/core-10.1/lib'
"""

from __future__ import annotations

import re

PREFIX = "{prefix}"
# deb-triggers(5): what a package is interested in, or activates.
DEB_DIRECTIVES = (
    "interest",
    "interest-await",
    "interest-noawait",
    "activate",
    "activate-await",
    "activate-noawait",
)
# A path: absolute, or the install prefix and an optional tail. Printable ASCII, no
# space (the directive's separator), no braces past the placeholder.
_PATH = re.compile(r"^(?:\{prefix\}(?:/[!-z|~]*)?|/[!-z|~]*)$")
# An explicit (named) trigger, which deb-triggers(5) allows besides paths.
_NAME = re.compile(r"^[!-.0-z|~][!-z|~]*$")
_PATH_EXPECTED = "an absolute path, {prefix} or {prefix}/PATH"


def deb_trigger_problem(line: str) -> str | None:
    """What is wrong with one ``DEBTriggers`` line, or None."""
    directive, _, argument = line.partition(" ")
    if directive not in DEB_DIRECTIVES:
        return f"expected a deb-triggers directive ({', '.join(DEB_DIRECTIVES)}), got {line!r}"
    if argument.startswith(("/", PREFIX)):
        if _PATH.match(argument):
            return None
    elif _NAME.match(argument):
        return None
    return f"expected {directive!r} then {_PATH_EXPECTED} or a trigger name, got {argument!r}"


def rpm_trigger_problem(path: str) -> str | None:
    """What is wrong with one ``RPMTransFileTriggerIn`` path, or None."""
    return None if _PATH.match(path) else f"expected {_PATH_EXPECTED}, got {path!r}"


def with_prefix(text: str, prefix: str) -> str:
    """``text`` with its ``{prefix}`` (in a path or a DEB line) replaced by ``prefix``."""
    return text.replace(PREFIX, prefix.rstrip("/") or "/", 1)
