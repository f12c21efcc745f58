"""Build every package of a plan: parallel, atomic, reproducible.

A build is a list of independent jobs, one per (package, format): inputs are
one :class:`PackageInfo` (the planned package with its routed entries), the
output one file and its digest. Jobs run on a ``concurrent.futures`` process
pool whose workers die with the build. Each writes under a private scratch
directory inside OUT and is renamed into place only when complete, so an error,
an interrupt or a kill leaves no partial package in OUT; ``index.json`` is
written last, the same way. What else OUT holds, and what becomes of it, is
:mod:`gfxpack.outdir`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gfxpack import epoch, outdir
from gfxpack._io import FILE_MODE, HashingWriter
from gfxpack.errors import GfxpackError
from gfxpack.formats import FORMATS, PackageFormat, PackageInfo
from gfxpack.formats.compress import Compression
from gfxpack.formats.payload import Entry, installed_size
from gfxpack.plan import PlannedPackage, ReleasePlan
from gfxpack.scripts import scripts_for
from gfxpack.shard import Shard, plan_digest
from gfxpack.views import to_json

# 2024-01-01T00:00:00Z: the timestamp of every build that sets no SOURCE_DATE_EPOCH.
DEFAULT_EPOCH = 1_704_067_200
INDEX = outdir.INDEX
# linux/prctl.h: deliver a signal to this process when its parent dies.
PR_SET_PDEATHSIG = 1


# What one job returns: file name, size, sha256 and seconds taken.
JobResult = tuple[str, int, str, float]
Job = tuple[PlannedPackage, PackageFormat, PackageInfo]


class BuildError(GfxpackError):
    """A package could not be written; names the package and the cause."""


def source_date_epoch(environ: Mapping[str, str]) -> int:
    """The build's timestamp: SOURCE_DATE_EPOCH, else 2024-01-01 (reproducible by default)."""
    return epoch.source_date_epoch(environ, DEFAULT_EPOCH)


@dataclass(frozen=True, slots=True)
class BuildOptions:
    formats: tuple[PackageFormat, ...] = FORMATS
    compression: Compression = field(default_factory=Compression)
    jobs: int = os.cpu_count() or 1
    epoch: int = DEFAULT_EPOCH
    changelog: tuple[tuple[int, str, str], ...] = ()  # RPM %changelog (--changelog)
    # Build only these packages of the plan (None: all of them).
    shard: Shard | None = None
    # A Dask scheduler's address (tcp://HOST:8786): run the jobs on that cluster instead
    # of a local process pool; it must answer within scheduler_timeout seconds, and a
    # cluster without workers fails the build after that long.
    scheduler: str | None = None
    scheduler_timeout: float = 10.0


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
    rendered = {
        name: tuple(fmt.render(dep) for dep in getattr(relations, name))
        for name in ("depends", "recommends", "suggests", "provides", "conflicts", "replaces")
    }
    return PackageInfo(
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
        mtime=options.epoch,
        compression=options.compression,
        changelog=options.changelog,
        **rendered,
    )


def write_package(info: PackageInfo, fmt: PackageFormat, scratch: str, out: str) -> JobResult:
    """One job: write the package into ``scratch``, then rename it into ``out``."""
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
    return name, hashing.size, hashing.hexdigest(), time.perf_counter() - started


