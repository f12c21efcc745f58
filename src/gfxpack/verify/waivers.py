"""Known findings a release accepts: ``gfxpack verify --waivers FILE``.

A waiver file is TOML, one ``[[waiver]]`` table per known finding::

    [[waiver]]
    rule = "cross-arch"                     # the rule, as verify names it
    package = "amdrocm-core-sdk8.2-gfx942"  # the package the finding is about
    reason = "TheRock#5198: fixed in 8.3"   # why it is accepted (required)
    # path = "/opt/rocm/core-8.2/lib/libx.so"  file-conflict only: one shared file
    # format = "deb"                           only in this format's repository

``package`` is the package that breaks the rule: the arch-specific package that
pulls in another arch (cross-arch), the meta that misses a device (arch-set), the
package that cannot be installed or the requirement nothing provides
(installable), either owner of a shared file (file-conflict). ``*`` in it
matches any characters (``amdrocm-core-sdk8.2-gfx*``). A waiver that matches
no finding of a repository it applies to is stale, and reported.

A ``package`` of wildcards alone (``*``, ``?*``, ``[a-z]*``) matches every package:
such a waiver would turn its rule off rather than accept a known finding, so it is
refused, with or without ``--strict`` (there is no run it is right for; a rule that
should not run is a decision for the rules, not a waiver file).

The same file waives the warnings of ``gfxpack plan`` and ``gfxpack build`` (rules
``dependency-cycle``, ``no-artifacts``...: :class:`gfxpack.plan.WarningRule`), whose
``package`` is any package the warning names; verify passes those by, and plan and
build pass verify's.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from gfxpack.formats import FORMATS, PackageFormat
from gfxpack.plan import WarningRule
from gfxpack.regular_files import UnreadableFile, read_small_text
from gfxpack.verify.rules import RULES, Violation
from gfxpack.verify.system import VerifyError

# A waiver file lists known findings, a few dozen at most: a bigger one is a mistake.
MAX_SIZE = 1 << 20
_KEYS = ("rule", "package", "reason", "path", "format")
# fnmatch's wildcards: '*', '?' and a class ('[...]', '[!...]', ']' first is literal);
# a '[' without its ']' is a literal character.
_WILDCARD = re.compile(r"\*|\?|\[!?\]?[^\]]*\]")
_FORMAT_NAMES = tuple(str(fmt) for fmt in FORMATS)
# verify's rules, then the warnings of plan and build (one waiver file serves all three).
_RULES = (*RULES, *(str(rule) for rule in WarningRule))


@dataclass(frozen=True, slots=True)
class Waiver:
    rule: str
    package: str
    reason: str
    path: str | None = None
    format: str | None = None
    # Where it is written, for messages: "waivers.toml, waiver 2".
    source: str = ""

    def applies_to(self, fmt: PackageFormat) -> bool:
        """Whether verify judges ``fmt``'s repository by it (a plan or build warning's
        waiver applies to no repository)."""
        return self.rule in RULES and (self.format is None or self.format == str(fmt))

    def matches(self, finding: Violation) -> bool:
        return (
            finding.rule == self.rule
            and any(fnmatchcase(name, self.package) for name in finding.packages)
            and (self.path is None or any(fnmatchcase(f, self.path) for f in finding.files))
        )

    def describe(self) -> str:
        """``cross-arch amdrocm-x (waivers.toml, waiver 2)``"""
        subject = self.package + (f" {self.path}" if self.path else "")
        only = f" in {self.format}" if self.format else ""
        return f"{self.rule} {subject}{only} ({self.source})"

    def as_dict(self) -> dict[str, Any]:
        found = {key: getattr(self, key) for key in (*_KEYS, "source")}
        return {key: value for key, value in found.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Waived:
    """A finding a waiver accepts; ``judged``: in the scope that would have failed the run
    (False: it would have been a note)."""

    finding: Violation
    waiver: Waiver
    judged: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {**self.finding.as_dict(), "judged": self.judged, "waiver": self.waiver.as_dict()}


def load_waivers(path: str | os.PathLike[str]) -> tuple[Waiver, ...]:
    """The waivers of a TOML file (see the module's documentation)."""
    try:
        text = read_small_text(path, MAX_SIZE, "waiver file")
    except UnreadableFile as e:
        raise VerifyError(f"{path}: {e.problem}") from None
    return parse_waivers(text, str(path))


def parse_waivers(text: str, name: str = "waivers.toml") -> tuple[Waiver, ...]:
    """Waivers from TOML text; ``name`` is the file's name in messages."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise VerifyError(f"{name}: not valid TOML: {e}") from None
    except RecursionError:
        raise VerifyError(f"{name}: not a waiver file: TOML nested too deeply") from None
    unknown = sorted(set(document) - {"waiver"})
    if unknown:
        raise VerifyError(
            f"{name}: unknown key {unknown[0]!r}{_did_you_mean(unknown[0], ('waiver',))}: "
            "expected [[waiver]] tables"
        )
    entries = document.get("waiver", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise VerifyError(f"{name}: 'waiver' must be [[waiver]] tables, one per known finding")
    waivers: list[Waiver] = []
    seen: dict[tuple[str | None, ...], str] = {}
    for number, entry in enumerate(entries, start=1):
        waiver = _waiver(entry, f"{name}, waiver {number}")
        key = (waiver.rule, waiver.package, waiver.path, waiver.format)
        if key in seen:
            raise VerifyError(f"{waiver.source}: the same finding as {seen[key]}")
        seen[key] = waiver.source
        waivers.append(waiver)
    return tuple(waivers)


def _waiver(entry: dict[str, Any], source: str) -> Waiver:
    for key in entry:
        if key not in _KEYS:
            raise VerifyError(
                f"{source}: unknown key {key!r}{_did_you_mean(key, _KEYS)} "
                f"(a waiver has {', '.join(_KEYS)})"
            )
    values: dict[str, str | None] = {}
    for key in _KEYS:
        value = entry.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise VerifyError(f"{source}: {key!r} must be a non-empty string")
        values[key] = value.strip() if isinstance(value, str) else None
    rule, package, reason = values["rule"], values["package"], values["reason"]
    if rule is None:
        raise VerifyError(f"{source}: 'rule' is required (one of {', '.join(_RULES)})")
    if rule not in _RULES:
        raise VerifyError(
            f"{source}: unknown rule {rule!r}{_did_you_mean(rule, _RULES)} "
            f"(one of {', '.join(_RULES)})"
        )
    if package is None:
        raise VerifyError(f"{source}: 'package' is required (the package the finding is about)")
    if not _WILDCARD.sub("", package):
        raise VerifyError(
            f"{source}: package {package!r} matches every package, which turns the {rule} "
            "rule off; name the package the finding is about ('*' may stand for part of "
            "it: amdrocm-core-sdk8.2-gfx*)"
        )
    if reason is None:
        raise VerifyError(f"{source}: 'reason' is required (why the finding is accepted)")
    if values["path"] is not None and rule != "file-conflict":
        raise VerifyError(f"{source}: 'path' names a shared file, so it is for file-conflict only")
    fmt = values["format"]
    if fmt is not None and rule not in RULES:
        raise VerifyError(f"{source}: 'format' is for verify's rules; {rule} is a plan warning")
    if fmt is not None and fmt not in _FORMAT_NAMES:
        raise VerifyError(
            f"{source}: unknown format {fmt!r}{_did_you_mean(fmt, _FORMAT_NAMES)} "
            f"(one of {', '.join(_FORMAT_NAMES)})"
        )
    return Waiver(rule, package, reason, values["path"], fmt, source)


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    near = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def sort_out(
    findings: Iterable[Violation], waivers: Iterable[Waiver], used: set[Waiver], judged: bool
) -> tuple[list[Violation], list[Waived]]:
    """(the findings no waiver accepts, the waived ones); every waiver that matched
    is added to ``used``. ``judged``: whether these findings are in the judged scope."""
    waivers = list(waivers)
    kept: list[Violation] = []
    waived: list[Waived] = []
    for finding in findings:
        matching = [w for w in waivers if w.matches(finding)]
        if matching:
            used.update(matching)
            waived.append(Waived(finding, matching[0], judged))
        else:
            kept.append(finding)
    return kept, waived
