"""Build jobs on a Dask cluster (``gfxpack build --scheduler tcp://HOST:8786``).

The jobs go in a few tasks per worker thread, balanced by payload (a package's
formats in one task), submitted through dask.distributed's Client to a cluster
that already runs. Every worker runs the same job as a local pool's
process (:func:`gfxpack.build.jobs.run_job`): it reads the artifacts and writes
the package under OUT's scratch directory, then renames it into OUT. So the
artifacts and OUT must be at the same absolute path on every worker (a shared
file system), and every worker needs the same gfxpack installed.

When a worker dies, the scheduler gives its tasks to another worker; a task
whose workers keep dying fails the build with one line naming its packages.
Workers started with ``--preload gfxpack.dask_executor`` (the name users know for
this module's :func:`dask_setup`) load a job's code as they start.
The partial file a dead worker leaves lies in the scratch directory, which the
build removes. dask is imported here only, when a build asks for a cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED  # distributed.wait takes the same
from typing import Any

from gfxpack.build.jobs import BuildError, Job, JobResult, Record, run_job
from gfxpack.formats.payload import archive_size_hint

# Tasks per worker thread: few enough that the cluster's per-task cost is small against
# the work, enough that the last tasks are short and a lost worker loses little.
TASKS_PER_THREAD = 4
# How often, at most, a build that hears of no finished task asks whether the cluster
# still has workers (seconds).
WORKER_CHECK = 1.0
# malloc.h: allocations of at least M_MMAP_THRESHOLD bytes are mmapped; free memory
# above M_TRIM_THRESHOLD at the heap's top goes back to the system. 32 MiB is glibc's
# DEFAULT_MMAP_THRESHOLD_MAX on 64-bit.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20
_heap_set = False  # the threshold is set once per worker process


def run_on_cluster(
    jobs: Sequence[Job], address: str, timeout: float, scratch: str, out: str, record: Record
) -> None:
    """Run ``jobs`` on the cluster whose scheduler is at ``address``; ``record`` hears of
    each finished job as the cluster reports it."""
    try:
        from distributed import Client
        from distributed.scheduler import KilledWorker
    except ImportError:
        raise BuildError(
            "--scheduler needs dask.distributed, which is not installed: "
            "pip install 'gfxpack[dask]'"
        ) from None
    try:
        # The Client's own timeout covers connecting, not a peer that accepts and never
        # answers: ask the scheduler who it is first, within the timeout.
        asyncio.run(asyncio.wait_for(_identity(address), timeout))
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        cause = f" ({e})" if str(e) else ""
        raise BuildError(
            f"--scheduler {address}: no Dask scheduler answered within {timeout:g} s{cause}"
        ) from None
    futures: list[Any] = []
    try:
        threads = sum(client.nthreads().values())
        tasks = batches(jobs, TASKS_PER_THREAD * max(1, threads))
        # One graph update for every task (submitting one by one costs a round trip
        # each); pure=False: fresh tasks each build, never an earlier build's result.
        futures = client.map(write_packages, tasks, scratch=scratch, out=out, pure=False)
        jobs_of = {f.key: task for f, task in zip(futures, tasks, strict=True)}
        for future, outcome in _outcomes(client, futures, address, timeout, threads > 0):
            task_jobs = jobs_of[future.key]
            if isinstance(outcome, KilledWorker):
                names = sorted({job.package.key for job in task_jobs})
                raise BuildError(
                    f"{', '.join(names)}: the Dask workers building "
                    f"{'it' if len(names) == 1 else 'them'} died "
                    "(each time the scheduler gave it to another); see the workers' logs"
                )
            if isinstance(outcome, BaseException):
                raise outcome  # a BuildError naming the package, as a local build's
            for job, result in zip(task_jobs, outcome, strict=True):
                record(job, result)
    finally:
        # On any error or interrupt: queued tasks are dropped. A task already running
        # writes into the scratch directory the build removes: at worst it renames a
        # complete package into OUT, which the next build there tidies away.
        client.cancel(futures, force=True)
        client.close()


def _outcomes(
    client: Any, futures: list[Any], address: str, timeout: float, has_workers: bool
) -> Iterator[tuple[Any, Any]]:
    """(future, result or exception) of each task as it finishes.

    A scheduler holds tasks for as long as it has no worker to give them to: a cluster
    without workers (none joined, or all left) for ``timeout`` seconds ends the build
    with an error instead of a wait that never ends."""
    from distributed import as_completed, wait

    with client.as_current():  # as_completed and wait ask for the current client
        # Results come with their futures: asking each future for its result would
        # cost a round trip to the client's event loop each.
        completed = as_completed(futures, with_results=True, raise_errors=False)
    pending = set(futures)
    alone_since = None if has_workers else time.monotonic()
    while pending:
        batch = completed.next_batch(block=False)
        if not batch:
            try:
                with client.as_current():
                    wait(list(pending), min(timeout, WORKER_CHECK), FIRST_COMPLETED)
            except TimeoutError:  # nothing finished meanwhile: is anyone working?
                now = time.monotonic()
                if client.nthreads():
                    alone_since = None
                elif alone_since is None:
                    alone_since = now
                elif now - alone_since >= timeout:
                    raise BuildError(
                        f"--scheduler {address}: the cluster has had no Dask worker for "
                        f"{timeout:g} s, so nothing can be built; start workers "
                        f"(dask worker {address}), or wait longer with --scheduler-timeout"
                    ) from None
                continue
            batch = completed.next_batch(block=True)  # one finished: it is on its way
        for future, outcome in batch:
            pending.discard(future)
            yield future, outcome


def batches(jobs: Sequence[Job], count: int) -> list[list[Job]]:
    """The jobs in at most ``count`` tasks of about equal payload, each package's formats
    in one task. Largest package first into the lightest task: a package as large as a
    task's share is a task of its own, small ones share one. A cluster's cost is per
    task (a scheduler round trip and bookkeeping on each side), so a task per package
    costs more than the package on small releases; a few tasks per worker thread still
    lets a faster worker take more of them and a lost worker lose little."""
    by_package: dict[str, list[Job]] = {}
    for job in jobs:
        by_package.setdefault(job.package.key, []).append(job)
    weighed = sorted(
        by_package.values(),
        key=lambda package_jobs: (
            -sum(_weight(job) for job in package_jobs),
            package_jobs[0].package.key,
        ),
    )
    tasks: list[list[Job]] = [[] for _ in range(min(count, len(weighed)))]
    loads = [0] * len(tasks)
    for package_jobs in weighed:
        lightest = loads.index(min(loads))
        tasks[lightest].extend(package_jobs)
        loads[lightest] += sum(_weight(job) for job in package_jobs)
    return tasks


def _weight(job: Job) -> int:
    """What writing a job costs, in bytes: its payload and its entries' headers."""
    return archive_size_hint(job.info.entries)


