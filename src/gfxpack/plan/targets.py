"""GPU targets gfxpack accepts: the processors LLVM's AMDGPU backend knows.

A target is a processor (``gfx942``), optionally followed by target features
(``gfx942:sramecc+:xnack-``), or a family of processors (``gfx94X-dcgpu``,
TheRock's single-arch build families; ``gfx1151-strict``) whose processor
part, with ``X`` standing for any trailing characters, matches a processor of
the table. Anything else is a typo that would build a release of empty arch
metapackages, so it is refused with the closest processor as a suggestion.

The table is LLVM's list of AMDGCN processors (``llvm/docs/AMDGPUUsage.rst``,
"AMDGPU Processors" and "AMDGPU Generic Processors"; processors removed from
LLVM, such as gfx940 and gfx941, are not in it).

>>> check_target("gfx942:xnack+")
>>> check_target("gfx94")
"target 'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"
>>> check_target("gfx94X-dcgpu")

Targets are listed in processor order, not string order (Decision 16): LLVM
numbers a processor ``gfx<major><minor><stepping>`` (the stepping one hex digit),
so gfx90a is 9.0.10 and comes before gfx942 (9.4.2) and gfx1100 (11.0.0).

>>> sort_targets(["gfx1201", "gfx90a", "gfx1100", "gfx950", "gfx942", "gfx1151"])
['gfx90a', 'gfx942', 'gfx950', 'gfx1100', 'gfx1151', 'gfx1201']
>>> sort_targets(["gfx11-generic", "gfx1151", "gfx1100", "gfx942:xnack+", "gfx942"])
['gfx942', 'gfx942:xnack+', 'gfx1100', 'gfx1151', 'gfx11-generic']
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

PROCESSORS = frozenset(
    {
        # GFX6 - GFX8
        *("gfx600", "gfx601", "gfx602"),
        *("gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705"),
        *("gfx801", "gfx802", "gfx803", "gfx805", "gfx810"),
        # GFX9 (Vega, CDNA)
        *("gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c"),
        *("gfx942", "gfx950"),
        # GFX10 (RDNA 1, 2)
        *("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
        *("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
        # GFX11 (RDNA 3, 3.5)
        *("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
        "gfx1170",
        # GFX12 (RDNA 4) and GFX12.5
        *("gfx1200", "gfx1201", "gfx1250", "gfx1251"),
    }
)
GENERIC_PROCESSORS = frozenset(
    {
        "gfx9-generic",
        "gfx9-4-generic",
        "gfx10-1-generic",
        "gfx10-3-generic",
        "gfx11-generic",
        "gfx12-generic",
        "gfx12-5-generic",
    }
)
FEATURES = ("xnack", "sramecc")

_FAMILY = re.compile(r"^(?P<processor>gfx[0-9a-z]+?)(?P<any>x*)-(?P<tail>[a-z0-9-]+)$")


def check_target(target: str) -> str | None:
    """None if ``target`` is a known processor (with features) or family; else why not."""
    processor, *features = target.split(":")
    lowered = processor.lower()
    if lowered in GENERIC_PROCESSORS or lowered in PROCESSORS:
        if processor != lowered:
            return f"target {target!r}: processor names are lowercase ({lowered})"
    elif not _is_family(lowered):
        return (
            f"target {target!r} is not an AMDGPU processor LLVM knows"
            f"{_suggest(lowered.split('-', 1)[0])}"
        )
    seen: set[str] = set()
    for feature in features:
        name, sign = feature[:-1], feature[-1:]
        if name not in FEATURES or sign not in ("+", "-") or name in seen:
            return (
                f"target {target!r}: {feature!r} is not a target feature "
                "(expected xnack+, xnack-, sramecc+ or sramecc-, each at most once)"
            )
        seen.add(name)
    return None


def _is_family(name: str) -> bool:
    """``gfx94x-dcgpu`` (any processor starting gfx94) or ``gfx1151-strict``."""
    match = _FAMILY.match(name)
    if match is None:
        return False
    stem = match["processor"]
    if match["any"]:
        return any(p.startswith(stem) and len(p) > len(stem) for p in PROCESSORS)
    return stem in PROCESSORS


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(PROCESSORS | GENERIC_PROCESSORS), n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    return " (expected a processor such as gfx942, gfx942:xnack+ or a family such as gfx94X-dcgpu)"


# --- order (Decision 16) ------------------------------------------------------------

# A position no digit reaches: an ``X`` of a family (gfx94X) or the part of a processor
# a generic target leaves open (gfx9-4-generic covers every gfx94N) comes after it.
_ANY = 99
_GENERIC = re.compile(r"^gfx(?P<major>[0-9]+)(?:-(?P<minor>[0-9]+))?-generic$")
_NUMBERED = re.compile(r"^(?P<major>[0-9]+)(?P<minor>[0-9?])(?P<stepping>[0-9a-f?])$")

TargetOrder = tuple[int, int, int, int, int, str, str]


def target_order(target: str) -> TargetOrder:
    """The sort key of a target or arch suffix: processor order (major, minor, stepping
    as LLVM numbers them), a family (gfx94X) after its processors, a generic target
    after its family's processors, features (``:xnack+``) after the bare processor.
    A name that is no target sorts after every target, by its text."""
    processor, _, features = target.lower().partition(":")
    generic = _GENERIC.match(processor)
    if generic is not None:
        minor = generic["minor"]
        numbers = (int(generic["major"]), _ANY if minor is None else int(minor), _ANY, 1)
        return (0, *numbers, features, target)
    name, dash, tail = processor.partition("-")
    body = name.removeprefix("gfx")
    stem = body.rstrip("x")
    numbered = _NUMBERED.match(stem + "?" * (len(body) - len(stem)))
    if not name.startswith("gfx") or numbered is None:
        return (1, 0, 0, 0, 0, target.lower(), target)
    minor, stepping = numbered["minor"], numbered["stepping"]
    return (
        0,
        int(numbered["major"]),
        _ANY if minor == "?" else int(minor),
        _ANY if stepping == "?" else int(stepping, 16),
        0,
        f"{dash}{tail}:{features}" if features else f"{dash}{tail}",
        target,
    )


def sort_targets(targets: Iterable[str]) -> list[str]:
    """``targets`` in processor order (Decision 16): every listing of targets or arch
    suffixes (plan, build, report, verify, pictures, JSON) is put in this order."""
    return sorted(targets, key=target_order)
