"""What the repository's record (repo/state.py) may say: each value read back from it
is checked as the option or input it came from was, before it names a directory, a
version or a time.

The record is a file in OUT, and OUT is trusted no more than an input: a suite of
``../../tmp/x`` read back from it would make a run sign and clean a directory outside
the repository. Each check here returns what is wrong with a value in words (None:
nothing), and state.py refuses the record as damaged with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from gfxpack.epoch import LATEST
from gfxpack.formats import FORMATS
from gfxpack.plan.naming import InvalidName, check_release, version_xy
from gfxpack.repo.inputs import RepoError
from gfxpack.repo.names import COMPONENT, SUITE, RepositoryNames
from gfxpack.text_fields import DEB_ARCHITECTURE, LINE, RPM_ARCHITECTURE, TextKind, shown

# The name of the stream a build was promoted from (--from-stream, else the source's
# directory name): one line, as a repository's name is.
STREAM_NAME = TextKind(
    "a stream name (one line of printable characters, not beginning or ending with a space)",
    200,
    grammar=re.compile(r"\S(?:.*\S)?"),
)
# A build's version, ROCM_VERSION-RELEASE: far shorter than this in any release.
VERSION_LENGTH = 200
# What a package file's size can be (a file offset).
LARGEST_SIZE = 2**63 - 1
SHA256 = re.compile(r"[0-9a-f]{64}\Z")
# An OpenPGP key's fingerprint as gpg prints it: what --extra-key takes, and what the
# record keeps of it (a name gpg would look up could find another key on another run).
FINGERPRINT = re.compile(r"[0-9A-F]{40}\Z")
# A piece's name: an index kind, and for apt the architecture it is of (Packages/amd64).
PART = re.compile(r"[A-Za-z]+(?:/[A-Za-z0-9][A-Za-z0-9_+-]*)?\Z")
_ARCHITECTURES = {"deb": DEB_ARCHITECTURE, "rpm": RPM_ARCHITECTURE}
_FORMAT_NAMES = {fmt.name for fmt in FORMATS}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def build_version_problem(version: object) -> str | None:
    """Why ``version`` is not a build's version (ROCM_VERSION-RELEASE, each as gfxpack
    build takes them: a version such as 8.2.0, a release such as 1); None when it is."""
    if not isinstance(version, str) or len(version) > VERSION_LENGTH:
        return f"build version {shown(str(version))}: expected ROCM_VERSION-RELEASE"
    rocm, _, release = version.partition("-")
    try:
        version_xy(rocm)
        check_release(release)
    except InvalidName as e:
        return f"build version {shown(version)}: {e}"
    return None


def time_problem(value: object, what: str) -> str | None:
    """Why ``value`` is not a time in seconds since 1970 (as SOURCE_DATE_EPOCH takes)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= LATEST:
        return f"{what} {shown(repr(value))}: expected seconds since 1970 (0 to {LATEST})"
    return None


def stream_name_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return f"stream name {value!r}: expected {STREAM_NAME.allowed}"
    problem = STREAM_NAME.problem(value)
    return f"stream name {shown(value)}: {problem}" if problem else None


def promoted_from(text: object) -> dict[str, Any] | None:
    """Where a build was promoted from, read back (None: published here); ValueError
    says what is wrong."""
    if text is None:
        return None
    try:
        origin = json.loads(str(text))
    except ValueError as e:
        raise ValueError(f"where a build was promoted from: {e}") from None
    if not isinstance(origin, dict) or set(origin) != {"stream", "published"}:
        raise ValueError(f"where a build was promoted from: {shown(str(text))}")
    problem = stream_name_problem(origin["stream"]) or time_problem(
        origin["published"], "the date it was published"
    )
    if problem:
        raise ValueError(problem)
    return origin


# -- settings --------------------------------------------------------------------------


def _suite(value: str) -> str | None:
    if SUITE.match(value):
        return None
    return f"apt suite {shown(value)}: expected a plain name such as stable (as --suite takes)"


def _names(value: str) -> str | None:
    try:
        values = json.loads(value)
        if not isinstance(values, dict):
            return f"repository names {shown(value)}: expected an object"
        names = RepositoryNames(**values)
        # The numbers' types first: check() only compares them.
        numbers = (names.keep_generations, names.valid_for_days or 0)
        if any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
            return f"repository names {shown(value)}: a number of the wrong type"
        names.check()
    except (ValueError, TypeError, RecursionError, RepoError) as e:
        # RepoError: a name as its option says it (--codename 'x': expected ...).
        return f"repository names: {e}"
    return None


def _key(value: str) -> str | None:
    problem = LINE.problem(value)
    return f"signing key {shown(value)}: {problem}" if problem else None


def fingerprint_problem(value: str) -> str | None:
    """Why ``value`` is not a key's fingerprint (40 hexadecimal digits, as gpg
    --list-keys prints it); None when it is."""
    if FINGERPRINT.match(value.upper()):
        return None
    return f"{shown(value)}: expected a key's fingerprint (40 hexadecimal digits)"


