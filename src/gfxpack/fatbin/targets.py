"""AMDGPU target ids: processor plus features, the e_flags that encode them, and
the order in which the kpack runtime tries a device's less specific forms.

A target id is ``<processor>[:<feature><+|->]...`` (``gfx90a``, ``gfx906:xnack-``,
``gfx90a:sramecc+:xnack+``). A code object's ELF header must agree with it:
``e_flags & 0xff`` names the processor (LLVM's ``EF_AMDGPU_MACH_*`` values) and
the xnack/sramecc bits say whether each feature is on, off or "any".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# EF_AMDGPU_MACH_* value of each processor (LLVM's AMDGPUUsage table).
MACH: dict[str, int] = {
    "gfx600": 0x20, "gfx601": 0x21, "gfx700": 0x22, "gfx701": 0x23, "gfx702": 0x24,
    "gfx703": 0x25, "gfx704": 0x26, "gfx801": 0x28, "gfx802": 0x29, "gfx803": 0x2A,
    "gfx810": 0x2B, "gfx900": 0x2C, "gfx902": 0x2D, "gfx904": 0x2E, "gfx906": 0x2F,
    "gfx908": 0x30, "gfx909": 0x31, "gfx90c": 0x32, "gfx1010": 0x33, "gfx1011": 0x34,
    "gfx1012": 0x35, "gfx1030": 0x36, "gfx1031": 0x37, "gfx1032": 0x38, "gfx1033": 0x39,
    "gfx602": 0x3A, "gfx705": 0x3B, "gfx805": 0x3C, "gfx1035": 0x3D, "gfx1034": 0x3E,
    "gfx90a": 0x3F, "gfx940": 0x40, "gfx1100": 0x41, "gfx1013": 0x42, "gfx1150": 0x43,
    "gfx1103": 0x44, "gfx1036": 0x45, "gfx1101": 0x46, "gfx1102": 0x47, "gfx1200": 0x48,
    "gfx1250": 0x49, "gfx1151": 0x4A, "gfx941": 0x4B, "gfx942": 0x4C, "gfx1201": 0x4E,
    "gfx950": 0x4F, "gfx9-generic": 0x51, "gfx10-1-generic": 0x52,
    "gfx10-3-generic": 0x53, "gfx11-generic": 0x54, "gfx1152": 0x55, "gfx1153": 0x58,
    "gfx12-generic": 0x59, "gfx9-4-generic": 0x5F,
}  # fmt: skip

# The generic processor whose code runs on each processor of its family.
GENERIC: dict[str, str] = {
    **dict.fromkeys(("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"), "gfx9-generic"),
    **dict.fromkeys(("gfx940", "gfx941", "gfx942", "gfx950"), "gfx9-4-generic"),
    **dict.fromkeys(("gfx1010", "gfx1011", "gfx1012", "gfx1013"), "gfx10-1-generic"),
    **dict.fromkeys(
        ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
        "gfx10-3-generic",
    ),
    **dict.fromkeys(
        ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
        "gfx11-generic",
    ),
    **dict.fromkeys(("gfx1200", "gfx1201"), "gfx12-generic"),
}

FEATURES = ("sramecc", "xnack")
_TARGET = re.compile(r"^(gfx[0-9a-z]+(?:-[0-9]+)*(?:-generic)?)((?::[a-z]+[+-])*)$")

# e_flags bits (EI_ABIVERSION 1 is code object v3, 2 and later are v4+).
ABI_V3 = 1
XNACK_V3, SRAMECC_V3 = 0x100, 0x200
XNACK_V4_MASK, SRAMECC_V4_MASK = 0x300, 0xC00
_V4_SETTING = {0x000: None, 0x100: None, 0x200: "-", 0x300: "+"}  # unsupported, any, off, on


@dataclass(frozen=True, order=True)
class TargetId:
    """A parsed target id; ``str()`` gives the canonical spelling (features sorted)."""

    processor: str
    features: tuple[tuple[str, str], ...] = ()  # (name, "+" or "-"), sorted by name

    def __str__(self) -> str:
        return self.processor + "".join(f":{name}{sign}" for name, sign in self.features)

    def less_specific(self) -> list[str]:
        """Every form the runtime tries for a device, most specific first: the full id,
        each subset of its features, the bare processor, then its family's generic.

        >>> TargetId.parse("gfx942:sramecc+:xnack-").less_specific()
        ['gfx942:sramecc+:xnack-', 'gfx942:xnack-', 'gfx942:sramecc+', 'gfx942', 'gfx9-4-generic']
        """
        forms: list[str] = []
        count = len(self.features)
        for keep in range(count, -1, -1):
            for mask in range(1 << count):
                if bin(mask).count("1") != count - keep:
                    continue
                kept = tuple(f for i, f in enumerate(self.features) if not mask & (1 << i))
                form = str(TargetId(self.processor, kept))
                if form not in forms:
                    forms.append(form)
        generic = GENERIC.get(self.processor)
        if generic:
            forms.append(generic)
        return forms

    @classmethod
    def parse(cls, text: str) -> TargetId:
        """Parse ``gfx90a:xnack-``; raises ValueError naming what was expected.

        >>> str(TargetId.parse("gfx90a:xnack+:sramecc-"))
        'gfx90a:sramecc-:xnack+'
        """
        match = _TARGET.match(text)
        if not match:
            raise ValueError(
                f"target id {text!r}: expected a processor with optional features, "
                "such as gfx90a or gfx90a:xnack-"
            )
        features: dict[str, str] = {}
        for part in match.group(2).split(":")[1:]:
            name, sign = part[:-1], part[-1]
            if name not in FEATURES or name in features:
                raise ValueError(
                    f"target id {text!r}: feature {name!r} unknown or repeated "
                    f"(expected {' and '.join(FEATURES)})"
                )
            features[name] = sign
        return cls(match.group(1), tuple(sorted(features.items())))


def flags_disagreement(target: TargetId, e_flags: int, abi_version: int) -> str | None:
    """Why a code object's e_flags do not encode ``target``, or None when they agree."""
    mach = e_flags & 0xFF
    expected = MACH.get(target.processor)
    names = {value: name for name, value in MACH.items()}
    if expected is None:
        return f"unknown processor {target.processor!r}"
    if mach != expected:
        return f"e_flags say {names.get(mach, hex(mach))}, the bundle entry says {target.processor}"
    wanted = dict(target.features)
    if abi_version <= ABI_V3:
        actual = {
            "xnack": "+" if e_flags & XNACK_V3 else "-",
            "sramecc": "+" if e_flags & SRAMECC_V3 else "-",
        }
        for name in FEATURES:
            if wanted.get(name, "-") != actual[name]:
                return f"e_flags say {name}{actual[name]}, the target id {target} does not"
        return None
    found = {
        "xnack": _V4_SETTING[e_flags & XNACK_V4_MASK],
        "sramecc": _V4_SETTING[(e_flags & SRAMECC_V4_MASK) >> 2],
    }
    for name in FEATURES:
        if wanted.get(name) != found[name]:
            said = f"{name}{found[name]}" if found[name] else f"no {name} setting"
            return f"e_flags say {said}, the target id {target} does not"
    return None
