"""How a run waits for its layers before mounting another arch's root: it sleeps
until a layer it waits for is written, and never spins on one written earlier."""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from gfxpack.image.workflow import _ArchRoot, _Pending, _unmount_written


def pending(arch: str, *own: Future) -> tuple[_Pending, list[str]]:
    """An installed root whose own layers are ``own``; the list says when it was closed."""
    closed: list[str] = []
    stack = contextlib.ExitStack()
    stack.callback(closed.append, arch)
    root = _ArchRoot(arch, [], Path("/nonexistent"), {}, {}, [], stack)
    return _Pending(root, list(own), list(own)), closed


def test_a_root_is_unmounted_once_its_own_layers_are_written_and_the_wait_sleeps():
    written_earlier: Future = Future()
    written_earlier.set_result(None)
    host: Future = Future()  # still being written
    first, first_closed = pending("gfx942", written_earlier, host)
    second_done: Future = Future()
    second_done.set_result(None)
    second, second_closed = pending("gfx90a", second_done)

    # The second's layers are written: it is unmounted at once, the first stays.
    _unmount_written([first, second], 1)
    assert (first.mounted, second.mounted) == (True, False) and second_closed == ["gfx90a"]

    # At most none mounted: the wait lasts until the host layer is written, asleep
    # (the first's other layer, written long ago, must not wake it again and again).
    timer = threading.Timer(0.3, host.set_result, [None])
    timer.start()
    started, cpu = time.monotonic(), time.thread_time()
    _unmount_written([first, second], 0)
    assert time.monotonic() - started >= 0.25
    assert time.thread_time() - cpu < 0.1, "the wait spun instead of sleeping"
    assert not first.mounted and first_closed == ["gfx942"]


def test_a_layer_that_failed_fails_the_wait():
    failed: Future = Future()
    failed.set_exception(OSError("disk full"))
    broken, closed = pending("gfx942", failed)
    try:
        _unmount_written([broken], 0)
    except OSError as e:
        assert str(e) == "disk full"
    else:
        raise AssertionError("a failed layer was not raised")
    assert closed == ["gfx942"] and not broken.mounted
