"""A build's output directory: it holds exactly one build, and never a half-written file.

- Packages are written in a private scratch directory and renamed in when complete;
  ``index.json`` describes them and is written last.
- Before the first rename the previous ``index.json`` is removed, so an interrupted
  rebuild never leaves an index describing files that were since replaced. Which files
  gfxpack wrote there (the previous index's, and this build's) is kept meanwhile in
  ``.gfxpack-building.json``, removed once the new index is complete.
- After the index: files an earlier gfxpack build wrote that this build does not produce
  are removed; files gfxpack did not write are left alone. Both are reported.
- Every scratch file or directory is named ``.gfxpack-partial-*`` and locked (flock) by
  the run using it; a run removes the unlocked ones a killed run left.
- Files get mode 0644 and a directory gfxpack creates 0755, whatever the umask.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack._io import DIRECTORY_MODE, FILE_MODE
from gfxpack.errors import GfxpackError

INDEX = "index.json"
# The largest index.json read: a whole release's is a few MiB.
INDEX_LIMIT = 64 << 20
CLAIMS = ".gfxpack-building.json"
SCRATCH_PREFIX = ".gfxpack-partial-"


class OutputError(GfxpackError):
    """The output directory cannot be created or written; names the path and the cause."""


@dataclass(frozen=True, slots=True)
class Tidied:
    """What finishing a build did to files it did not write."""

    removed: tuple[str, ...] = ()  # an earlier build's files this build does not produce
    foreign: tuple[str, ...] = ()  # entries gfxpack did not write, left alone


def _fail(path: Path | str, action: str, error: OSError) -> OutputError:
    return OutputError(f"{path}: cannot {action}: {error.strerror or error}")


def create(out: Path) -> None:
    """Create ``out`` if needed (0755) and remove what killed runs left in it."""
    try:
        if not out.is_dir():
            out.mkdir(parents=True)
            os.chmod(out, DIRECTORY_MODE)
    except OSError as e:
        raise _fail(out, "create the output directory", e) from None
    remove_stale_scratch(out)


def remove_stale_scratch(out: Path) -> list[str]:
    """Remove the ``.gfxpack-partial-*`` entries no live run holds a lock on."""
    removed = []
    try:
        names = sorted(n for n in os.listdir(out) if n.startswith(SCRATCH_PREFIX))
    except OSError as e:
        raise _fail(out, "read the output directory", e) from None
    for name in names:
        path = out / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # a symlink or vanished: not ours
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # a live run's
        try:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed.append(name)
        except OSError as e:
            raise _fail(path, "remove what an interrupted build left", e) from None
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def scratch(out: Path) -> Iterator[str]:
    """A private directory inside ``out``, locked while in use and removed after."""
    try:
        path = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=out)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise _fail(out, "write in the output directory", e) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def write_json(path: Path, document: Any) -> None:
    """Write a JSON file atomically (mode 0644): complete or not at all."""
    text = json.dumps(document, indent=2) + "\n"
    try:
        fd, partial = tempfile.mkstemp(prefix=SCRATCH_PREFIX, suffix=".json", dir=path.parent)
    except OSError as e:
        raise _fail(path.parent, "write in the output directory", e) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), FILE_MODE)
            file.write(text)
        os.replace(partial, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise _fail(path, "write", e) from None


def _plain_names(document: Any, key: str) -> set[str]:
    """The file names a previous index or claims file lists; anything that is not a
    plain file name (a path, '..') is ignored, so it can never remove a file elsewhere."""
    if not isinstance(document, dict) or not isinstance(document.get(key), list):
        return set()
    names = set()
    for item in document[key]:
        name = item.get("file") if isinstance(item, dict) else item
        if (
            isinstance(name, str)
            and name not in ("", ".", "..", INDEX, CLAIMS)
            and "/" not in name
            and "\0" not in name
            and not name.startswith(".")
        ):
            names.add(name)
    return names


def _read_json(path: Path) -> Any:
    """A previous index or claims file; None when it is missing, not a regular file (never
    followed, never blocked on) or not JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    # Checked before the file object is made: a directory opens, but is no file.
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as file:
        try:
            return json.loads(file.read(INDEX_LIMIT))
        except (OSError, ValueError, RecursionError):
            return None


def _refuse_an_index_directory(out: Path) -> None:
    """Refuse an ``index.json`` in ``out`` that gfxpack could neither read nor replace
    (a directory), before anything is written there."""
    try:
        mode = os.lstat(out / INDEX).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise _fail(out / INDEX, "read", e) from None
    if stat.S_ISDIR(mode):
        raise OutputError(
            f"{out / INDEX}: is a directory, where the build's index goes; "
            "remove it or choose another output directory"
        )


def begin(out: Path, produced: Iterable[str]) -> set[str]:
    """Before anything is renamed into ``out``: record which files gfxpack wrote there
    (earlier builds' and this one's), then remove the previous index. Returns the names
    earlier builds wrote."""
    _refuse_an_index_directory(out)
    earlier = _plain_names(_read_json(out / INDEX), "files") | _plain_names(
        _read_json(out / CLAIMS), "files"
    )
    write_json(out / CLAIMS, {"files": sorted(earlier | set(produced))})
    try:
        (out / INDEX).unlink(missing_ok=True)
    except OSError as e:
        raise _fail(out / INDEX, "remove the previous index", e) from None
    return earlier


def finish(
    out: Path, write_index: Callable[[], None], produced: Iterable[str], earlier: set[str]
) -> Tidied:
    """Write the index of a complete build (``write_index``: the shape is
    :mod:`gfxpack.build_index`'s), then remove what earlier builds left."""
    produced = set(produced)
    write_index()
    removed = []
    for name in sorted(earlier - produced):
        path = out / name
        try:
            if os.path.lexists(path) and not stat.S_ISDIR(os.lstat(path).st_mode):
                path.unlink()
                removed.append(name)
        except OSError as e:
            raise _fail(path, "remove a file of an earlier build", e) from None
    try:
        (out / CLAIMS).unlink(missing_ok=True)
        present = sorted(os.listdir(out))
    except OSError as e:
        raise _fail(out, "update the output directory", e) from None
    ours = produced | {INDEX, CLAIMS}
    foreign = [n for n in present if n not in ours and not n.startswith(SCRATCH_PREFIX)]
    return Tidied(tuple(removed), tuple(foreign))
