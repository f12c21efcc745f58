"""One build job and what it returns: the unit every runner runs.

A job is one planned package in one format with everything its writer needs
(:class:`~gfxpack.formats.PackageInfo`, its routed entries included); its result is
the file it wrote, with size, sha256 and seconds taken. :func:`run_job` runs one job
the same way wherever it runs (this process, a pool's worker, a Dask worker): it
writes under OUT's scratch directory and renames the file into OUT only when
complete, and an OS error becomes a :class:`BuildError` naming the package.
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gfxpack._io import FILE_MODE, HashingWriter
from gfxpack.alternatives import scripts_for, triggers_for
from gfxpack.build.options import BuildOptions
from gfxpack.errors import GfxpackError
from gfxpack.formats import PackageFormat, PackageInfo
from gfxpack.formats.debug_symbols import debug_info
from gfxpack.formats.payload import Entry, installed_size
from gfxpack.plan import Kind, PlannedPackage, ReleasePlan


class BuildError(GfxpackError):
    """A package could not be written; names the package and the cause."""


@dataclass(frozen=True, slots=True)
class Job:
    """One package in one format: ``info`` is all its writer reads."""

    package: PlannedPackage
    format: PackageFormat
    info: PackageInfo


@dataclass(frozen=True, slots=True)
class JobResult:
    """What one job wrote into OUT."""

    file: str
    size: int
    sha256: str
    seconds: float


# How a runner reports each finished job to the build.
Record = Callable[[Job, JobResult], None]


def package_info(
    plan: ReleasePlan,
    package: PlannedPackage,
    fmt: PackageFormat,
    entries: tuple[Entry, ...],
    options: BuildOptions,
) -> PackageInfo:
    """Everything one format needs for one package, in that format's spelling."""
    spec = plan.specs[package.base]
    relations = package.relations(fmt)

    def rendered(name: str) -> tuple[str, ...]:
        return tuple(fmt.render(dep) for dep in getattr(relations, name))

    info = PackageInfo(
        name=relations.name,
        version=plan.rocm_version,
        release=plan.release,
        arch=fmt.arch(spec),
        summary=spec.description_short,
        description=spec.description_long,
        maintainer=spec.maintainer,
        homepage=spec.homepage,
        license=spec.license,
        group=spec.group,
        vendor=spec.vendor,
        section=spec.section,
        priority=spec.priority,
        entries=entries,
        prefix=plan.prefix,
        scripts=scripts_for(plan, package, fmt, options.epoch),
        triggers=triggers_for(plan, package, fmt),
        mtime=options.epoch,
        compression=options.compression,
        changelog=options.changelog,
        depends=rendered("depends"),
        recommends=rendered("recommends"),
        suggests=rendered("suggests"),
        provides=rendered("provides"),
        conflicts=rendered("conflicts"),
        replaces=rendered("replaces"),
    )
    if package.kind is Kind.DEBUG:
        return debug_info(info, relations.depends[0][0].name, fmt.name)
    return info


def make_jobs(
    plan: ReleasePlan,
    packages: Iterable[PlannedPackage],
    routed: Mapping[str, tuple[Entry, ...]],
    options: BuildOptions,
) -> list[Job]:
    """A job for each of ``packages`` in each of the options' formats, largest payload
    first, so that a pool's last jobs are short ones."""
    jobs = [
        Job(package, fmt, package_info(plan, package, fmt, routed.get(package.key, ()), options))
        for package in packages
        for fmt in options.formats
    ]
    jobs.sort(key=lambda job: -installed_size(job.info.entries))
    return jobs


def write_package(info: PackageInfo, fmt: PackageFormat, scratch: str, out: str) -> JobResult:
    """Write the package into ``scratch``, then rename it into ``out``."""
    started = time.perf_counter()
    name = fmt.filename(info)
    # A name of its own: a cluster may run a job again elsewhere while a worker it gave
    # up for lost is still writing.
    partial = os.path.join(scratch, f"{uuid.uuid4().hex[:12]}-{name}")
    with open(partial, "wb") as file:
        os.fchmod(file.fileno(), FILE_MODE)  # not the umask's
        hashing = HashingWriter(file, "sha256")
        fmt.write(info, hashing, scratch)  # large archives wait beside OUT, not in /tmp
    os.replace(partial, os.path.join(out, name))
    return JobResult(name, hashing.size, hashing.hexdigest(), time.perf_counter() - started)


def run_job(job: Job, scratch: str, out: str) -> JobResult:
    """One job, wherever it runs: an OS error is a BuildError naming the package."""
    try:
        return write_package(job.info, job.format, scratch, out)
    except OSError as e:
        raise job_error(job, e, out) from e


def job_error(job: Job, error: OSError, out: str) -> BuildError:
    """One line naming the package, and OUT when OUT is what failed."""
    what = f"{job.info.name} ({job.format})"
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
        return BuildError(f"{out}: cannot write {what}: {error.strerror}")
    if error.strerror and error.filename:
        return BuildError(f"{what}: {error.filename}: {error.strerror}")
    return BuildError(f"{what}: {error}")
