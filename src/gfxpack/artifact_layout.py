"""The layout of a TheRock artifacts tree: its directory names and its manifests.

One artifact is one directory ``<name>_<component>_<target>/`` (spec packaging.md
section 3), whose target is ``generic`` or a GPU target; it holds
``artifact_manifest.txt``, one build-tree prefix per line. A
``therock_manifest.json`` somewhere in the tree (where TheRock writes it:
:data:`CANONICAL_THEROCK_DIR`) carries the build's flags. :func:`artifact_directories`
lists a tree's artifacts, :func:`read_manifest` reads one's manifest. The planner
(:mod:`gfxpack.plan.artifact_index`), the artifact reader (:mod:`gfxpack.artifacts`),
the splitter and the joiner (:mod:`gfxpack.fatbin`) all take these names from here.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from pathlib import Path
from typing import Any

from gfxpack.artifact_files import InvalidArtifacts, name_problem
from gfxpack.regular_files import (
    UnreadableFile,
    printable,
    read_small_file,
    read_small_text,
    utf8_text,
)

# name has no underscores; the target may carry an xnack feature (gfx942:xnack+).
ARTIFACT_DIR = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)_([a-z]+)_([^_/]+)$")
# The target of an artifact's host content (one directory for every GPU).
GENERIC = "generic"
MANIFEST = "artifact_manifest.txt"
THEROCK_MANIFEST = "therock_manifest.json"
# Where TheRock writes it; any other place in the tree counts too, but is found only
# by walking the whole tree (thousands of directories in a real release).
CANONICAL_THEROCK_DIR = "base_lib_generic/base/aux-overlay/stage/share/therock"
# Manifests are small text files; anything larger is not one.
MANIFEST_LIMIT = 16 << 20


def artifact_name(group: str, target: str) -> str:
    """The directory of ``group``'s (``<name>_<component>``) artifact for ``target``
    (a GPU target, or :data:`GENERIC`): what :data:`ARTIFACT_DIR` matches.

    >>> artifact_name("blas_lib", GENERIC), artifact_name("blas_lib", "gfx942")
    ('blas_lib_generic', 'blas_lib_gfx942')
    """
    return f"{group}_{target}"


def read_manifest(path: Path) -> tuple[str, ...]:
    """The prefixes an ``artifact_manifest.txt`` lists, normalised; the file must be a
    regular file (not a symlink) of UTF-8 lines, each a relative path inside the
    artifact."""
    shown = printable(str(path))
    try:
        text = utf8_text(_read_manifest_file(path), path)
    except UnreadableFile as e:
        raise InvalidArtifacts(str(e)) from None
    prefixes = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        problem = name_problem(line)
        if problem:
            raise InvalidArtifacts(f"{shown}:{number}: {line!r}: {problem}")
        normalized = posixpath.normpath(line)
        if line.startswith("/") or normalized == ".." or normalized.startswith("../"):
            raise InvalidArtifacts(
                f"{shown}:{number}: {line!r} must be a relative path inside the artifact"
            )
        prefixes.append(normalized)
    return tuple(prefixes)


def read_therock_manifest(path: str | os.PathLike[str]) -> tuple[bytes, dict[str, Any]]:
    """A ``therock_manifest.json``'s bytes and the JSON object they hold, whose "flags"
    is an object (an empty one when the file has none); the file must be a regular file
    (not a symlink). InvalidArtifacts naming the file when it is not one."""
    shown = printable(os.fspath(path))
    data = _read_manifest_file(path)
    try:
        manifest = json.loads(data)
    except ValueError as e:
        raise InvalidArtifacts(f"{shown}: not a JSON object: {e}") from None
    except RecursionError:
        raise InvalidArtifacts(f"{shown}: not a manifest: JSON nested too deeply") from None
    if not isinstance(manifest, dict):
        raise InvalidArtifacts(f"{shown}: not a JSON object")
    if not isinstance(manifest.setdefault("flags", {}), dict):
        raise InvalidArtifacts(f"{shown}: 'flags' is not an object")
    return data, manifest


def says_kpack_split(manifest: dict[str, Any]) -> bool:
    """Whether a TheRock manifest (as :func:`read_therock_manifest` gives it) says
    {"flags": {"KPACK_SPLIT_ARTIFACTS": true}}: its artifacts hold .kpack archives."""
    return manifest["flags"].get("KPACK_SPLIT_ARTIFACTS") is True


def read_artifact_names(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The artifact directory names a release's list holds (``build --release-artifacts``:
    one a line, as ``ls ARTIFACTS`` prints them; blank lines skipped); InvalidArtifacts
    naming the file when it is no small UTF-8 text file."""
    try:
        text = read_small_text(path, MANIFEST_LIMIT, "list of artifact directories")
    except UnreadableFile as e:
        raise InvalidArtifacts(str(e)) from None
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def _read_manifest_file(path: str | os.PathLike[str]) -> bytes:
    """A manifest's bytes by the one small-file reader's rules, a symlink not followed."""
    try:
        return read_small_file(path, MANIFEST_LIMIT, "manifest", follow_symlinks=False)
    except UnreadableFile as e:
        raise InvalidArtifacts(str(e)) from None


def artifact_directories(root: Path) -> tuple[list[str], list[str]]:
    """The artifact directories of ``root`` that hold a manifest, sorted, and warnings
    about those that do not; one named badly or a symlink is an error (naming each)."""
    directories: list[str] = []
    warnings: list[str] = []
    problems: list[str] = []
    try:
        with os.scandir(root) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as e:
        raise InvalidArtifacts(f"{root}: cannot read: {e.strerror}") from None
    for entry in entries:
        if not ARTIFACT_DIR.match(entry.name):
            continue
        if name_problem(entry.name):
            problems.append(f"{printable(entry.path)}: {name_problem(entry.name)}")
        elif entry.is_symlink():
            problems.append(
                f"{entry.path}: is a symlink; artifact directories must be real directories "
                "(gfxpack never follows a directory symlink)"
            )
        elif not entry.is_dir(follow_symlinks=False):
            continue
        elif not os.path.lexists(os.path.join(entry.path, MANIFEST)):
            warnings.append(f"{entry.path}: no {MANIFEST}; directory ignored")
        else:
            directories.append(entry.name)
    if problems:
        raise InvalidArtifacts("\n".join(problems))
    return directories, warnings
