"""A gfxpack command killed on entry to its Nth rename(2), by strace: every publishing
step is a rename (pool links, records, indexes, Release, the repodata swap), so running
it for every N until a run finishes tries every step; nothing in gfxpack knows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence


def killed_run(args: Sequence[str], nth: int, env: dict[str, str] | None = None) -> int:
    """Exit status of ``gfxpack ARGS`` killed on its ``nth`` rename (0: it had fewer)."""
    command = [sys.executable, "-m", "gfxpack", *args]
    strace = ["strace", "-qq", "-o", "/dev/null", "-e", "trace=rename", "-e", "signal=none"]
    traced = subprocess.run(
        [*strace, "-e", f"inject=rename:signal=KILL:when={nth}", *command],
        capture_output=True,
        check=False,
        env=env,
    )
    return traced.returncode


KILLED = (-9, 137)  # the exit status of a run strace killed