def write_packages(jobs: list[Job], scratch: str, out: str) -> list[JobResult]:
    """One task: its packages, each in each format (on a worker). An error is a
    BuildError naming the package and format, as a local build's."""
    _heap_for_compressor_buffers()
    return [run_job(job, scratch, out) for job in jobs]


def dask_setup(worker: object) -> None:
    """What ``dask worker --preload gfxpack.dask_executor`` runs as a worker starts: the
    code and libraries a build's task uses are loaded then, not by its first task, and
    the malloc thresholds set. (A worker without the preload does both on its first
    task.)"""
    import zstandard  # noqa: F401  (the writers import it when they first compress)

    _heap_for_compressor_buffers()


def _heap_for_compressor_buffers() -> None:
    """Give a Dask worker glibc's own malloc thresholds back, once per process.

    A Dask nanny starts its worker with MALLOC_TRIM_THRESHOLD_=64 KiB in the
    environment (so that freed memory goes back to the system at once). Setting a
    malloc threshold in the environment also stops glibc from raising its mmap
    threshold (128 KiB) as a program frees large blocks. Every package's zstd
    compressor allocates and frees a few MiB of tables: on such a worker each of
    them is a fresh mmap, or heap given back and taken again, and page faults; that
    made a job 2-4x slower on a worker than in the local pool. Here both thresholds
    are set where glibc's own growth stops (mmap 32 MiB, trim twice that): a worker
    keeps at most that much freed memory, as any process does by default. A worker
    whose environment sets the mmap threshold itself is left alone."""
    global _heap_set
    if _heap_set:
        return
    _heap_set = True
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to give back
        mallopt = ctypes.CDLL(None).mallopt
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)
        mallopt(M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_MAX)


async def _identity(address: str) -> None:
    """Connect to ``address`` and have its scheduler say what it is."""
    from distributed.comm.core import connect

    comm = await connect(address)
    try:
        await comm.write({"op": "identity"})
        answer = await comm.read()
    finally:
        await comm.close()
    if not isinstance(answer, dict) or answer.get("type") != "Scheduler":
        raise ValueError(f"it is not a Dask scheduler: {str(answer)[:60]}")
