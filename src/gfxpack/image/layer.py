"""One image layer: chosen paths of a root as a reproducible gzip-compressed tar.

Same root, same paths, same bytes: members sorted by path, each path's parent
directories before it (so an unpacker makes them with their own modes), owners as
numbers with no names, mtimes clamped to SOURCE_DATE_EPOCH, the PAX format with no
extended header but long names, and gzip at a fixed level with no name and no time
in its header. The tar is streamed through gzip into a scratch file while both are
hashed (the uncompressed digest is the layer's ``diff_id``, the compressed one its
blob digest), so memory stays bounded whatever the layer's size.

The root is read through :class:`gfxpack.safe_tree.Tree`: no symlink in it is
followed (a package's scripts could have pointed one at this machine's files), and
only directories, regular files and symlinks are put in a layer; anything else (a
FIFO, a socket, a device) is one error naming it.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gfxpack._io import HashingWriter, as_binary_file
from gfxpack.image import ImageError
from gfxpack.image.layout import LAYER_GZIP, Descriptor, put_file
from gfxpack.regular_files import file_kind
from gfxpack.safe_tree import Tree, TreeError

# gzip's level: fixed, since another level gives other bytes (and digests).
GZIP_LEVEL = 6
CHUNK = 1 << 20
# A whiteout (image-spec layer.md): an empty file ".wh.NAME" deletes NAME below.
WHITEOUT = ".wh."


@dataclass(frozen=True, slots=True)
class Layer:
    """A layer written into a layout: its blob, what it unpacks to, and what it holds."""

    descriptor: Descriptor
    diff_id: str  # sha256 of the uncompressed tar
    unpacked_size: int  # bytes of the uncompressed tar
    paths: tuple[str, ...]  # '/path' of every entry chosen for it (parents aside)
    what: str  # host, device gfx942, top, family amdrocm-blas...

    @property
    def size(self) -> int:
        return self.descriptor.size


def parents(path: str) -> list[str]:
    """The directories above the relative ``path``, outermost first.

    >>> parents("opt/rocm/lib/x.so")
    ['opt', 'opt/rocm', 'opt/rocm/lib']
    """
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def write_layer(
    root: Path,
    paths: Iterable[str],
    epoch: int,
    layout: Path,
    what: str,
    whiteouts: Iterable[str] = (),
) -> Layer:
    """The layer of ``paths`` ('/path' under ``root``) and ``whiteouts`` (paths the layer
    deletes from the ones below), written into ``layout``."""
    chosen = sorted({p.strip("/") for p in paths} - {""})
    deleted = sorted({p.strip("/") for p in whiteouts} - {""})
    members: dict[str, str | None] = {}  # relative path -> whiteout of (None: from root)
    for path in chosen:
        for parent in parents(path):
            members.setdefault(parent, None)
        members[path] = None
    # A whiteout's directory the root no longer has is written as a plain one.
    optional = {parent for path in deleted for parent in parents(path)} - members.keys()
    for path in deleted:
        for parent in parents(path):
            members.setdefault(parent, None)
        head, _, name = path.rpartition("/")
        members[f"{head}/{WHITEOUT}{name}".lstrip("/")] = path
    scratch = tempfile.NamedTemporaryFile(dir=layout, prefix=".layer-", delete=False)  # noqa: SIM115
    try:
        with scratch, Tree(root) as tree:
            compressed = HashingWriter(scratch, "sha256")
            with gzip.GzipFile(
                filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=compressed, mtime=0
            ) as zipped:
                plain = HashingWriter(zipped, "sha256")
                with tarfile.open(
                    fileobj=as_binary_file(plain), mode="w|", format=tarfile.PAX_FORMAT
                ) as tar:
                    for name in sorted(members):
                        _add(tar, tree, name, members[name], epoch, name in optional)
        descriptor = put_file(
            layout, Path(scratch.name), "sha256:" + compressed.hexdigest(), LAYER_GZIP
        )
    except BaseException:
        Path(scratch.name).unlink(missing_ok=True)
        raise
    return Layer(
        descriptor,
        "sha256:" + plain.hexdigest(),
        plain.size,
        tuple("/" + p for p in chosen),
        what,
    )


def _add(
    tar: tarfile.TarFile,
    tree: Tree,
    name: str,
    whiteout_of: str | None,
    epoch: int,
    optional: bool = False,
) -> None:
    info = tarfile.TarInfo(name)
    info.uname = info.gname = ""
    info.mtime = epoch
    if whiteout_of is not None:
        info.mode = 0o644
        tar.addfile(info)
        return
    parts = name.split("/")
    if optional and not os.path.lexists(os.path.join(tree.shown, name)):
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
        return
    try:
        status = tree.status(parts)
        mode = status.st_mode
        info.mode = stat.S_IMODE(mode)
        info.uid, info.gid = status.st_uid, status.st_gid
        info.mtime = min(int(status.st_mtime), epoch)
        if stat.S_ISDIR(mode):
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        elif stat.S_ISLNK(mode):
            info.type, info.linkname = tarfile.SYMTYPE, tree.read_link(parts)
            tar.addfile(info)
        elif stat.S_ISREG(mode):
            fd = tree.open_file(parts)
            with os.fdopen(fd, "rb") as file:
                info.size = os.fstat(file.fileno()).st_size
                tar.addfile(info, file)
        else:
            raise ImageError(
                f"{tree.name(parts)}: is {file_kind(mode)}; an image layer holds directories, "
                "regular files and symlinks only"
            )
    except TreeError as e:
        raise ImageError(str(e)) from None
