"""Pausing Python's cyclic garbage collector around allocation-heavy pure work."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Planning a release or loading a descriptor tree makes ~10^5 small acyclic values;
    the cyclic collector would rescan the growing heap again and again (a third of the
    time or more) and free none of them. Reference counting still frees everything."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
