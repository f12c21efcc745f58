"""Which packages of a release one machine builds: a shard.

A release too big for one machine is built as shards, each on its own machine
from the same plan, then merged (:mod:`gfxpack.merge`). Three ways to cut it:

- ``K/N``: the K-th of N shards balanced by payload size. Packages are taken
  largest first and each goes to the shard holding the fewest bytes so far
  (ties: the fewest packages, then the lowest number), so every machine that
  computes the same plan computes the same cut. Each package also counts a fixed
  cost, so packages without files spread evenly too.
- a list of targets (``gfx942,gfx950``): the device packages of those targets,
  what a machine holding only their per-arch artifacts can build.
- ``generic``: every package that belongs to no target.

The plan digest names the plan and the build options that decide the bytes
(formats, compression, timestamp): shards merge only when their digests agree.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gfxpack.artifact_layout import GENERIC
from gfxpack.errors import GfxpackError
from gfxpack.formats import PackageFormat
from gfxpack.formats.compress import Compression
from gfxpack.formats.payload import Entry, installed_size
from gfxpack.plan import ArtifactIndex, PlannedPackage, ReleasePlan
from gfxpack.plan.naming import InvalidName, arch_suffix
from gfxpack.views import plan_as_dict

# What a package costs besides its payload, in payload bytes: archive headers, scripts,
# compressor set-up. Without it the many packages with no files (metapackages) would all
# go to the shard that has the fewest bytes.
PACKAGE_COST = 1 << 20
_FRACTION = re.compile(r"^(\d+)/(\d+)$")


class InvalidShard(GfxpackError):
    """A shard selector that names no shard of the plan."""


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard: ``label`` is how the user spelled it (``2/3``, ``gfx942,gfx950``,
    ``generic``); exactly one of ``fraction`` and ``targets`` is set, or neither for
    the generic shard."""

    label: str
    fraction: tuple[int, int] | None = None  # (K, N), 1 <= K <= N
    targets: tuple[str, ...] = ()

    def select(
        self, plan: ReleasePlan, routed: Mapping[str, tuple[Entry, ...]]
    ) -> tuple[PlannedPackage, ...]:
        """This shard's packages, in the plan's order."""
        if self.fraction is not None:
            index, count = self.fraction
            keys = balanced(plan.packages, routed, count)[index - 1]
            return tuple(p for p in plan.packages if p.key in keys)
        if not self.targets:
            return tuple(p for p in plan.packages if p.arch is None)
        suffixes = set()
        for target in self.targets:
            try:
                suffix = arch_suffix(target)
            except InvalidName as e:
                raise InvalidShard(f"--shard-by-target {self.label}: {e}") from None
            if suffix not in plan.arches:
                raise InvalidShard(
                    f"--shard-by-target {self.label}: {target} is not a target of this "
                    f"release (its targets: {', '.join(plan.targets)})"
                )
            suffixes.add(suffix)
        return tuple(p for p in plan.packages if p.arch in suffixes)

    def needs(self, target: str) -> bool:
        """Whether this shard reads artifact directories of ``target`` (or ``generic``)."""
        if self.fraction is not None:
            return True
        if not self.targets:
            return target == GENERIC
        if target == GENERIC:
            return False
        try:
            return arch_suffix(target) in {arch_suffix(t) for t in self.targets}
        except InvalidName:
            return False


def missing_artifacts(shard: Shard | None, listed: ArtifactIndex, present: ArtifactIndex) -> str:
    """The artifact directories the release lists, the shard reads and its machine lacks,
    as one error line; '' when it has them all. A missing one would build empty packages."""
    have = {(d.name, d.component, d.target) for d in present.dirs}
    lacking = [
        f"{d.name}_{d.component}_{d.target}"
        for d in listed.dirs
        if (shard is None or shard.needs(d.target)) and (d.name, d.component, d.target) not in have
    ]
    if not lacking:
        return ""
    shown = ", ".join(lacking[:5]) + (f" and {len(lacking) - 5} more" if len(lacking) > 5 else "")
    return f"the release lists artifact directories this shard needs but --artifacts lacks: {shown}"


def unlisted_release(shard: Shard | None, present: ArtifactIndex) -> str:
    """Why a shard cannot plan from ``present`` alone, as one error line; '' when it can.
    Every shard plans the whole release: a by-target shard on a machine holding no
    generic artifacts (or the generic shard on one holding no per-arch ones) would plan
    another release, and blame package.json for each package it thinks missing."""
    if shard is None or shard.fraction is not None:
        return ""
    generic = any(d.target == GENERIC for d in present.dirs)
    per_arch = any(d.target != GENERIC for d in present.dirs)
    if shard.targets and not generic:
        lacking, option = "generic", f"--shard-by-target {shard.label}"
    elif not shard.targets and not per_arch:
        lacking, option = "per-arch", f"--shard {shard.label}"
    else:
        return ""
    return (
        f"holds no {lacking} artifact directories, but {option} plans the whole release: "
        "give --release-artifacts FILE, the release's artifact directory names one a line "
        "(what ls ARTIFACTS prints on a machine that has them all), and --mode kpack"
    )


def parse_shard(text: str) -> Shard:
    """``K/N`` or ``generic`` (the CLI's --shard)."""
    text = text.strip()
    if text == GENERIC:
        return Shard(GENERIC)
    match = _FRACTION.match(text)
    if match:
        index, count = int(match[1]), int(match[2])
        if 1 <= index <= count:
            return Shard(f"{index}/{count}", fraction=(index, count))
    raise InvalidShard(f"--shard {text!r}: expected K/N with 1 <= K <= N (such as 2/3), or generic")


def by_targets(targets: Sequence[str]) -> Shard:
    """The shard of the device packages of ``targets`` (the CLI's --shard-by-target)."""
    if not targets:
        raise InvalidShard("--shard-by-target: give at least one target, such as gfx942")
    return Shard(",".join(targets), targets=tuple(targets))


def balanced(
    packages: Sequence[PlannedPackage], routed: Mapping[str, tuple[Entry, ...]], count: int
) -> list[set[str]]:
    """Package keys cut into ``count`` sets of about equal payload bytes."""
    sizes = {p.key: PACKAGE_COST + installed_size(routed.get(p.key, ())) for p in packages}
    shards: list[set[str]] = [set() for _ in range(count)]
    loads = [0] * count
    for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
        lightest = min(range(count), key=lambda i: (loads[i], len(shards[i]), i))
        shards[lightest].add(key)
        loads[lightest] += sizes[key]
    return shards


def plan_digest(
    plan: ReleasePlan, formats: Sequence[PackageFormat], compression: Compression, epoch: int
) -> str:
    """sha256 of the plan and of the options that decide a package's bytes."""
    document = {
        "plan": plan_as_dict(plan),
        "formats": [fmt.name for fmt in formats],
        "compression": str(compression),
        "epoch": epoch,
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