def _extra_keys(value: str) -> str | None:
    # As settings.py records them: upper-case fingerprints, one space between.
    for key in value.split(" "):
        if not FINGERPRINT.match(key):
            return f"extra keys {shown(value)}: expected fingerprints (40 hexadecimal digits)"
    return None


def _marker(value: str) -> str | None:
    return None if value == "1" else f"a stale mark {shown(value)}: expected 1"


_SETTINGS: dict[str, Callable[[str], str | None]] = {
    "suite": _suite,
    "names": _names,
    "signed_by": _key,
    "extra_keys": _extra_keys,
    "schema": _key,
}


def setting_problem(key: str, value: object) -> str | None:
    """Why ``value`` cannot be the setting ``key`` (as the option it keeps would refuse
    it); None when it can. A key of no known kind is checked as one line."""
    if not isinstance(value, str):
        return f"setting {key}: {value!r} is not text"
    check = _marker if key.startswith("stale:") else _SETTINGS.get(key, _key)
    return check(value)


# -- files, pieces and generations -------------------------------------------------------


def file_problem(fmt: object, size: object, sha256: object, arch: object) -> str | None:
    """Why a package file's row cannot be one this gfxpack recorded."""
    if fmt not in _FORMAT_NAMES:
        return f"package format {fmt!r}: expected {' or '.join(sorted(_FORMAT_NAMES))}"
    problem = digest_problem(size, sha256)
    if problem:
        return problem
    kind = _ARCHITECTURES[str(fmt)]
    problem = kind.problem(arch) if isinstance(arch, str) else kind.allowed
    return f"architecture {arch!r}: {problem}" if problem else None


# A deb822 field name, and a value: continuation lines begin with a space (a newline
# followed by anything else would start a field of its own in the signed Packages).
_FIELD = re.compile(r"[A-Za-z0-9][!-9;-~]*\Z")
_FIELD_VALUE = re.compile(r"[^\x00\r\n]*(?:\n [^\x00\r\n]*)*\Z")
_RPM_KINDS = ("primary", "filelists", "other")


def entry_problem(fmt: str, name: str, size: int, sha256: str, entry: dict[str, Any]) -> str | None:
    """Why ``entry`` cannot be what the indexes say of the package file ``name`` (of
    ``size`` and ``sha256``): an index rebuilt from it must name that pool file, with
    those digests, and nothing else."""
    if fmt == "deb":
        stanza, paths = entry.get("stanza"), entry.get("paths")
        if not isinstance(stanza, dict) or not isinstance(paths, list):
            return "its entry is not a stanza and its paths"
        for field, value in stanza.items():
            if (
                not _FIELD.match(field)
                or not isinstance(value, str)
                or not _FIELD_VALUE.match(value)
            ):
                return f"its stanza's field {shown(str(field))}: not one deb822 field"
        expected = {"Filename": f"pool/{COMPONENT}/{name}", "Size": str(size), "SHA256": sha256}
        for field in ("Package", "Version", "Architecture", *expected):
            if field not in stanza:
                return f"its stanza has no {field}"
        for field, value in expected.items():
            if stanza[field] != value:
                return f"its stanza's {field} is {shown(stanza[field])}, not {shown(value)}"
        if not all(isinstance(p, str) and not _CONTROL.search(p) for p in paths):
            return "its paths are not one line each"
        return None
    if not all(isinstance(entry.get(kind), str) for kind in _RPM_KINDS):
        return f"its entry is not {', '.join(_RPM_KINDS)} text"
    primary = str(entry["primary"])
    if primary.count("<location ") != 1 or f'<location href="Packages/{name}"/>' not in primary:
        return f"its primary entry does not locate it at Packages/{name}"
    return None


def digest_problem(size: object, sha256: object) -> str | None:
    """Why (``size``, ``sha256``) cannot be what a package file was published with."""
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= LARGEST_SIZE:
        return f"size {size!r}: expected a number of bytes"
    if not isinstance(sha256, str) or not SHA256.match(sha256):
        return f"sha256 {sha256!r}: expected 64 hexadecimal digits"
    return None


def part_problem(part: object) -> str | None:
    """Why ``part`` cannot name a piece of an index (it becomes a directory name:
    dists/SUITE/main/binary-ARCH)."""
    if isinstance(part, str) and PART.match(part):
        return None
    return f"index piece {part!r}: expected a kind and an architecture such as Packages/amd64"


def generation_problem(number: object, paths: object) -> str | None:
    """Why (``number``, ``paths``) cannot be an index generation: a positive number and
    paths that stay inside the directory they are read in."""
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number <= LATEST:
        return f"index generation {number!r}: expected a positive number"
    if not isinstance(paths, list):
        return f"index generation {number}: not a list of paths"
    for path in paths:
        if (
            not isinstance(path, str)
            or not path
            or _CONTROL.search(path)
            or PurePosixPath(path).is_absolute()
            or ".." in PurePosixPath(path).parts
        ):
            return f"index generation {number}: {path!r} is not a path inside the repository"
    return None


def format_problem(fmt: object) -> str | None:
    return None if fmt in _FORMAT_NAMES else f"package format {fmt!r}"
