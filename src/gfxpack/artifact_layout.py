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

import os
import posixpath
import re
from pathlib import Path

from gfxpack.artifact_files import InvalidArtifacts, name_problem, read_regular
from gfxpack.regular_files import printable

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


def read_manifest(path: Path) -> tuple[str, ...]:
    """The prefixes an ``artifact_manifest.txt`` lists, normalised; the file must be a
    regular file (not a symlink) of UTF-8 lines, each a relative path inside the
    artifact."""
    shown = printable(str(path))
    try:
        text = read_regular(str(path), MANIFEST_LIMIT).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidArtifacts(f"{shown}: not UTF-8 text (byte {e.start})") from None
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
