"""What installing a split distribution with one device extra installs, followed
through an index's wheels as an installer resolves it (spec/wheels.md rule 6).

Two gates of ``gfxpack index`` read it. Installing ``X[device-<arch>]`` must bring
every split distribution it installs with that arch's device code: pip installed
``jax-rocm7-plugin[device-gfx942]``'s gfx942 wheel but left ``jax-rocm7-pjrt``, its
dependency, with none, because the plugin's extra did not pass on. And every
requirement the install follows must resolve to a wheel in the index, or
``pip install --index-url`` fails (or, with ``--extra-index-url``, takes what PyPI
has: the fat wheel, dropping the extra with a warning only).

Each requirement is followed to the newest wheel of the index its specifier admits
(pre-releases too: the index holds what was published on purpose), as pip picks;
markers are evaluated in this Python's environment, for the extras requested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from gfxpack.wheels.metadata import DEVICE_ALL, CoreFields, WheelName

DEVICE_EXTRA = "device-"


class Wheel(Protocol):
    """A wheel of the index, as the index reads it."""

    @property
    def name(self) -> WheelName: ...
    @property
    def metadata(self) -> CoreFields: ...
    @property
    def filename(self) -> str: ...


def device_extras(wheel: Wheel) -> set[str]:
    return {e for e in wheel.metadata.provides_extra if e.startswith(DEVICE_EXTRA)}


def applies(requirement: Requirement, extras: set[str]) -> bool:
    """Whether an install of the wheel with ``extras`` requires ``requirement``."""
    marker = requirement.marker
    return marker is None or any(marker.evaluate({"extra": e}) for e in ["", *sorted(extras)])


def pick(
    by_name: Mapping[NormalizedName, Sequence[Wheel]], requirement: Requirement
) -> Wheel | None:
    """The newest wheel of the index ``requirement`` admits, or None."""
    admitted = [
        w
        for w in by_name.get(canonicalize_name(requirement.name), [])
        if requirement.specifier.contains(w.name.version, prereleases=True)
    ]
    return max(admitted, key=lambda w: (w.name.version, w.filename), default=None)


@dataclass
class Reached:
    """A distribution an install reaches: its wheel, the extras requested of it, and
    the chain of distributions that led there."""

    wheel: Wheel
    extras: set[str] = field(default_factory=set)
    chain: list[str] = field(default_factory=list)


@dataclass
class Install:
    reached: dict[NormalizedName, Reached]
    misses: list[tuple[Wheel, Requirement]]  # requirements nothing in the index provides


def install(
    by_name: Mapping[NormalizedName, Sequence[Wheel]], start: Wheel, extras: set[str]
) -> Install:
    """What installing ``start`` with ``extras`` reaches through the index."""
    first = Reached(start, set(extras), [str(start.name.name)])
    reached = {start.name.name: first}
    misses: list[tuple[Wheel, Requirement]] = []
    todo = [first]
    while todo:
        at = todo.pop(0)
        for requirement in at.wheel.metadata.requires_dist:
            if not applies(requirement, at.extras):
                continue
            target = pick(by_name, requirement)
            if target is None:
                if (at.wheel, requirement) not in misses:
                    misses.append((at.wheel, requirement))
                continue
            wanted = {canonicalize_name(e) for e in requirement.extras}
            known = reached.get(target.name.name)
            if known is None:
                known = Reached(target, set(), [*at.chain, str(target.name.name)])
                reached[target.name.name] = known
            elif wanted <= known.extras:
                continue
            known.extras |= wanted
            todo.append(known)
    return Install(reached, misses)


def chain_problems(
    wheels: Sequence[Wheel], by_name: Mapping[NormalizedName, Sequence[Wheel]]
) -> list[str]:
    """One line per chain where installing a host with a device extra installs another
    split distribution without that extra's device code."""
    problems = []
    for host in wheels:
        extras = device_extras(host)
        missing: dict[tuple[str, ...], tuple[Wheel, list[str]]] = {}
        for extra in sorted(extras):
            for name, reached in install(by_name, host, {extra}).reached.items():
                theirs = device_extras(reached.wheel)
                if name == host.name.name or not theirs:
                    continue
                if extra == DEVICE_ALL:
                    covered = (
                        DEVICE_ALL in reached.extras or theirs - {DEVICE_ALL} <= reached.extras
                    )
                else:
                    covered = bool({extra, DEVICE_ALL} & reached.extras)
                if not covered:
                    missing.setdefault(tuple(reached.chain), (reached.wheel, []))[1].append(extra)
        for chain, (wheel, which) in missing.items():
            problems.append(
                f"{host.filename}: installing {host.name.name}[{','.join(which)}] installs "
                f"{wheel.name.name} {wheel.name.version} ({' -> '.join(chain)}) without its "
                f"device code for {', '.join(e.removeprefix(DEVICE_EXTRA) for e in which)}; "
                f"each extra must require {wheel.name.name}[<the same extra>] (gfxpack split "
                "passes them on when both are split in one run)"
            )
    return problems


def unresolved(
    wheels: Sequence[Wheel], by_name: Mapping[NormalizedName, Sequence[Wheel]]
) -> list[tuple[Wheel, Requirement]]:
    """Every requirement an install of a split distribution (any of its device extras)
    follows that resolves to nothing in the index, once each."""
    found: list[tuple[Wheel, Requirement]] = []
    for host in wheels:
        if extras := device_extras(host):
            for miss in install(by_name, host, extras).misses:
                if miss not in found:
                    found.append(miss)
    return found
