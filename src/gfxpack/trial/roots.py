"""The throwaway root and the client directory of a tried install: made new (or an
earlier try-install root replaced, nothing else), claimed by a lock for as long as the
run lives, emptied or removed when the run is interrupted, and removed by a later run
when a killed run left them (:func:`sweep_stale`)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from gfxpack.trial.tools import TrialError

# A root or client directory try-install made holds this file: only such a root is
# replaced by a later run, and only such a directory is removed as stale.
MARKER = ".gfxpack-try-install"
# ... and this one while a run is making it: one a dead run left is stale.
RUNNING = ".gfxpack-try-install-running"
# The temporary roots and client directories, in the temporary directory.
ROOT_PREFIX = "gfxpack-try-install-"
CLIENT_PREFIX = "gfxpack-try-install-client-"


def existing_root(root: Path) -> bool:
    """Whether ``root`` is there and is a root try-install made (to be replaced); refused
    when it is anything but a new or empty directory or such a root."""
    try:
        info = root.lstat()
    except FileNotFoundError:
        return False
    except OSError as e:
        raise TrialError(f"{root}: cannot read: {e.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a directory"
        raise TrialError(f"{root}: is {kind}; give a new or empty directory as --root")
    try:
        if not any(root.iterdir()):
            return False
        marker = (root / MARKER).lstat()
    except FileNotFoundError:
        marker = None
    except OSError as e:
        raise TrialError(f"{root}: cannot read: {e.strerror}") from None
    if marker is None or not stat.S_ISREG(marker.st_mode):
        raise TrialError(
            f"{root}: exists and holds files try-install did not make; give a new or "
            "empty directory as --root"
        )
    return True


def fresh_root(root: Path, replace: bool) -> int:
    """``root`` as an empty directory holding the marker, claimed (:func:`claim`); an
    earlier root is replaced. The descriptor holding the claim."""
    try:
        if replace:
            shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrialError(f"{root}: cannot make the root: {e.strerror}") from None
    return claim(root, "a throwaway root of gfxpack try-install; a later run into it replaces it")


def claim(directory: Path, what: str) -> int:
    """Lock ``directory`` for as long as this process lives (the lock goes with it, even
    when it is killed), then write the marker saying ``what`` it is and :data:`RUNNING`:
    a later run removes a directory holding RUNNING as stale only when it can take the
    lock (:func:`sweep_stale`). The descriptor holding the lock (:func:`release`)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise TrialError(f"{directory}: cannot open: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (directory / MARKER).write_text(what + "\n", encoding="utf-8")
        (directory / RUNNING).write_text(f"{os.getpid()}\n", encoding="utf-8")
    except OSError as e:
        os.close(fd)
        busy = e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
        reason = "another try-install is using it" if busy else e.strerror
        raise TrialError(f"{directory}: cannot claim it: {reason}") from None
    return fd


def release(directory: Path, fd: int) -> None:
    """The run is over: ``directory`` (a kept root) is no longer stale when left."""
    with contextlib.suppress(OSError):
        (directory / RUNNING).unlink()
    os.close(fd)


def sweep_stale(directory: Path | None = None) -> list[Path]:
    """Remove what killed runs left in the temporary directory (or ``directory``): each
    ``gfxpack-try-install-*`` directory of this user that holds :data:`RUNNING` and whose
    lock no live run holds (a root kept by ``--keep`` holds no RUNNING). The directories
    removed."""
    base = Path(tempfile.gettempdir() if directory is None else directory)
    removed = []
    for path in sorted(base.glob(ROOT_PREFIX + "*")):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # not a directory, or a symlink: not one a run made
        try:
            if os.fstat(fd).st_uid != os.geteuid():
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # RUNNING is written once the lock is held: with the lock now ours, RUNNING
            # means its run is gone; none, that the run is starting or was kept.
            if stat.S_ISREG((path / RUNNING).lstat().st_mode):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        except OSError:
            continue  # a live run holds it, or it is no longer there
        finally:
            os.close(fd)
    return removed


def discard(root: Path, keep_directory: bool) -> None:
    """Remove ``root`` (an interrupted install's), or only what is in it when the
    directory itself was there before."""
    if not keep_directory:
        shutil.rmtree(root, ignore_errors=True)
        return
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


@contextlib.contextmanager
def terminated_as_exit() -> Iterator[None]:
    """While in effect, SIGTERM ends this process as Ctrl-C (SIGINT) does, by an
    exception, so that the finally blocks removing the root and the client directory
    run (SIGTERM's default ends it at once); the exit status is 128 + 15."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers are the main thread's
        return

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
