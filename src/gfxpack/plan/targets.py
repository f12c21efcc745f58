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
"""

from __future__ import annotations

import difflib
import re

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
