"""One image layer: chosen paths of a root as a reproducible gzip- or zstd-compressed tar.

Same root, same paths, same bytes: members sorted by path, each path's parent
directories before it (so an unpacker makes them with their own modes), owners as
numbers with no names, mtimes clamped to SOURCE_DATE_EPOCH, the PAX format with no
extended header but long names, and gzip at a fixed level with no name and no time
in its header (or zstd at a fixed level, always through zstd's worker threads: their
output is the same bytes for any number of workers, never the single-threaded
encoder's, which cuts blocks elsewhere). The tar is streamed through the compressor
into a scratch file while both are hashed (the uncompressed digest is the layer's
``diff_id``, the compressed one its blob digest), so memory stays bounded whatever the layer's size.

The root is read through :class:`gfxpack.safe_tree.Tree`: no symlink in it is
followed (a package's scripts could have pointed one at this machine's files), and
only directories, regular files and symlinks are put in a layer; anything else (a
FIFO, a socket, a device) is one error naming it.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import zstandard

from gfxpack._io import HashingWriter, as_binary_file
from gfxpack.image import ImageError
from gfxpack.image.layout import LAYER_GZIP, LAYER_ZSTD, Descriptor, put_file
from gfxpack.regular_files import file_kind
from gfxpack.safe_tree import Tree, TreeError

# gzip's level: fixed, since another level gives other bytes (and digests).
GZIP_LEVEL = 6
# zstd's level: its default, as fast as gzip -1 and smaller than gzip -6.
ZSTD_LEVEL = 3
# Worker threads: any count from 1 gives the same bytes (tests/image/test_layer.py);
# -1 is one per core. 0 would be the single-threaded encoder, whose bytes differ.
ZSTD_THREADS = -1
GZIP, ZSTD = "gzip", "zstd"
# The default is gzip: every client pulls it; zstd needs docker >= 23, containerd >= 1.5.
COMPRESSIONS = (GZIP, ZSTD)
MEDIA_TYPES = {GZIP: LAYER_GZIP, ZSTD: LAYER_ZSTD}
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
    compression: str = GZIP,
) -> Layer:
    """The layer of ``paths`` ('/path' under ``root``) and ``whiteouts`` (paths the layer
    deletes from the ones below), written into ``layout`` compressed by ``compression``
    (gzip or zstd)."""
    if compression not in MEDIA_TYPES:
        raise ImageError(f"compression {compression!r}: expected one of {', '.join(COMPRESSIONS)}")
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
            with _compressing(compression, compressed) as zipped:
                plain = HashingWriter(zipped, "sha256")
                with tarfile.open(
                    fileobj=as_binary_file(plain), mode="w|", format=tarfile.PAX_FORMAT
                ) as tar:
                    for name in sorted(members):
                        _add(tar, tree, name, members[name], epoch, name in optional)
        descriptor = put_file(
            layout, Path(scratch.name), "sha256:" + compressed.hexdigest(), MEDIA_TYPES[compression]
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


@contextlib.contextmanager
def _compressing(compression: str, sink: HashingWriter) -> Iterator[IO[bytes]]:
    """A writer compressing into ``sink``; closing it ends the stream (not ``sink``)."""
    if compression == GZIP:
        with gzip.GzipFile(
            filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=sink, mtime=0
        ) as zipped:
            yield as_binary_file(zipped)
        return
    compressor = zstandard.ZstdCompressor(
        level=ZSTD_LEVEL, threads=ZSTD_THREADS, write_checksum=False, write_content_size=False
    )
    with compressor.stream_writer(as_binary_file(sink), closefd=False) as zipped:
        yield as_binary_file(zipped)


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
