"""Read the input of a split: which artifacts are fat, and every entry of each, checked.

Two kinds of input (see :mod:`gfxpack.fatbin.split`): a TheRock artifacts
directory, whose ``<name>_<component>_<target>`` directories other than
``_generic`` are fat (:class:`FatJob` each) and whose others are copied as they
are; or any other directory, split as one install tree under an artifact name
such as ``sparse_lib``.

The input is read by the rules ``gfxpack build`` reads artifacts by
(:mod:`gfxpack.artifact_files`), all of it before anything is written: no symlink
on the way to the content (artifact directory, manifest, its prefixes, an install
tree's top), none followed inside it, a symlink kept only when its target is
relative and stays inside its tree (the rule of
:func:`~gfxpack.artifact_files.symlink_target_problem`: a split has no install
prefix yet, so an absolute target is refused), UTF-8 names, only regular files, directories
and symlinks; every problem of the input in one error. The files are then read
through a :class:`SplitInput`: a :class:`~gfxpack.safe_tree.Tree` of the input,
one directory at a time without following links, so a directory swapped for a
symlink after the walk leads nowhere.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from gfxpack.artifact_files import real_directory, walk
from gfxpack.artifact_layout import (
    ARTIFACT_DIR,
    GENERIC,
    MANIFEST,
    THEROCK_MANIFEST,
    artifact_directories,
    artifact_name,
    read_manifest,
    read_therock_manifest,
)
from gfxpack.fatbin import SplitError
from gfxpack.regular_files import file_kind, printable
from gfxpack.safe_tree import Tree

TREE_PREFIX = "stage"
DEFAULT_KPACK_DIR = ".kpack"
NAME_COMPONENT = re.compile(r"^[A-Za-z][A-Za-z0-9-]*_[a-z]+$")

# Every entry of a content directory: (path inside it, "dir" | "file" | "symlink",
# a symlink's target as checked), parents before their children.
Content = list[tuple[str, str, str | None]]


class SplitInput:
    """The input as the writers read it after the walk checked it: through a Tree, one
    directory at a time without following links; a path is named as the walk found it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tree = Tree(root)

    def parts(self, path: Path) -> tuple[str, ...]:
        return path.relative_to(self.root).parts

    def open(self, path: Path) -> BinaryIO:
        """The regular file ``path``, open for reading."""
        return os.fdopen(self.tree.open_file(self.parts(path)), "rb")

    def status(self, path: Path, expected: int) -> os.stat_result:
        """The status of ``path`` itself, which must still be of the kind the walk
        found (``stat.S_IFDIR``, ``stat.S_IFREG``)."""
        info = self.tree.status(self.parts(path))
        if stat.S_IFMT(info.st_mode) != expected:
            now = file_kind(info.st_mode) if not stat.S_ISREG(info.st_mode) else "a regular file"
            raise SplitError(f"{printable(str(path))}: changed while it was split (now {now})")
        return info

    def link(self, path: Path, destination: Path) -> bool:
        return self.tree.link(self.parts(path), destination)

    def close(self) -> None:
        self.tree.close()


@dataclass
class FatJob:
    """One fat artifact: where its prefixes are read from and where its parts go."""

    group: str  # <name>_<component>
    source: str | None  # the input directory name (TheRock), None for a plain tree
    # (prefix as written in the output, content root, what it holds)
    prefixes: list[tuple[str, Path, Content]]
    kpack_prefix: str  # the prefix that holds the archives
    kpack_dir: str  # archive directory relative to the install prefix
    manifest: Path | None = None  # the input's artifact_manifest.txt (TheRock)


def _therock_layout(source: Path) -> tuple[list[str], list[str], list[str]]:
    """(fat artifact directories, directories copied as they are, notes), found as
    ``gfxpack build`` finds them."""
    fat: list[str] = []
    copied: list[str] = []
    directories, notes = artifact_directories(source)
    for directory in directories:
        match = ARTIFACT_DIR.match(directory)
        assert match
        (fat if match[3] != GENERIC else copied).append(directory)
    for directory in fat:
        match = ARTIFACT_DIR.match(directory)
        assert match
        generic = artifact_name(f"{match[1]}_{match[2]}", GENERIC)
        others = [
            d for d in fat if d != directory and d.rsplit("_", 1)[0] == generic.rsplit("_", 1)[0]
        ]
        if generic in copied or others:
            clash = generic if generic in copied else others[0]
            raise SplitError(
                f"{source}: {directory} and {clash} would both give {generic}; "
                "split them separately"
            )
    return fat, copied, notes


def _therock_job(
    source: Path, directory: str, kpack_dir: str | None, problems: list[str]
) -> FatJob:
    match = ARTIFACT_DIR.match(directory)
    assert match
    prefixes = _prefixes(source / directory / MANIFEST)
    if not prefixes:
        raise SplitError(f"{source / directory / MANIFEST}: lists no prefix")
    group = f"{match[1]}_{match[2]}"
    roots = [
        (prefix, source / directory / prefix, _content(source / directory, prefix, problems))
        for prefix in prefixes
    ]
    return FatJob(
        group,
        directory,
        roots,
        sorted(prefixes)[0],
        kpack_dir or DEFAULT_KPACK_DIR,
        source / directory / MANIFEST,
    )


