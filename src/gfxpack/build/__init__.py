"""Build every package of a plan: jobs, the runners that run them, and OUT's index.

- :mod:`gfxpack.build.options`: how a build is made (:class:`BuildOptions`).
- :mod:`gfxpack.build.jobs`: one job (a package in one format), its result, and
  :func:`~gfxpack.build.jobs.run_job`, which runs one wherever it runs.
- :mod:`gfxpack.build.runners`: in turn, or on a local process pool.
- :mod:`gfxpack.build.dask`: on a Dask cluster (dask imported there only).
- :mod:`gfxpack.build.builder`: :func:`build`, the jobs of a plan through one runner
  into OUT, then ``index.json``.
"""

from gfxpack.build.builder import INDEX, BuiltFile, build
from gfxpack.build.jobs import (
    BuildError,
    Job,
    JobResult,
    make_jobs,
    package_info,
    run_job,
    write_package,
)
from gfxpack.build.options import DEFAULT_EPOCH, BuildOptions, source_date_epoch

__all__ = [
    "DEFAULT_EPOCH",
    "INDEX",
    "BuildError",
    "BuildOptions",
    "BuiltFile",
    "Job",
    "JobResult",
    "build",
    "make_jobs",
    "package_info",
    "run_job",
    "source_date_epoch",
    "write_package",
]
