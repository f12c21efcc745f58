"""One ``gfxpack repo`` run as a transaction over a repository directory.

* **One run at a time**: an exclusive ``flock`` on ``OUT/.gfxpack-repo.lock``; a second
  run waits for the first (and says so) or fails at once, so neither loses the other's
  packages.
* **Every write is a rename**: files are written under a hidden name with mode 0644 and
  renamed into place; directories are made 0755. A failure removes the partial files
  and the pool files this run added before recording them.
* **What was published is recorded** (repo/state.py: size, sha256 and an inode stamp of
  every pool file). A pool file whose stamp changed is hashed again; bytes that differ
  from the record are an error, never re-indexed nor re-signed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gfxpack._io import DIRECTORY_MODE, FILE_MODE, atomic_path
from gfxpack.regular_files import NotARegularFile, file_kind
from gfxpack.repo.inputs import InputFile, RepoError, digest
from gfxpack.repo.state import PackageEntry

LOCK = ".gfxpack-repo.lock"
# Where a run stages what it writes before renaming it into place: removed whole when
# the run ends, and by the next run when it was killed.
WORK = ".gfxpack-work"

_COPY_CHUNK = 1 << 24
# What copy_file_range fails with where the kernel cannot copy between these two files.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}


def stamp(path: Path) -> str:
    """Changes whenever the file's bytes may have: size, mtime, ctime (which no one can
    set back) and inode; of the entry itself (a symlink put in its place is not
    followed)."""
    return _stamp_of(path.lstat())


def _stamp_of(info: os.stat_result) -> str:
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


def unchanged(path: str, recorded_stamp: str) -> bool:
    """Whether the entry at ``path`` still has ``recorded_stamp``: the one lstat a run
    spends on each of the thousands of pool files its indexes name (a plain string
    path: no Path is made for a file that passes); anything else goes to
    :func:`check_recorded`, which says what changed."""
    try:
        return _stamp_of(os.lstat(path)) == recorded_stamp
    except OSError:
        return False


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
        lock = self.out / LOCK
        try:
            # Never through a link: a dangling one would create its target anywhere.
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            raise RepoError(
                f"{lock}: a symlink; gfxpack never follows one inside a repository "
                "(remove it: the lock is made again)"
            ) from None
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
        if self.work.is_dir() and not self.work.is_symlink():
            shutil.rmtree(self.work)  # what a killed run was writing
        else:
            self.work.unlink(missing_ok=True)
        self.work.mkdir(mode=0o700)
        return self

    @property
    def work(self) -> Path:
        """This run's scratch directory, on the repository's file system."""
        return self.out / WORK

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            # Best effort: the error being raised says what went wrong.
            for path in self._unrecorded:
                with contextlib.suppress(OSError):
                    path.unlink()
        if self._lock_fd is not None:
            shutil.rmtree(self.work, ignore_errors=True)
            os.close(self._lock_fd)  # releases the lock

    # --- writes ---------------------------------------------------------------------

    def add_to_pool(self, source: InputFile, pool: Path) -> Path:
        """Copy ``source`` into ``pool``, mode 0644 and its mtime kept. A copy, never a
        hard link: editing the build in place must not change what is published. The
        copy's bytes are checked against the digest the indexes were made from, so a
        build file changed since it was read is refused, not published."""
        make_dirs(pool)
        target = pool / source.name
        partial = self.work / source.name
        _copy(source.path, partial)
        if digest(partial) != (source.size, source.sha256):
            raise RepoError(
                f"{source.path}: changed while it was being published; nothing was "
                "published, run gfxpack repo again"
            )
        # Readable by the web server only once its bytes are known to be the right ones.
        partial.chmod(FILE_MODE)
        self._unrecorded.add(target)
        os.replace(partial, target)
        return target

    def forget(self, path: Path) -> None:
        """``path`` (added by :meth:`add_to_pool`) is recorded: an error no longer removes it."""
        self._unrecorded.discard(path)


# --- what was published --------------------------------------------------------------


def check_published(pool: Path, entry: PackageEntry) -> str:
    """The stamp of the published pool file of ``entry`` now, after checking its bytes
    are those recorded when its stamp changed."""
    return check_recorded(pool / entry.name, entry.size, entry.sha256, entry.stamp)


def check_recorded(path: Path, size: int, sha256: str, recorded_stamp: str) -> str:
    """The stamp of the published pool file ``path`` now, after checking its bytes are
    the ``size`` and ``sha256`` recorded when its stamp is not ``recorded_stamp``."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise RepoError(
            f"{path}: published, but gone from the pool; restore it from a backup"
        ) from None
    # What the entry is, and its size, say most changes before a byte is read: a FIFO
    # would hang the hash, a link to /dev/zero never end it, a sparse file of 20 GB
    # take minutes.
    if not stat.S_ISREG(info.st_mode):
        raise _changed(path, f"now {file_kind(info.st_mode)}, not the regular file published")
    now = _stamp_of(info)
    if recorded_stamp == now:
        return now
    if info.st_size != size:
        raise _changed(path, f"{info.st_size} bytes, published {size}")
    found = _published_digest(path, size)
    if found != (size, sha256):
        raise RepoError(
            f"{path}: its bytes differ from those published (sha256 {found[1]}, "
            f"recorded {sha256}); a published file never changes: restore it, "
            "nothing was re-signed"
        )
    return now


def _changed(path: Path, how: str) -> RepoError:
    return RepoError(
        f"{path}: changed after publishing ({how}); a published file never changes: "
        "restore it, nothing was re-signed"
    )


def _published_digest(path: Path, size: int) -> tuple[int, str]:
    """(size, sha256) of the pool file ``path``, still a regular file: at most ``size``
    + 1 bytes are read (more are a change, whatever they hold)."""
    try:
        return digest(path, size)
    except NotARegularFile as e:
        raise _changed(path, f"now {e.strerror}") from None
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        raise _changed(path, "now a symlink") from None


# --- placing files -----------------------------------------------------------------------


def place(staged: Path, target: Path) -> None:
    """Rename the complete file ``staged`` onto ``target`` (its directories made)."""
    make_dirs(target.parent)
    os.replace(staged, target)


def place_bytes(data: bytes, staged: Path, target: Path, mtime: float) -> None:
    """``target`` holds ``data``, mode 0644 and modification time ``mtime``, written at
    the new path ``staged`` (on the same file system) and renamed into place."""
    staged.write_bytes(data)
    os.chmod(staged, FILE_MODE)
    os.utime(staged, (mtime, mtime))
    place(staged, target)


def link_or_copy(source: Path, target: Path) -> None:
    """A second name ``target`` for the complete file ``source``: a hard link, or where
    the file system has none a copy renamed into place. Either way ``target`` appears
    whole or not at all."""
    make_dirs(target.parent)
    try:
        os.link(source, target)
    except FileExistsError:
        pass
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EXDEV, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        with atomic_path(target) as partial:
            shutil.copyfile(source, partial)
            partial.chmod(FILE_MODE)


def later_mtime(*paths: Path) -> float:
    """A modification time for files replacing ``paths``: now, or a second past the
    newest of them when that is not earlier (an HTTP Last-Modified has whole seconds,
    so a file replaced within the same second would look unchanged to a client)."""
    now = time.time()
    newest = max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)
    return max(now, float(int(newest)) + 1.0)


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
