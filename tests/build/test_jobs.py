"""Build jobs as one shape: every runner runs the same job and reports the same result."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from gfxpack.artifacts import route, scan
from gfxpack.build import BuildError, BuildOptions, Job, make_jobs, run_job
from gfxpack.build.runners import run_pool, run_serial
from gfxpack.config import load_config
from gfxpack.plan import plan
from tests.small_tree import make_tree, write_config


def small_jobs(tmp_path: Path) -> list[Job]:
    make_tree(tmp_path / "art")
    config = load_config(write_config(tmp_path / "package.json"))
    tree = scan(tmp_path / "art")
    release = plan(config.packages, ("gfx942",), "8.2.0", artifacts=tree.index)
    options = BuildOptions()
    return make_jobs(release, release.packages, route(release, tree, options.epoch), options)


def run(runner, jobs: list[Job], out: Path) -> dict[str, tuple[str, int, str]]:
    (out / "scratch").mkdir(parents=True)
    seen: dict[str, tuple[str, int, str]] = {}

    def record(job: Job, result) -> None:
        seen[f"{job.package.key} {job.format.name}"] = (result.file, result.size, result.sha256)

    runner(jobs, str(out / "scratch"), str(out), record)
    return seen


def test_the_serial_runner_and_the_pool_write_the_same_files(tmp_path):
    jobs = small_jobs(tmp_path)
    serial = run(run_serial, jobs, tmp_path / "serial")
    pooled = run(lambda *args: run_pool(args[0], 2, *args[1:]), jobs, tmp_path / "pool")
    assert len(serial) == len(jobs) > 2  # every job reported once, in both
    assert pooled == serial
    for file, size, _ in serial.values():
        assert (tmp_path / "pool" / file).stat().st_size == size


def test_a_job_and_its_error_travel_to_a_worker_and_back(tmp_path):
    # What the pool and a Dask cluster send: the job there, a BuildError back.
    job = small_jobs(tmp_path)[0]
    assert pickle.loads(pickle.dumps(job)) == job
    missing = tmp_path / "gone"
    with pytest.raises(BuildError) as raised:
        run_job(job, str(missing), str(missing))
    error = pickle.loads(pickle.dumps(raised.value))
    assert type(error) is BuildError
    assert str(error).startswith(f"{job.info.name} ({job.format}): {missing}/")


def test_workers_preload_the_dask_runner_by_the_name_users_know():
    import gfxpack.build.dask
    import gfxpack.dask_executor

    assert gfxpack.dask_executor.dask_setup is gfxpack.build.dask.dask_setup
