"""The local runners of build jobs: one after another here, or a process pool.

Both run :func:`~gfxpack.build.jobs.run_job` and report each result as it comes;
the Dask runner (:mod:`gfxpack.build.dask`) runs the same jobs on a cluster. The
pool's workers die with the build: an error or an interrupt kills them at once,
and their partial files lie in the scratch directory the build removes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from gfxpack.build.jobs import Job, JobResult, Record, run_job

# linux/prctl.h: deliver a signal to this process when its parent dies.
PR_SET_PDEATHSIG = 1


def run_serial(jobs: Sequence[Job], scratch: str, out: str, record: Record) -> None:
    """Each job in turn, in this process (-j 1)."""
    for job in jobs:
        record(job, run_job(job, scratch, out))


def run_pool(jobs: Sequence[Job], workers: int, scratch: str, out: str, record: Record) -> None:
    """The jobs on a pool of ``workers`` processes; the first error stops them all."""
    executor = ProcessPoolExecutor(
        max_workers=workers, initializer=_worker_init, initargs=(os.getpid(),)
    )
    futures: dict[Future[JobResult], Job] = {}
    try:
        for job in jobs:
            futures[executor.submit(run_job, job, scratch, out)] = job
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                record(futures[future], future.result())
    except BaseException:
        # Stop at once: queued jobs are dropped and running ones killed; their
        # partial files live in the scratch directory the caller removes.
        # (concurrent.futures has no public way to kill workers: _processes it is.)
        workers_running = list((getattr(executor, "_processes", None) or {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        for process in workers_running:
            process.terminate()
        for process in workers_running:
            process.join()
        raise
    executor.shutdown(wait=True)


def _worker_init(parent: int) -> None:
    # Only the parent reacts to Ctrl-C (the terminal signals the whole process
    # group): it terminates the workers and removes their partial files.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent)


def _die_with_parent(parent: int) -> None:
    """A worker whose build was killed (kill -9 leaves no chance to clean up) must not
    go on renaming packages into OUT: Linux kills it when its parent dies. (The signal
    follows the thread that started the worker; the pool starts its workers from the
    thread that runs the build, which lives as long as the build.)"""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: nothing to ask
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        os.kill(parent, 0)  # the parent may have died before the request
    except OSError:  # gone (or its pid already someone else's)
        os._exit(1)
