"""Applying a base image's layers, in order, to an empty root (image-spec
``layer.md``): later entries replace earlier ones, ``.wh.NAME`` deletes NAME,
``.wh..wh..opq`` empties its directory.

A base is input from anywhere, so its layers are hostile until proven otherwise:
every member is written relative to the descriptor of its parent directory, opened
part by part without following a symlink (:class:`gfxpack.safe_tree.Tree`), so a
member that climbs out (``../``, an absolute path, a path through a symlink an
earlier member made) is refused, not followed; a hard link must name a file of the
root; device nodes are refused. Each refusal is one :class:`ImageError` naming the
layer and the member.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tarfile
from pathlib import Path
from typing import Any, cast

from gfxpack.image import ImageError
from gfxpack.image.base import DECOMPRESSION_ERRORS, Base, BaseLayer, decompressed
from gfxpack.safe_tree import Tree, TreeError, copy_bytes

OPAQUE = ".wh..wh..opq"
WHITEOUT = ".wh."
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 1 << 20


def unpack(base: Base, root: Path) -> None:
    """Write ``base``'s files into the directory ``root``."""
    with Tree(root, writing=True) as tree:
        for number, layer in enumerate(base.layers, 1):
            shown = f"base {base.name}: layer {number} ({layer.descriptor.digest})"
            try:
                _apply(tree, layer, shown)
            except (tarfile.TarError, EOFError, OSError, *DECOMPRESSION_ERRORS) as e:
                raise ImageError(f"{shown}: cannot be unpacked: {e}") from None


def member_parts(name: str, shown: str) -> list[str]:
    """A member's path as parts below the root; '..' is refused.

    >>> member_parts("./usr/bin/../x", "l") # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ImageError: l: member './usr/bin/../x' leaves the root ('..')
    >>> member_parts("/etc//os-release", "l")
    ['etc', 'os-release']
    """
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageError(f"{shown}: member {name!r} leaves the root ('..')")
    return parts


def _apply(tree: Tree, layer: BaseLayer, shown: str) -> None:
    with decompressed(layer.path) as stream, tarfile.open(fileobj=stream, mode="r|*") as tar:
        for member in tar:
            parts = member_parts(member.name, shown)
            if not parts:
                continue
            try:
                _entry(tree, tar, member, parts, shown)
            except TreeError as e:
                raise ImageError(f"{shown}: member {member.name!r}: {e}") from None
            # A stream: what was read is not kept (tarfile lists every member it read).
            cast(Any, tar).members.clear()


def _entry(
    tree: Tree, tar: tarfile.TarFile, member: tarfile.TarInfo, parts: list[str], shown: str
) -> None:
    name = parts[-1]
    if name == OPAQUE:
        parent = tree.directory(parts[:-1], create=True)
        for entry in os.listdir(parent):
            _remove(parent, entry)
        return
    if name.startswith(WHITEOUT):
        _remove(tree.directory(parts[:-1], create=True), name.removeprefix(WHITEOUT))
        return
    if member.isdir():
        parent = tree.directory(parts[:-1], create=True)
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                _remove(parent, name)
        fd = tree.directory(parts, create=True)
        os.fchmod(fd, member.mode & 0o7777)
        os.fchown(fd, member.uid, member.gid)
        return
    parent = tree.directory(parts[:-1], create=True)
    _remove(parent, name)
    if member.isreg():
        source = tar.extractfile(member)
        fd = os.open(name, _CREATE, 0o600, dir_fd=parent)
        with os.fdopen(fd, "wb") as out:
            if source is not None:
                shutil.copyfileobj(source, out, CHUNK)
            os.fchown(out.fileno(), member.uid, member.gid)
            os.fchmod(out.fileno(), member.mode & 0o7777)
    elif member.issym():
        os.symlink(member.linkname, name, dir_fd=parent)
        os.chown(name, member.uid, member.gid, dir_fd=parent, follow_symlinks=False)
    elif member.islnk():
        _hard_link(tree, member, parts, shown)
        return
    elif member.isfifo():
        os.mkfifo(name, member.mode & 0o7777, dir_fd=parent)
    else:
        raise ImageError(
            f"{shown}: member {member.name!r} is a device node; gfxpack makes no device files"
        )
    os.utime(name, (member.mtime, member.mtime), dir_fd=parent, follow_symlinks=False)


def _hard_link(tree: Tree, member: tarfile.TarInfo, parts: list[str], shown: str) -> None:
    """A hard link to a regular file written earlier in the root: its bytes are copied
    (the layers gfxpack writes hold each file whole)."""
    target = member_parts(member.linkname, shown)
    try:
        source = tree.open_file(target)
    except TreeError as e:
        raise ImageError(
            f"{shown}: member {member.name!r} links to {member.linkname!r}: {e}"
        ) from None
    try:
        parent = tree.directory(parts[:-1], create=True)
        fd = os.open(parts[-1], _CREATE, 0o600, dir_fd=parent)
        try:
            copy_bytes(source, fd)
            info = os.fstat(source)
            os.fchown(fd, info.st_uid, info.st_gid)
            os.fchmod(fd, stat.S_IMODE(info.st_mode))
        finally:
            os.close(fd)
    finally:
        os.close(source)


def _remove(parent: int, name: str) -> None:
    """Remove ``name`` from the directory ``parent`` (a directory with all it holds)."""
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        try:
            for entry in os.listdir(fd):
                _remove(fd, entry)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=parent)
    else:
        os.unlink(name, dir_fd=parent)