def _prefixes(manifest: Path) -> tuple[str, ...]:
    """A manifest's prefixes; none may lie inside another, as the split writes each
    under its own name (``gfxpack build`` merges them all into the install prefix)."""
    prefixes = read_manifest(manifest)
    for i, prefix in enumerate(prefixes):
        for j, other in enumerate(prefixes):
            if i != j and (other == prefix or other.startswith(f"{prefix}/")):
                raise SplitError(
                    f"{printable(str(manifest))}: {other!r} lies inside {prefix!r}; split "
                    "writes each file once, so prefixes must not overlap"
                )
    return prefixes


def _copied_content(source: Path, directory: str, problems: list[str]) -> Content:
    """What a directory copied as it is holds: the artifact directory whole, read by
    the same rules, its manifest and the directories it names checked as for build."""
    known = len(problems)
    for prefix in read_manifest(source / directory / MANIFEST):
        real_directory(str(source / directory), prefix, problems)
    if len(problems) > known:
        return []  # a symlinked prefix: named once, not again as a symlink leaving
    return _content(source, directory, problems)


def _content(root: Path, relative: str, problems: list[str]) -> Content:
    """Every entry of the content directory ``root/relative``, read by the rules of
    ``gfxpack build`` (the one walker of :mod:`gfxpack.artifact_files`): a symlink on
    the way to it, or one below it pointing outside it, a FIFO, a device, a name that
    is not UTF-8... each is a problem naming the path. Nothing when it does not exist."""
    if not real_directory(str(root), relative, problems):
        return []
    top = os.path.join(root, relative) if relative else str(root)
    # Entries come as "/<path inside top>": the tree has no install prefix yet.
    entries = walk(top, "", 0, True, problems, inside=printable(top), installed_at_prefix=False)
    # Modes are the packaging's business: split keeps them as they are.
    return [(entry.path[1:], str(entry.kind), entry.target) for entry in entries]


def _read_therock_manifest(path: Path) -> tuple[bytes, dict[str, Any]] | None:
    """The input's therock_manifest.json, never read through a symlink, and what it
    says (a "flags" object at least); None if there is none."""
    if not os.path.lexists(path):
        return None
    return read_therock_manifest(path)


@dataclass
class SplitSource:
    """The input, read and checked: ``kind`` ("therock" or "tree"), the fat artifacts
    to split, the directories copied as they are (with what each holds), the input's
    therock_manifest.json (its bytes and what it says; None without one), notes."""

    root: Path
    kind: str
    jobs: list[FatJob]
    copied: list[tuple[str, Content]] = field(default_factory=list)
    therock_manifest: tuple[bytes, dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)


def check_source(source: Path, kpack_dir: str | None) -> str | None:
    """``source`` must be a directory; ``kpack_dir``, normalized, a path inside it."""
    if not source.is_dir():
        raise SplitError(f"{source}: not a directory")
    if kpack_dir is not None:
        normalized = posixpath.normpath(kpack_dir)
        if kpack_dir.startswith("/") or normalized == ".." or normalized.startswith("../"):
            raise SplitError(f"--kpack-dir {kpack_dir!r}: expected a path inside the tree")
        kpack_dir = normalized
    return kpack_dir


def read_source(source: Path, name: str | None, kpack_dir: str | None) -> SplitSource:
    """The whole input, walked and checked before anything is written: every problem
    in one error, and nothing to undo. ``name`` (an artifact name such as
    ``sparse_lib``) is for an install tree; a TheRock artifacts directory names itself."""
    fat_dirs, copied_dirs, notes = _therock_layout(source)
    problems: list[str] = []
    if fat_dirs or copied_dirs:
        if name is not None:
            raise SplitError(f"{source}: a TheRock artifacts directory names itself; drop --name")
        jobs = [_therock_job(source, d, kpack_dir, problems) for d in fat_dirs]
        copied = [(d, _copied_content(source, d, problems)) for d in copied_dirs]
        manifest = _read_therock_manifest(source / THEROCK_MANIFEST)
        read = SplitSource(source, "therock", jobs, copied, manifest, notes)
    else:
        if name is None:
            raise SplitError(
                f"{source}: not a TheRock artifacts directory; give --name NAME_COMPONENT "
                "(such as sparse_lib) to split it as an install tree"
            )
        if not NAME_COMPONENT.match(name):
            raise SplitError(f"--name {name!r}: expected <name>_<component>, such as sparse_lib")
        if source.is_symlink():
            raise SplitError(
                f"{printable(str(source))}: is a symlink; give the directory it points to "
                "(gfxpack never follows a directory symlink)"
            )
        content = _content(source, "", problems)
        job = FatJob(
            name,
            None,
            [(TREE_PREFIX, source, content)],
            TREE_PREFIX,
            kpack_dir or DEFAULT_KPACK_DIR,
        )
        read = SplitSource(source, "tree", [job])
    if problems:
        raise SplitError("\n".join(dict.fromkeys(problems)))
    return read


__all__ = [
    "DEFAULT_KPACK_DIR",
    "TREE_PREFIX",
    "Content",
    "FatJob",
    "SplitInput",
    "SplitSource",
    "check_source",
    "read_source",
]
