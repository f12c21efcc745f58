"""How a build is made: formats, compression, timestamp, which packages, where it runs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from gfxpack import epoch
from gfxpack.formats import FORMATS, PackageFormat
from gfxpack.formats.compress import Compression
from gfxpack.shard import Shard

# 2024-01-01T00:00:00Z: the timestamp of every build that sets no SOURCE_DATE_EPOCH.
DEFAULT_EPOCH = 1_704_067_200


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
