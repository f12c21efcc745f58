"""Build every package of a plan: parallel, atomic, reproducible.

A build is a list of independent jobs (:mod:`gfxpack.build.jobs`), one per
(package, format), run by one runner: in turn (``-j 1``), on a local process pool
(:mod:`gfxpack.build.runners`) or on a Dask cluster (:mod:`gfxpack.build.dask`).
Each job writes under a private scratch directory inside OUT and is renamed into
place only when complete, so an error, an interrupt or a kill leaves no partial
package in OUT; ``index.json`` is written last, the same way. What else OUT holds,
and what becomes of it, is :mod:`gfxpack.outdir`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from gfxpack import build_index, outdir
from gfxpack.build.jobs import BuildError, Job, JobResult, make_jobs
from gfxpack.build.options import BuildOptions
from gfxpack.build.runners import run_pool, run_serial
from gfxpack.build_index import BuildIndex, IndexedFile, ShardRecord
from gfxpack.formats.payload import Entry, installed_size
from gfxpack.plan import PlannedPackage, ReleasePlan
from gfxpack.shard import Shard, plan_digest
from gfxpack.views import plan_as_dict

INDEX = outdir.INDEX


@dataclass(frozen=True, slots=True)
class BuiltFile:
    file: str
    package: str
    kind: str
    arch: str | None
    format: str
    size: int
    sha256: str
    seconds: float
    # Bytes the package puts on disk (directories excepted): what RPM's SIZE says,
    # and DEB's Installed-Size before it is rounded up to KiB.
    installed_size: int = 0


def build(
    plan: ReleasePlan,
    routed: Mapping[str, tuple[Entry, ...]],
    out: str | os.PathLike[str],
    options: BuildOptions = BuildOptions(),  # noqa: B008 (frozen: safe to share)
    on_built: Callable[[BuiltFile, int, int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> list[BuiltFile]:
    """Write every package of the plan in every format into ``out``, which then holds
    exactly this build: what an earlier build wrote there and this one does not produce
    is removed, anything else is left alone; ``on_note`` hears about both."""
    out = Path(out)
    packages = plan.packages if options.shard is None else options.shard.select(plan, routed)
    jobs = make_jobs(plan, packages, routed, options)
    digest = plan_digest(plan, options.formats, options.compression, options.epoch)
    produced = {job.format.filename(job.info) for job in jobs}
    outdir.create(out)
    _refuse_other_shard(out, digest, options.shard)
    earlier = outdir.begin(out, produced)
    built: list[BuiltFile] = []

    def record(job: Job, result: JobResult) -> None:
        package = job.package
        item = BuiltFile(
            result.file,
            package.key,
            str(package.kind),
            package.arch,
            job.format.name,
            result.size,
            result.sha256,
            round(result.seconds, 4),
            installed_size(routed.get(package.key, ())),
        )
        built.append(item)
        if on_built:
            on_built(item, len(built), len(jobs))

    with outdir.scratch(out) as scratch:
        if options.scheduler is not None:
            from gfxpack.build.dask import run_on_cluster  # dask only when asked for

            run_on_cluster(
                jobs, options.scheduler, options.scheduler_timeout, scratch, str(out), record
            )
        elif options.jobs <= 1:
            run_serial(jobs, scratch, str(out), record)
        else:
            run_pool(jobs, options.jobs, scratch, str(out), record)
    built.sort(key=lambda b: (b.format, b.file))
    index = _index(plan, built, digest, options.shard, packages)
    tidied = outdir.finish(out, lambda: build_index.write(out, index), produced, earlier)
    if on_note:
        for name in tidied.removed:
            on_note(f"removed {out / name}: an earlier build wrote it; this build does not")
        for name in tidied.foreign:
            on_note(f"left alone {out / name}: not written by gfxpack")
    return built


def _refuse_other_shard(out: Path, digest: str, shard: Shard | None) -> None:
    """Each shard has its own OUT: building one where another shard of the same release
    lies would remove that shard's packages as an earlier build's."""
    try:
        there = build_index.read(out)
    except build_index.InvalidBuildIndex:
        return  # none, or one this build replaces
    if (
        there.shard is not None
        and there.plan_digest == digest
        and shard is not None
        and there.shard.label != shard.label
    ):
        raise BuildError(
            f"{out} holds shard {there.shard.label} of this release: give each shard "
            "its own --out, then gfxpack merge them"
        )


def _index(
    plan: ReleasePlan,
    built: list[BuiltFile],
    digest: str,
    shard: Shard | None,
    packages: tuple[PlannedPackage, ...],
) -> BuildIndex:
    return BuildIndex(
        rocm_version=plan.rocm_version,
        release=plan.release,
        mode=str(plan.mode),
        targets=tuple(plan.targets),
        files=tuple(IndexedFile(**asdict(item)) for item in built),
        # The plan the packages were built from (plan --format json), notes included:
        # what report and diff read instead of re-planning.
        plan=plan_as_dict(plan),
        plan_digest=digest,
        shard=None if shard is None else ShardRecord(shard.label, tuple(p.key for p in packages)),
    )
