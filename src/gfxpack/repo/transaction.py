"""One ``gfxpack repo`` run as a transaction over a repository directory.

* **One run at a time**: an exclusive ``flock`` on ``OUT/.gfxpack-repo.lock``; a second
  run waits for the first (and says so) or fails at once, so neither loses the other's
  packages.
* **Every write is a rename**: files are written under a hidden ``.partial`` name with
  mode 0644 and renamed into place; directories are made 0755. A failure removes the
  partial files and the pool files this run added before recording them.
* **What was published is recorded** per pool (``.gfxpack-pool.json``: size, sha256 and
  an inode stamp of every pool file). A pool file whose stamp changed is hashed again;
  bytes that differ from the record are an error, never re-indexed nor re-signed.
* **Leftovers are recovered** when the next run starts: partial files and temporary
  repodata directories are removed, a ``repodata`` moved aside is put back, and pool
  files an interrupted run added but never recorded are removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gfxpack._io import DIRECTORY_MODE, FILE_MODE, atomic_path
from gfxpack.formats.package_format import FORMATS
from gfxpack.repo.inputs import InputFile, RepoError, digest

LOCK = ".gfxpack-repo.lock"
RECORD = ".gfxpack-pool.json"
# What older gfxpack versions kept beside the apt pool; the record replaces it.

_COPY_CHUNK = 1 << 24
# What copy_file_range fails with where the kernel cannot copy between these two files.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}


def stamp(path: Path) -> str:
    """Changes whenever the file's bytes may have: size, mtime, ctime (which no one can
    set back) and inode."""
    info = path.stat()
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


def make_dirs(path: Path) -> None:
    """``path`` and its missing parents, mode 0755 whatever the umask."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:  # another run made it first (before taking the lock)
            if not directory.is_dir():
                raise
            continue
        directory.chmod(DIRECTORY_MODE)


