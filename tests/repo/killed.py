"""A gfxpack command killed on entry to its Nth rename(2) (or Nth of other system calls),
by strace: every publishing step is a rename (pool copies, indexes, Release, repodata)
and every removal an unlink (the record's commits, which delete SQLite's journal, old
index generations, pool files no index names any more), so running it for every N
until a run finishes tries every step; nothing in gfxpack knows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence


def killed_run(
    args: Sequence[str], nth: int, env: dict[str, str] | None = None, syscall: str = "rename"
) -> int:
    """Exit status of ``gfxpack ARGS`` killed on its ``nth`` call of ``syscall`` (0: it
    had fewer)."""
    command = [sys.executable, "-m", "gfxpack", *args]
    strace = ["strace", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}", "-e", "signal=none"]
    traced = subprocess.run(
        [*strace, "-e", f"inject={syscall}:signal=KILL:when={nth}", *command],
        capture_output=True,
        check=False,
        env=env,
    )
    return traced.returncode


KILLED = (-9, 137)  # the exit status of a run strace killed
