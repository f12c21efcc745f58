"""Build jobs on a Dask cluster (``gfxpack build --scheduler tcp://HOST:8786``).

One task per package (its formats one after the other), submitted through
dask.distributed's Client to a
cluster that already runs. Every worker runs the same job as a local pool's
process (:func:`gfxpack.build.write_package`): it reads the artifacts and writes
the package under OUT's scratch directory, then renames it into OUT. So the
artifacts and OUT must be at the same absolute path on every worker (a shared
file system), and every worker needs the same gfxpack installed.

When a worker dies, the scheduler gives its tasks to another worker; a task
whose workers keep dying fails the build with one line naming the package.
The partial file a dead worker leaves lies in the scratch directory, which the
build removes. dask is imported here only, when a build asks for a cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gfxpack.build import BuildError, Job, JobResult, _guarded
from gfxpack.formats import PackageFormat
from gfxpack.plan import PlannedPackage

Record = Callable[[PlannedPackage, PackageFormat, JobResult], None]


def run_on_cluster(
    jobs: list[Job], address: str, timeout: float, scratch: str, out: str, record: Record
) -> None:
    """Run ``jobs`` on the cluster whose scheduler is at ``address``; ``record`` hears of
    each finished job as the cluster reports it."""
    try:
        from distributed import Client, as_completed
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
    # One task per package, its formats written one after the other: half the tasks
    # of one per file, and a cluster's cost is per task.
    by_package: dict[str, list[Job]] = {}
    for job in jobs:
        by_package.setdefault(job[0].key, []).append(job)
    futures: list[Any] = []
    try:
        # One graph update for every task (submitting one by one costs a round trip
        # each); pure=False: fresh tasks each build, never an earlier build's result.
        futures = client.map(
            write_packages, list(by_package.values()), scratch=scratch, out=out, pure=False
        )
        jobs_of = {f.key: jobs for f, jobs in zip(futures, by_package.values(), strict=True)}
        with client.as_current():  # as_completed asks for the current client
            # Results come with their futures: asking each future for its result would
            # cost a round trip to the client's event loop each.
            completed = as_completed(futures, with_results=True, raise_errors=False)
        for future, outcome in completed:
            package_jobs = jobs_of[future.key]
            if isinstance(outcome, KilledWorker):
                raise BuildError(
                    f"{package_jobs[0][0].key}: the Dask workers building it died "
                    "(each time the scheduler gave it to another); see the workers' logs"
                )
            if isinstance(outcome, BaseException):
                raise outcome  # a BuildError naming the package, as a local build's
            for (package, fmt, _), result in zip(package_jobs, outcome, strict=True):
                record(package, fmt, result)
    finally:
        # On any error or interrupt: queued tasks are dropped. A task already running
        # writes into the scratch directory the build removes: at worst it renames a
        # complete package into OUT, which the next build there tidies away.
        client.cancel(futures, force=True)
        client.close()


def write_packages(jobs: list[Job], scratch: str, out: str) -> list[JobResult]:
    """One task: a package in each format (on a worker). An error is a BuildError naming
    the package and format, as a local build's."""
    return [_guarded(package, fmt, info, scratch, out) for package, fmt, info in jobs]


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
