"""What text a package may carry: the kinds of text field, and the one check of each.

package.json and a ``--changelog`` file are checked against these kinds when they are
read, before anything is planned or written, because the writers copy text as it is:

- a NUL ends an rpm header string early, and rpm then reads no package at all;
- a newline or other line break in a one-line field starts a new control field or
  header line, and in an architecture it ends up in file names and paths;
- a lone surrogate (JSON can spell one: ``"\\ud800"``) cannot be written as UTF-8;
- other control characters and the bidirectional overrides make what a user reads
  differ from what the package says.

A kind is one of two character sets (one line, or text of several lines), a length
and, for names, the grammar the formats give them. Every message about a field ends
with what the field may hold, so one rule reads the same wherever it applies.

>>> LINE.problem("ROCm \\x00"), TEXT.problem("two\\nlines"), DEB_ARCHITECTURE.problem("amd64")
('a NUL character is not allowed; expected one line of printable characters', None, None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What no text may hold: C0 controls, DEL, C1 controls, lone surrogates, the Unicode
# line and paragraph separators, and the bidirectional embeddings, overrides and
# isolates (text that displays in another order than it is written).
_NEVER = "\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069"
_NOT_IN_LINE = re.compile(f"[\t\n{_NEVER}]")
_NOT_IN_TEXT = re.compile(f"[{_NEVER}]")
_NAMES = {
    "\x00": "a NUL character",
    "\t": "a tab",
    "\n": "a newline",
    "\r": "a carriage return",
    "\x1b": "an escape character",
    "\u2028": "a line separator (U+2028)",
    "\u2029": "a paragraph separator (U+2029)",
}


def character_name(char: str) -> str:
    """A character no text may hold, in words.

    >>> character_name("\\x00"), character_name("\\x85"), character_name("\\udc80")
    ('a NUL character', 'the control character U+0085', 'a lone surrogate (U+DC80, not UTF-8)')
    """
    if char in _NAMES:
        return _NAMES[char]
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate (U+{code:04X}, not UTF-8)"
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return f"the bidirectional control U+{code:04X}"
    return f"the control character U+{code:04X}"


def escaped(text: str) -> str:
    """``text`` as one printable line, each character no line may hold as an escape.

    >>> escaped("/0/Fo\\x00o\\nbar"), escaped("\\ud800")
    ('/0/Fo\\\\x00o\\\\nbar', '\\\\ud800')
    """
    return _NOT_IN_LINE.sub(lambda m: repr(m.group())[1:-1], text)


def shown(value: str, limit: int = 60) -> str:
    """``value`` quoted for a message: escaped by ``repr``, cut after ``limit`` characters."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + "..."


@dataclass(frozen=True, slots=True)
class TextKind:
    """What one kind of text field may hold."""

    # the words every message ends with: "expected <allowed>"
    allowed: str
    max_length: int
    # newlines and tabs allowed: a description, a changelog entry
    multiline: bool = False
    # names: the whole value must match (after the character check)
    grammar: re.Pattern[str] | None = None

    def problem(self, value: str) -> str | None:
        """Why ``value`` is not text of this kind, in one line; None when it is."""
        if len(value) > self.max_length:
            return (
                f"{len(value):,} characters are too many; expected {self.allowed}, "
                f"at most {self.max_length:,} characters"
            )
        bad = (_NOT_IN_TEXT if self.multiline else _NOT_IN_LINE).search(value)
        if bad:
            return f"{character_name(bad.group())} is not allowed; expected {self.allowed}"
        if self.grammar is not None and not self.grammar.fullmatch(value):
            return f"expected {self.allowed}, got {shown(value)}"
        return None


LINE = TextKind("one line of printable characters", 1024)
TEXT = TextKind("text of printable characters, newlines and tabs", 65536, multiline=True)
# Debian policy 5.6.1 (with dpkg's "at least two characters").
PACKAGE_NAME = TextKind(
    "a package name (lowercase letters, digits, '+', '-' and '.', at least two characters)",
    128,
    grammar=re.compile(r"[a-z0-9][a-z0-9+.\-]+"),
)
# TheRock's artifact directories are <name>_<component>_<target>: no '_' in a name.
ARTIFACT_NAME = TextKind(
    "an artifact name (a letter, then letters, digits or '-'; no '_')",
    128,
    grammar=re.compile(r"[A-Za-z][A-Za-z0-9-]*"),
)
SUBDIR_NAME = TextKind(
    "a subdir name (one line of printable characters, not only '/' and spaces)",
    1024,
    grammar=re.compile(r".*[^/ ].*"),
)
# Empty: the package names no maintainer (DEB leaves the field out, RPM the Packager).
MAINTAINER = TextKind(
    "'Name <email>'", 1024, grammar=re.compile(r"(?:[^<>]*[^<>\s][^<>]*<[^<>\s]+>)?")
)
# dpkg's architecture names as Debian spells them (lowercase); the wildcards ``any``,
# ``linux-any`` and ``any-amd64`` are for source packages: dpkg installs no binary
# package that carries one.
DEB_ARCHITECTURE = TextKind(
    "a Debian architecture name (lowercase letters, digits and '-', such as amd64, "
    "arm64 or all; not a wildcard such as any)",
    64,
    grammar=re.compile(r"(?!any\Z|any-|.*-any\Z)[a-z0-9][a-z0-9-]*"),
)
# rpm's architecture names (rpmrc: x86_64, aarch64, ppc64le, noarch, osfmach3_i386):
# neither '-' nor '.', which separate the parts of name-version-release.arch.rpm.
RPM_ARCHITECTURE = TextKind(
    "an RPM architecture name (letters, digits and '_', such as x86_64, aarch64 or noarch)",
    64,
    grammar=re.compile(r"[A-Za-z0-9][A-Za-z0-9_]*"),
)
