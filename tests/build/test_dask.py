"""build --executor dask: the same packages from a Dask cluster as from the local pool."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.build import BuildOptions, make_jobs
from gfxpack.cli import cli
from gfxpack.release import ReleaseOptions, build_release
from tests.conftest import EXAMPLE_CONFIG, build_example_args
from tests.test_shard import digests

pytestmark = pytest.mark.slow  # make check skips it: a Dask cluster started per test

distributed = pytest.importorskip("distributed", reason="dask.distributed (gfxpack[dask])")


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of two worker processes, as a real cluster would run them (as the
    README starts its workers: gfxpack preloaded)."""
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        preload=["gfxpack.dask_executor"],
    ) as local:
        yield local


def build_on(address: str, artifacts: Path, out: Path, on_built=None):
    options = ReleaseOptions("8.2.0", build=BuildOptions(scheduler=address))
    return build_release(
        EXAMPLE_CONFIG, artifacts.resolve(), out.resolve(), options, None, on_built
    )


def leftovers(out: Path) -> list[str]:
    return [p.name for p in out.iterdir() if p.name.startswith(".")]


def test_a_cluster_build_is_the_local_build(cluster, example_artifacts, example_release, tmp_path):
    seen = []
    _, built = build_on(
        cluster.scheduler_address, example_artifacts, tmp_path, lambda b, d, t: seen.append(d)
    )
    assert digests(tmp_path) == digests(example_release.out)
    assert seen == list(range(1, len(built) + 1))  # progress as the cluster reports it
    assert leftovers(tmp_path) == []


def _worker_state() -> tuple[bool, bool, bool]:
    import gfxpack.build.dask

    return (
        "zstandard" in sys.modules,
        "MALLOC_TRIM_THRESHOLD_" in os.environ,
        gfxpack.build.dask._heap_set,
    )


def test_preloaded_workers_are_ready_before_their_first_task(cluster):
    # Loaded by --preload as the worker started: the writers' compressor, and glibc's
    # malloc thresholds put back where the nanny's environment froze them.
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
        states = client.run(_worker_state)
    assert len(states) == 2
    assert set(states.values()) == {(True, True, True)}


def test_a_killed_worker_s_jobs_run_elsewhere(
    cluster, example_artifacts, example_release, tmp_path
):
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
        pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    killed = []

    def kill_once(_item, done, _total):
        if not killed and done == 1:
            os.kill(victim, signal.SIGKILL)
            killed.append(done)

    _, built = build_on(cluster.scheduler_address, example_artifacts, tmp_path, kill_once)
    assert killed
    assert digests(tmp_path) == digests(example_release.out)
    assert len(built) == len(digests(example_release.out))
    assert leftovers(tmp_path) == []


def test_a_scheduler_that_does_not_answer_is_one_error(example_artifacts, tmp_path):
    # A port that accepts connections and never speaks: the slowest kind of dead.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
    started = time.monotonic()
    try:
        result = CliRunner().invoke(
            cli,
            build_example_args(
                example_artifacts,
                tmp_path / "out",
                *("--executor", "dask", "--scheduler", address, "--scheduler-timeout", "1", "-q"),
            ),
        )
    finally:
        silent.close()
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: --scheduler {address}: no Dask scheduler answered")
    assert result.stderr.count("\n") == 1, result.stderr
    assert time.monotonic() - started < 30
    assert not list((tmp_path / "out").glob("*.deb")) and not (tmp_path / "out/index.json").exists()


def test_a_cluster_without_workers_is_one_error_within_the_timeout(example_artifacts, tmp_path):
    # A real scheduler that answers, with no worker to give the tasks to: they would
    # wait forever.
    with distributed.LocalCluster(
        n_workers=0, processes=False, dashboard_address=":0", scheduler_port=0
    ) as empty:
        address = empty.scheduler_address
        out = tmp_path / "out"
        started = time.monotonic()
        result = CliRunner().invoke(
            cli,
            build_example_args(
                example_artifacts,
                out,
                *("--executor", "dask", "--scheduler", address, "--scheduler-timeout", "1", "-q"),
            ),
        )
        took = time.monotonic() - started
        with distributed.Client(address, set_as_default=False) as client:
            # The build's tasks went with it: the scheduler holds none.
            assert client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"error: --scheduler {address}: the cluster has had no Dask worker for 1 s, so "
        f"nothing can be built; start workers (dask worker {address}), or wait longer "
        "with --scheduler-timeout\n"
    )
    assert took < 10
    assert not (out / "index.json").exists() and not list(out.glob("*.deb"))
    assert not [name for name in leftovers(out) if name.startswith(".gfxpack-partial-")]


def test_dask_is_imported_only_for_a_cluster_build():
    code = (
        "import sys, gfxpack.cli, gfxpack.build, gfxpack.release; "
        "print('distributed' in sys.modules, 'dask' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]


def test_tasks_balance_payload_and_keep_a_package_s_formats_together(example_artifacts):
    from gfxpack.build.dask import batches
    from gfxpack.formats import FORMATS
    from gfxpack.formats.payload import installed_size
    from gfxpack.release import prepare

    release = prepare(EXAMPLE_CONFIG, example_artifacts, ReleaseOptions("8.2.0"))
    jobs = make_jobs(release.plan, release.plan.packages, release.routed, BuildOptions())
    tasks = batches(jobs, 10)
    assert len(tasks) == 10
    # Every job once, and each package's formats in the one task.
    assert sorted((j.package.key, j.format.name) for task in tasks for j in task) == sorted(
        (j.package.key, j.format.name) for j in jobs
    )
    owner = {}
    for number, task in enumerate(tasks):
        for job in task:
            assert owner.setdefault(job.package.key, number) == number
    # The largest package is a task of its own when it is more than a task's share.
    payload = {j.package.key: installed_size(j.info.entries) for j in jobs}
    largest = max(payload, key=payload.__getitem__)
    assert payload[largest] > sum(payload.values()) / 10
    assert {
        j.package.key
        for task in tasks
        for j in task
        if any(other.package.key == largest for other in task)
    } == {largest}
    # Balanced: no task holds more than a task's share plus its largest package.
    loads = [sum(payload[j.package.key] for j in task if j.format is FORMATS[0]) for task in tasks]
    share = sum(payload.values()) / 10
    assert max(loads) <= share + max(payload.values())
    assert min(loads) >= share / 4
    # Fewer packages than tasks asked for: one task each.
    assert len(batches(jobs[:3], 8)) == len({j.package.key for j in jobs[:3]})