def _copy(source: Path, destination: Path) -> None:
    """A new file ``destination`` (mode 0600) with the bytes and mtime of the regular file
    ``source``, whose last component is never followed. The kernel copies
    (copy_file_range: a reflink on filesystems that share extents, such as Btrfs and XFS),
    else a read-write loop where it cannot (another filesystem, an old kernel)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    with contextlib.ExitStack() as files:
        try:
            src = os.open(source, flags)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise RepoError(f"{source}: a symlink; only regular files are published") from None
            raise
        files.callback(os.close, src)
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode):
            raise RepoError(f"{source}: not a regular file; only regular files are published")
        dst = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        files.callback(os.close, dst)
        copied = 0
        try:
            while chunk := os.copy_file_range(src, dst, _COPY_CHUNK):
                copied += chunk
        except OSError as e:
            if copied or e.errno not in _NO_KERNEL_COPY:
                raise
            with open(src, "rb", closefd=False) as reader, open(dst, "wb", closefd=False) as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)
        os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))


class Transaction:
    """The writes of one run; see the module. Use as a context manager."""

    def __init__(
        self, out: Path, waiting: Callable[[str], None] = lambda _: None, wait: bool = True
    ) -> None:
        self.out = out
        self._waiting = waiting
        self._wait = wait
        self._lock_fd: int | None = None
        self._unrecorded: set[Path] = set()

    def __enter__(self) -> Transaction:
        make_dirs(self.out)
        fd = os.open(self.out / LOCK, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not self._wait:
                os.close(fd)
                raise RepoError(
                    f"{self.out}: another gfxpack repo run is publishing here "
                    "(without --no-wait, this run would wait for it)"
                ) from None
            self._waiting(f"waiting for another gfxpack repo run on {self.out} to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        self._lock_fd = fd
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            # Best effort: the error being raised says what went wrong.
            for path in self._unrecorded:
                with contextlib.suppress(OSError):
                    path.unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock

    # --- writes ---------------------------------------------------------------------

    def write(self, path: Path, data: bytes) -> None:
        """``path`` holds ``data``, mode 0644, replaced in one rename."""
        make_dirs(path.parent)
        with atomic_path(path) as partial:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            with os.fdopen(fd, "wb") as file:
                os.fchmod(fd, FILE_MODE)
                file.write(data)

    def add_to_pool(self, source: InputFile, pool: Path) -> Path:
        """Copy ``source`` into ``pool``, mode 0644 and its mtime kept. A copy, never a
        hard link: editing the build in place must not change what is published. The
        copy's bytes are checked against the digest the indexes were made from, so a
        build file changed since it was read is refused, not published."""
        make_dirs(pool)
        target = pool / source.name
        with atomic_path(target) as partial:
            _copy(source.path, partial)
            if digest(partial) != (source.size, source.sha256):
                raise RepoError(
                    f"{source.path}: changed while it was being published; nothing was "
                    "published, run gfxpack repo again"
                )
            self._unrecorded.add(target)
            # Readable by the web server only once its bytes are known to be the right ones.
            partial.chmod(FILE_MODE)
        return target

    def record(self, pool: Path, record: dict[str, dict[str, Any]]) -> None:
        """Write the record of ``pool``: from now on its files are published."""
        # Sorted by file name; each stanza keeps its field order.
        ordered = {name: record[name] for name in sorted(record)}
        self.write(pool / RECORD, json.dumps(ordered).encode())
        self._unrecorded -= {pool / name for name in record}


# --- what was published --------------------------------------------------------------


def read_record(pool: Path) -> dict[str, dict[str, Any]] | None:
    """The record of ``pool``, or None when there is none (a repository written by an
    older gfxpack, or a new one)."""
    path = pool / RECORD
    try:
        record = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise RepoError(
            f"{path}: unreadable record of the published files ({e}); "
            "restore it from a backup of the repository"
        ) from None
    if not isinstance(record, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("sha256"), str) for v in record.values()
    ):
        raise RepoError(f"{path}: not a record of published files")
    return record


def check_published(pool: Path, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` (the record of pool file ``name``) with a fresh stamp, after checking
    the file's bytes are those recorded when its stamp changed."""
    path = pool / name
    try:
        now = stamp(path)
        if entry.get("stamp") == now:
            return entry
        size, sha256 = digest(path)
    except FileNotFoundError:
        raise RepoError(
            f"{path}: published, but gone from the pool; restore it from a backup"
        ) from None
    if (size, sha256) != (entry.get("size"), entry["sha256"]):
        raise RepoError(
            f"{path}: its bytes differ from those published (sha256 {sha256}, "
            f"recorded {entry['sha256']}); a published file never changes: restore it, "
            "nothing was re-signed"
        )
    return {**entry, "stamp": now}


# --- leftovers of an interrupted run ---------------------------------------------------


def recover(roots: list[Path], pools: list[Path], note: Callable[[str], None]) -> None:
    """Remove the partial files an interrupted run left under ``roots`` (each format's
    own leftovers are its repository's to recover) and the files it added to ``pools``
    but never recorded; ``note`` tells."""
    for directory in roots:
        for root, _, files in os.walk(directory) if directory.is_dir() else ():
            for name in files:
                if name.startswith(".") and name.endswith(".partial"):
                    os.unlink(os.path.join(root, name))
    extensions = {fmt.extension for fmt in FORMATS}
    for pool in pools:
        record = read_record(pool)
        if record is None or not pool.is_dir():
            continue
        for path in sorted(pool.iterdir()):
            if path.suffix in extensions and path.name not in record:
                path.unlink()
                note(f"{path}: removed, an interrupted run added it but never published it")


@contextlib.contextmanager
def os_errors(what: str) -> Iterator[None]:
    """An OSError (no space left, read-only, permission denied) as one RepoError line."""
    try:
        yield
    except OSError as e:
        where = e.filename or what
        hint = ""
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            hint = "; nothing partial was left: free some space and run gfxpack repo again"
        raise RepoError(f"{where}: {e.strerror or e}{hint}") from None
