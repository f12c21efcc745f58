"""Build every package of a plan: parallel, atomic, reproducible.

A build is a list of independent jobs, one per (package, format): inputs are
one :class:`PackageInfo` (the planned package with its routed entries), the
output one file and its digest. Jobs run on a ``concurrent.futures`` process
pool. Each writes under a private temporary directory inside OUT and is
renamed into place only when complete, so an error or an interrupt leaves no
partial package in OUT; ``index.json`` is written last, the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gfxpack._io import HashingWriter, write_atomically
from gfxpack.errors import GfxpackError
from gfxpack.formats import FORMATS, PackageFormat, PackageInfo
from gfxpack.formats.compress import Compression
from gfxpack.formats.payload import Entry, installed_size
from gfxpack.plan import PlannedPackage, ReleasePlan
from gfxpack.scripts import scripts_for

# 2024-01-01T00:00:00Z: the timestamp of every build that sets no SOURCE_DATE_EPOCH.
DEFAULT_EPOCH = 1_704_067_200
INDEX = "index.json"


# What one job returns: file name, size, sha256 and seconds taken.
JobResult = tuple[str, int, str, float]
Job = tuple[PlannedPackage, PackageFormat, PackageInfo]


class BuildError(GfxpackError):
    """A package could not be written; names the package and the cause."""


def source_date_epoch(environ: Mapping[str, str]) -> int:
    value = environ.get("SOURCE_DATE_EPOCH")
    if value is None:
        return DEFAULT_EPOCH
    if not value.isdigit():
        raise BuildError(
            f"SOURCE_DATE_EPOCH={value!r}: expected seconds since 1970, e.g. 1704067200"
        )
    return int(value)


@dataclass(frozen=True, slots=True)
class BuildOptions:
    formats: tuple[PackageFormat, ...] = FORMATS
    compression: Compression = field(default_factory=Compression)
    jobs: int = os.cpu_count() or 1
    epoch: int = DEFAULT_EPOCH


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
        **rendered,
    )


def write_package(info: PackageInfo, fmt: PackageFormat, scratch: str, out: str) -> JobResult:
    """One job: write the package into ``scratch``, then rename it into ``out``."""
    started = time.perf_counter()
    name = fmt.filename(info)
    partial = os.path.join(scratch, name)
    with open(partial, "wb") as file:
        hashing = HashingWriter(file, "sha256")
        fmt.write(info, hashing)
    os.replace(partial, os.path.join(out, name))
    return name, hashing.size, hashing.hexdigest(), time.perf_counter() - started


def build(
    plan: ReleasePlan,
    routed: Mapping[str, tuple[Entry, ...]],
    out: str | os.PathLike[str],
    options: BuildOptions = BuildOptions(),
    on_built: Callable[[BuiltFile, int, int], None] | None = None,
) -> list[BuiltFile]:
    """Write every package of the plan in every format into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [
        (package, fmt, package_info(plan, package, fmt, routed.get(package.key, ()), options))
        for package in plan.packages
        for fmt in options.formats
    ]
    # Largest payloads first, so the pool's last jobs are short ones.
    jobs.sort(key=lambda job: -installed_size(job[2].entries))
    scratch = tempfile.mkdtemp(prefix=".gfxpack-partial-", dir=out)
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
        )
        built.append(item)
        if on_built:
            on_built(item, len(built), len(jobs))

    try:
        if options.jobs <= 1:
            for package, fmt, info in jobs:
                record(package, fmt, _guarded(package, fmt, info, scratch, str(out)))
        else:
            _run_pool(jobs, options.jobs, scratch, str(out), record)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    built.sort(key=lambda b: (b.format, b.file))
    _write_index(out, plan, built)
    return built


def _guarded(
    package: PlannedPackage, fmt: PackageFormat, info: PackageInfo, scratch: str, out: str
) -> JobResult:
    try:
        return write_package(info, fmt, scratch, out)
    except OSError as e:
        raise BuildError(f"{package.name(fmt)} ({fmt}): {e}") from e


def _worker_init() -> None:
    # Only the parent reacts to Ctrl-C (the terminal signals the whole process
    # group): it terminates the workers and removes their partial files.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_pool(
    jobs: list[Job],
    workers: int,
    scratch: str,
    out: str,
    record: Callable[[PlannedPackage, PackageFormat, JobResult], None],
) -> None:
    executor = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init)
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
                    raise BuildError(f"{package.name(fmt)} ({fmt}): {e}") from e
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


def _write_index(out: Path, plan: ReleasePlan, built: list[BuiltFile]) -> None:
    index = {
        "rocm_version": plan.rocm_version,
        "release": plan.release,
        "mode": str(plan.mode),
        "targets": list(plan.targets),
        "files": [asdict(item) for item in built],
    }
    write_atomically(out / INDEX, (json.dumps(index, indent=2) + "\n").encode())