def build(
    plan: ReleasePlan,
    routed: Mapping[str, tuple[Entry, ...]],
    out: str | os.PathLike[str],
    options: BuildOptions = BuildOptions(),
    on_built: Callable[[BuiltFile, int, int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> list[BuiltFile]:
    """Write every package of the plan in every format into ``out``, which then holds
    exactly this build: what an earlier build wrote there and this one does not produce
    is removed, anything else is left alone; ``on_note`` hears about both."""
    out = Path(out)
    packages = plan.packages if options.shard is None else options.shard.select(plan, routed)
    jobs = [
        (package, fmt, package_info(plan, package, fmt, routed.get(package.key, ()), options))
        for package in packages
        for fmt in options.formats
    ]
    digest = plan_digest(plan, options.formats, options.compression, options.epoch)
    # Largest payloads first, so the pool's last jobs are short ones.
    jobs.sort(key=lambda job: -installed_size(job[2].entries))
    produced = {fmt.filename(info) for _, fmt, info in jobs}
    outdir.create(out)
    _refuse_other_shard(out, digest, options.shard)
    earlier = outdir.begin(out, produced)
    built: list[BuiltFile] = []

    def record(package: PlannedPackage, fmt: PackageFormat, result: JobResult) -> None:
        name, size, sha256, seconds = result
        item = BuiltFile(
            name,
            package.key,
            str(package.kind),
            package.arch,
            fmt.name,
            size,
            sha256,
            round(seconds, 4),
            installed_size(routed.get(package.key, ())),
        )
        built.append(item)
        if on_built:
            on_built(item, len(built), len(jobs))

    with outdir.scratch(out) as scratch:
        if options.scheduler is not None:
            from gfxpack.dask_executor import run_on_cluster  # dask only when asked for

            run_on_cluster(
                jobs, options.scheduler, options.scheduler_timeout, scratch, str(out), record
            )
        elif options.jobs <= 1:
            for package, fmt, info in jobs:
                record(package, fmt, _guarded(package, fmt, info, scratch, str(out)))
        else:
            _run_pool(jobs, options.jobs, scratch, str(out), record)
    built.sort(key=lambda b: (b.format, b.file))
    index = _index(plan, built, digest, options.shard, packages)
    tidied = outdir.finish(out, index, produced, earlier)
    if on_note:
        for name in tidied.removed:
            on_note(f"removed {out / name}: an earlier build wrote it; this build does not")
        for name in tidied.foreign:
            on_note(f"left alone {out / name}: not written by gfxpack")
    return built


def _guarded(
    package: PlannedPackage, fmt: PackageFormat, info: PackageInfo, scratch: str, out: str
) -> JobResult:
    try:
        return write_package(info, fmt, scratch, out)
    except OSError as e:
        raise _job_error(package, fmt, e, out) from e


def _job_error(package: PlannedPackage, fmt: PackageFormat, error: OSError, out: str) -> BuildError:
    """One line naming the package, and OUT when OUT is what failed."""
    what = f"{package.name(fmt)} ({fmt})"
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
        return BuildError(f"{out}: cannot write {what}: {error.strerror}")
    if error.strerror and error.filename:
        return BuildError(f"{what}: {error.filename}: {error.strerror}")
    return BuildError(f"{what}: {error}")


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


def _run_pool(
    jobs: list[Job],
    workers: int,
    scratch: str,
    out: str,
    record: Callable[[PlannedPackage, PackageFormat, JobResult], None],
) -> None:
    executor = ProcessPoolExecutor(
        max_workers=workers, initializer=_worker_init, initargs=(os.getpid(),)
    )
    futures: dict[Future[JobResult], tuple[PlannedPackage, PackageFormat]] = {}
    try:
        for package, fmt, info in jobs:
            futures[executor.submit(write_package, info, fmt, scratch, out)] = (package, fmt)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                package, fmt = futures[future]
                try:
                    record(package, fmt, future.result())
                except OSError as e:
                    raise _job_error(package, fmt, e, out) from e
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


def _refuse_other_shard(out: Path, digest: str, shard: Shard | None) -> None:
    """Each shard has its own OUT: building one where another shard of the same release
    lies would remove that shard's packages as an earlier build's."""
    index = outdir.read_index(out)
    there = index.get("shard") if index is not None else None
    if (
        index is not None
        and isinstance(there, dict)
        and index.get("plan_digest") == digest
        and shard is not None
        and there.get("label") != shard.label
    ):
        raise BuildError(
            f"{out} holds shard {there.get('label')} of this release: give each shard "
            "its own --out, then gfxpack merge them"
        )


def _index(
    plan: ReleasePlan,
    built: list[BuiltFile],
    digest: str,
    shard: Shard | None,
    packages: tuple[PlannedPackage, ...],
) -> dict[str, Any]:
    index = {
        "rocm_version": plan.rocm_version,
        "release": plan.release,
        "mode": str(plan.mode),
        "targets": list(plan.targets),
        "files": [asdict(item) for item in built],
        # The plan the packages were built from (plan --format json), notes included:
        # what report and diff read instead of re-planning.
        "plan": to_json(plan),
        # What gfxpack merge compares: shards of one release share it.
        "plan_digest": digest,
    }
    if shard is not None:
        index["shard"] = {"label": shard.label, "packages": [p.key for p in packages]}
    return index
