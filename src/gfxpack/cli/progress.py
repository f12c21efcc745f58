"""A progress line on a terminal for long work told its steps: (what, done, total)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

# What a long piece of work is told at each step: what it is doing, how much of how
# much is done.
OnStep = Callable[[str, int, int], None]


@contextlib.contextmanager
def terminal_progress(quiet: bool, first: str) -> Iterator[OnStep | None]:
    """A transient progress line (spinner, step, bar, count, time) on stderr when it is
    a terminal, starting at ``first``; nothing when ``quiet`` or otherwise, so a
    pipeline's stderr holds errors only."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    # rich only for a terminal: a pipeline's run does not import it.
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task(first, total=None)

        def update(what: str, done: int, total: int) -> None:
            progress.update(task, description=what, completed=done, total=total)

        yield update
